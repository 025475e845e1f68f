"""benchmarks.lib.runner: what a run logged (curves, training time over resumed starts), the
record's portable paths, its updates side by side, its damage named and its writes whole, a
folder that cannot resume moved aside whole, a failing tool named with its log's tail."""
import json
import sys
import threading
from pathlib import Path

import pytest

from benchmarks.lib import runner


def test_curves_average_the_epochs_batches(tmp_path):
    scalars = tmp_path / '20260101_000000' / 'vis_data' / 'scalars.json'
    scalars.parent.mkdir(parents=True)
    lines = [dict(epoch=1, iter=1, top1_acc=0.25, loss=3.0),
             dict(epoch=1, iter=2, top1_acc=0.75, loss=2.0),
             dict(epoch=2, iter=3, top1_acc=1.0, loss=1.0),
             {'acc/top1': 0.4, 'step': 2}]
    scalars.write_text('\n'.join(json.dumps(line) for line in lines) + '\n')
    assert runner.curves(tmp_path) == {
        '1': dict(train_top1=0.5, train_loss=2.5),
        '2': dict(train_top1=1.0, train_loss=1.0, test_top1=0.4)}


def test_a_blended_run_keeps_its_loss_and_validation_without_a_training_top1(tmp_path):
    # mixup / cutmix give soft labels, for which mmaction2's heads log no top1_acc
    scalars = tmp_path / '20260101_000000' / 'vis_data' / 'scalars.json'
    scalars.parent.mkdir(parents=True)
    lines = [dict(epoch=1, iter=1, loss=3.0), dict(epoch=1, iter=2, loss=2.0),
             dict(epoch=2, iter=3, loss=1.5), {'acc/top1': 0.4, 'step': 2}]
    scalars.write_text('\n'.join(json.dumps(line) for line in lines) + '\n')
    assert runner.curves(tmp_path) == {
        '1': dict(train_loss=2.5),
        '2': dict(train_loss=1.5, test_top1=0.4)}


def _log(folder, lines):
    folder.mkdir(parents=True)
    (folder / f'{folder.name}.log').write_text(
        ''.join(f'2026/01/01 {stamp} - mmengine - INFO - {text}\n' for stamp, text in lines))


def test_a_resumed_run_counts_the_epochs_it_trained_again_once(tmp_path):
    # stopped 10 min after its epoch-5 checkpoint; the resumed start redoes epochs 6..
    _log(tmp_path / '20260101_100000', [('10:00:00', 'start'),
                                        ('10:30:00', 'Saving checkpoint at 5 epochs'),
                                        ('10:40:00', 'Epoch(train) [6][3/27]')])
    _log(tmp_path / '20260101_110000', [('11:00:00', 'start'),
                                        ('11:00:05', 'resumed epoch: 5, iter: 135'),
                                        ('11:20:00', 'Saving checkpoint at 10 epochs')])
    assert runner.training_seconds(tmp_path) == 30 * 60 + 20 * 60
    # the later start's epochs replace the earlier one's, validations of both are kept
    for start, entries in (('20260101_100000', [dict(epoch=5, top1_acc=0.5, loss=2.0),
                                                dict(epoch=6, top1_acc=0.1, loss=9.0),
                                                {'acc/top1': 0.3, 'step': 5}]),
                           ('20260101_110000', [dict(epoch=6, top1_acc=0.75, loss=1.0),
                                                {'acc/top1': 0.6, 'step': 10}])):
        scalars = tmp_path / start / 'vis_data' / 'scalars.json'
        scalars.parent.mkdir()
        scalars.write_text(''.join(json.dumps(entry) + '\n' for entry in entries))
    assert runner.curves(tmp_path) == {
        '5': dict(train_top1=0.5, train_loss=2.0, test_top1=0.3),
        '6': dict(train_top1=0.75, train_loss=1.0)}


def test_a_run_that_cannot_resume_is_moved_aside_whole(tmp_path):
    folder = tmp_path / 'seed0'
    assert runner.set_aside(folder) is None  # nothing there: nothing to do
    assert list(tmp_path.iterdir()) == []
    folder.mkdir()
    assert runner.set_aside(folder) is None  # an empty folder holds no run to keep
    assert list(tmp_path.iterdir()) == []
    (folder / '20260101_000000').mkdir(parents=True)
    (folder / 'result.json').write_text('{"top1": 0.5}')
    target = runner.set_aside(folder)
    assert not folder.exists()
    (moved, ) = tmp_path.iterdir()
    assert moved == target
    assert moved.name.startswith('seed0.replaced-')
    assert (moved / 'result.json').read_text() == '{"top1": 0.5}'
    assert (moved / '20260101_000000').is_dir()


def test_committed_results_name_paths_relative_to_the_repository():
    inside = str(runner.REPO / 'work_dirs/bench_utd_mhad/x/seed0/config.py')
    runs = {'x': [dict(top1=0.5, config=inside, checkpoint='/elsewhere/epoch_60.pth')]}
    (run, ) = runner.portable(runs)['x']
    assert run == dict(top1=0.5, config='work_dirs/bench_utd_mhad/x/seed0/config.py',
                       checkpoint='/elsewhere/epoch_60.pth')
    assert runs['x'][0]['config'] == inside  # the runs themselves are left as they are




