"""A row tested from another's runs (``Row.tested_from``, e.g. more test clips of the same
model): each seed tests that row's checkpoint with its own config, trained once, first, even
when both are asked for; it is never trained again, but where the record has the run and not its
weights; a source that fails leaves it untested and named; a row whose edits change the
training is refused."""
import json
from pathlib import Path

import pytest
from mmengine.config import Config

from benchmarks import bench_utd_mhad_imagenet as bench
from benchmarks.lib import runner
from benchmarks.lib.edits import epochs
from hyperframes_mm.utils import slug

ROWS = {row.name: row for row in bench.ROWS}
SHIFT, MORE = ROWS[bench.SHIFT_ROW], ROWS[bench.SHIFT_MORE_CLIPS_ROW]


@pytest.fixture
def tools(tmp_path, monkeypatch):
    """The tools faked: training writes a checkpoint, a test scores num_clips / 10; every call
    is listed as (tool, the row folder of the config, of the checkpoint, clips, list)."""
    from hyperframes_mm.datasets import frame_cache
    monkeypatch.setattr(frame_cache, 'read_video_list', lambda path: [])
    monkeypatch.setattr(frame_cache, 'build_frame_cache', lambda *args, **kwargs: 'no videos')
    monkeypatch.setattr(bench.BENCH, 'missing_weights', lambda jobs, args: [])
    calls = []

    def train(config, work_dir, log, resume=False, **kwargs):
        calls.append(('train', Path(work_dir).parent.name))
        if 'fail' in calls:
            log.write_text('out of memory\n')
            raise runner.ToolFailed('tools/train.py', 1, log)
        (Path(work_dir) / 'epoch_30.pth').write_bytes(b'weights')
        return str(Path(work_dir) / 'epoch_30.pth')

    def test(config, checkpoint, work_dir, log, options=(), dump=None, **kwargs):
        clips = Config.fromfile(str(config)).test_dataloader.dataset.pipeline[1]['num_clips']
        calls.append(('test', Path(config).parent.parent.name,
                      Path(checkpoint).parent.parent.name, clips,
                      'training list' if options else 'test list'))
        return {'acc/top1': clips / 10, 'acc/top5': 1.0, 'acc/mean1': clips / 10}, None

    monkeypatch.setattr(runner, 'train', train)
    monkeypatch.setattr(runner, 'test', test)
    monkeypatch.setattr(runner, 'training_seconds', lambda work_dir: 600.0)
    monkeypatch.setattr(runner, 'curves', lambda work_dir: {'30': dict(train_top1=0.9)})
    data = tmp_path / 'data'
    data.mkdir()
    (data / 'convert_meta.json').write_text('{}')
    args = bench.parse_args(['--data', str(data), '--work-dir', str(tmp_path / 'work'),
                             '--record', str(tmp_path / 'record.json'), '--jobs', '2'])
    bench.BENCH.run_keys.clear()
    yield args, calls
    bench.BENCH.run_keys.clear()


def test_the_source_trains_once_first_and_its_checkpoint_is_tested_with_more_views(tools):
    args, calls = tools
    shift, more = slug(SHIFT.name), slug(MORE.name)
    bench.BENCH.train([(MORE, 0), (SHIFT, 0)], args)
    assert calls == [('train', shift),
                     ('test', shift, shift, 2, 'test list'),
                     ('test', shift, shift, 2, 'training list'),
                     ('test', more, shift, 3, 'test list'),
                     ('test', more, shift, 3, 'training list')]
    result = bench.BENCH.finished(args, MORE, 0)
    source = bench.BENCH.finished(args, SHIFT, 0)
    assert (result['top1'], result['train_top1'], source['top1']) == (0.3, 0.3, 0.2)
    assert (result['train_min'], result['curves'], result['tested_from']) == (
        10.0, {'30': dict(train_top1=0.9)}, SHIFT.name)
    assert result['checkpoint'] == source['checkpoint']
    assert result['key'] == bench.BENCH.run_key(MORE, 0, args) != source['key']
    bench.BENCH.train([(MORE, 0), (SHIFT, 0)], args)  # both finished: no tool runs again
    assert len(calls) == 5


def test_asked_for_alone_it_trains_its_source_in_the_sources_folder(tools):
    args, calls = tools
    bench.BENCH.train([(MORE, 1)], args)
    assert [call[:3] for call in calls] == [('train', slug(SHIFT.name))] + [
        ('test', row, slug(SHIFT.name)) for row in (slug(SHIFT.name), ) * 2 +
        (slug(MORE.name), ) * 2]
    assert bench.BENCH.finished(args, SHIFT, 1)['top1'] == 0.2


def test_a_recorded_source_without_its_weights_is_trained_again_for_the_row(tools):
    args, calls = tools
    record = dict(run=dict(row=SHIFT.name, seed=0, key=bench.BENCH.run_key(SHIFT, 0, args),
                           top1=0.2, checkpoint='work_dirs/elsewhere/epoch_30.pth',
                           train_min=9.0, curves={}))
    Path(args.record).write_text(json.dumps({'results': {SHIFT.name: [record['run']]}}))
    bench.BENCH.train([(MORE, 0)], args)
    more = slug(MORE.name)
    assert calls == [('train', more), ('test', more, more, 3, 'test list'),
                     ('test', more, more, 3, 'training list')]
    assert 'tested_from' not in bench.BENCH.finished(args, MORE, 0)


def test_a_failed_source_leaves_the_row_untested_and_named(tools):
    args, calls = tools
    calls.append('fail')
    with pytest.raises(SystemExit) as exit_info:
        bench.BENCH.train([(MORE, 0)], args)
    message = str(exit_info.value)
    assert message.startswith(f'2 runs failed:\n{SHIFT.name} seed 0: tools/train.py failed')
    assert message.endswith(f'\n{MORE.name} seed 0: not tested, {SHIFT.name} seed 0 failed')
    assert [call for call in calls if call[0] == 'test'] == []


def test_a_row_that_trains_otherwise_is_not_tested_from_the_source(tools):
    args, calls = tools
    wrong = MORE._replace(name='more clips, 10 epochs', edits=MORE.edits + (epochs(10), ))
    with pytest.raises(ValueError, match='more clips, 10 epochs: tested from two T=5 '
                       'hyperframes, shifted\'s runs, but its config trains otherwise'):
        bench.BENCH.train_run(wrong, 0, args)
    assert [call[0] for call in calls] == ['train', 'test', 'test']  # the source only


def test_a_fold_or_a_smoke_run_edits_the_source_as_the_row():
    (_, _), fold = bench.validation_fold(5)
    folded = MORE.edited(before=(fold, ), after=(epochs(1), ))
    assert folded.edits[0] is fold and folded.tested_from.edits[0] is fold
    assert len(folded.edits) == len(MORE.edits) + 2
    assert len(folded.tested_from.edits) == len(SHIFT.edits) + 2
    assert folded.tested_from.edits[-1] is folded.edits[-1]
    assert SHIFT.edited(before=(fold, )).tested_from is None