def test_commands_updating_one_record_side_by_side_each_add_their_runs(tmp_path):
    """Two validation folds finishing together: the second reads the record only once the
    first has written it, so neither writes back a copy without the other's runs."""
    path = tmp_path / 'record.json'
    held, order = threading.Event(), []

    def second():
        held.wait()
        with runner.updating(path) as record:
            order.append(('second read', sorted(record.data['results'])))
            record.write(dict(record.data['results'], b=[dict(top1=0.5)]))

    thread = threading.Thread(target=second)
    thread.start()
    with runner.updating(path) as record:
        assert record.data == {}
        held.set()
        thread.join(timeout=0.5)
        assert thread.is_alive()  # waiting for the first to write
        record.write(dict(a=[dict(top1=0.25)]))
        order.append(('first wrote', ))
    thread.join()
    assert order == [('first wrote', ), ('second read', ['a'])]
    assert json.loads(path.read_text())['results'] == dict(a=[dict(top1=0.25)],
                                                           b=[dict(top1=0.5)])


def test_a_failing_tool_reports_its_log_tail_and_path(tmp_path):
    log = tmp_path / 'row' / 'train.log'
    command = [sys.executable, '-c', 'import sys; print("\\n".join(map(str, range(100)))); '
               'sys.exit(3)']
    try:
        runner.run_tool(command, log, env={})
    except runner.ToolFailed as error:
        message = str(error)
    else:
        raise AssertionError('run_tool() did not raise')
    assert message.startswith(f'-c failed (exit 3); last lines of {log}:')
    assert message.splitlines()[-1] == '99' and '\n69\n' not in message
    assert log.read_text().startswith(f'+ {sys.executable} -c import sys;')


def test_a_resumed_run_appends_to_its_log(tmp_path):
    log = tmp_path / 'train.log'
    log.write_text('first start\n')
    runner.run_tool([sys.executable, '-c', 'print("second")'], log, append=True)
    assert log.read_text().splitlines()[0] == 'first start'
    assert log.read_text().splitlines()[-1] == 'second'


def test_configs_train_the_same_run_when_only_the_test_differs(tmp_path):
    base = "model = dict(type='A')\ntrain_dataloader = dict(batch_size=16)\n"
    paths = {}
    for name, extra in [('base', ''), ('test', "test_dataloader = dict(num_clips=3)\n"
                                               "test_evaluator = dict(type='Acc')\n"),
                        ('train', "train_dataloader = dict(batch_size=8)\n"),
                        ('val', "val_cfg = dict(type='ValLoop')\n")]:
        paths[name] = tmp_path / f'{name}.py'
        paths[name].write_text(base + extra)
    assert runner.same_training(paths['base'], paths['test'])
    assert not runner.same_config(paths['base'], paths['test'])
    assert not runner.same_training(paths['base'], paths['train'])
    assert not runner.same_training(paths['base'], paths['val'])  # validation is in the run


def test_a_record_not_there_is_empty_unless_the_tables_are_written_from_it(tmp_path):
    missing = tmp_path / 'record.json'
    assert runner.Record(missing).data == {}  # a command that trains writes it
    with pytest.raises(ValueError) as raised:
        runner.Record(missing, must_exist=True)
    assert str(raised.value) == (f'{missing}: no such record; the tables are written from it '
                                 'alone, so name the record a command that trained wrote')


def test_a_damaged_record_is_named_not_read(tmp_path):
    """A record cut short, empty or no object raised JSONDecodeError / AttributeError, which
    named no file."""
    path = tmp_path / 'record.json'
    for text, problem in (('{"results": {', 'not JSON (Expecting property name enclosed in '
                                            'double quotes: line 1 column 14 (char 13))'),
                          ('', 'empty'), (b'\xff\xfe', None)):
        if isinstance(text, bytes):
            path.write_bytes(text)
            problem = ("not JSON ('utf-8' codec can't decode byte 0xff in position 0: invalid "
                       'start byte)')
        else:
            path.write_text(text)
        with pytest.raises(ValueError) as raised:
            runner.Record(path)
        assert str(raised.value) == (f'{path}: {problem}, so no record of runs; a write cut '
                                     'short leaves such a file: restore it (a committed record '
                                     'from git) or move it aside')
    for text in ('[]', '"results"', '{"results": [1]}'):
        path.write_text(text)
        with pytest.raises(ValueError, match=f'^{path}: not a record of runs: a record is a '
                           'JSON object whose "results" are an object of rows'):
            runner.Record(path)


def test_a_write_cut_short_leaves_the_previous_record(tmp_path, monkeypatch):
    path = tmp_path / 'record.json'
    runner.Record(path).write(dict(a=[dict(top1=0.25)]))
    before = path.read_text()
    write_text = Path.write_text

    def full_disk(self, text):
        write_text(self, text[:10])
        raise OSError(28, 'No space left on device')
    monkeypatch.setattr(Path, 'write_text', full_disk)
    with pytest.raises(OSError):
        runner.Record(path).write(dict(a=[dict(top1=0.5)]))
    monkeypatch.undo()
    assert path.read_text() == before
    assert [file.name for file in tmp_path.iterdir()] == ['record.json']
