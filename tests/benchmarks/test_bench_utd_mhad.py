"""benchmarks/bench_utd_mhad.py: each ablation row's config differs from the recipe by its
listed change only; runs count from the record by key; tables and targets are computed from
the numbers given; the committed record alone rewrites the tables."""
import hashlib
import json

import pytest
from mmengine.config import Config

from benchmarks import bench_utd_mhad as bench
from benchmarks.lib import edits, runner
from benchmarks.lib import rows as lib
from hyperframes_mm.utils import slug
from .config_diff import differing_paths, flat

ROWS = {row.name: row for row in bench.ROWS}


@pytest.fixture(scope='module')
def written(tmp_path_factory):
    """Every row's seed-0 config, written for a fake data root (nothing is read)."""
    root = tmp_path_factory.mktemp('bench_utd_mhad')
    args = bench.parse_args(['--data', str(root / 'data'), '--work-dir', str(root / 'work'),
                             '--record', str(root / 'record.json')])
    configs = {}
    for row in bench.ROWS:
        folder = root / slug(row.name)
        folder.mkdir()
        configs[row.name] = Config.fromfile(str(bench.run_config(row, 0, args, folder)))
    return root / 'data', args, configs


def test_every_run_logs_each_iteration_and_reads_the_given_data(written):
    data, _, configs = written
    for name, cfg in configs.items():
        assert cfg.default_hooks.logger.interval == 1, name
        assert cfg.log_processor.window_size == 1, name
        assert cfg.randomness == dict(seed=0), name
        for loader in ('train_dataloader', 'val_dataloader', 'test_dataloader'):
            assert cfg[loader].dataset.data_prefix == dict(video=str(data.resolve())), name
            assert cfg[loader].dataset.ann_file.startswith(str(data.resolve())), name


@pytest.mark.parametrize('name, changed', [
    ('plain stacked frames', {'model.backbone.input_encoding'}),
    ('diff, gain 1', {'model.backbone.diff_gain'}),
    ('motion products on', {'model.backbone.motion_products'}),
    ('per-frame augmentation', {'train_dataloader.dataset.pipeline[3].independent'}),
])
def test_ablation_rows_change_only_what_they_say(written, name, changed):
    _, _, configs = written
    recipe, row = flat(configs[bench.RECIPE_ROW]), flat(configs[name])
    differ = {path for path in differing_paths(recipe, row)
              if not path.startswith(('train_pipeline', 'val_pipeline', 'test_pipeline'))}
    assert differ == changed


def test_fast_slow_rows_change_the_fusion_or_the_fast_stream_only(written):
    _, _, configs = written
    fast_slow = flat(configs[bench.FASTSLOW_ROW])
    # early fusion: both streams stacked into one T=10 hyperframe by the pipeline
    assert (fast_slow['model']['type'], fast_slow['model']['backbone']['num_frames'],
            fast_slow['model']['cls_head']['in_channels']) == ('Recognizer2D', 10, 512)
    loaders = ('train_dataloader', 'val_dataloader', 'test_dataloader')
    for loader in loaders:
        assert fast_slow[loader]['dataset']['pipeline'][-2:] == [
            {'type': 'HyperframeStack', 'fuse_streams': True}, {'type': 'PackActionInputs'}]
    passes = flat(configs['fast/slow, two backbone passes'])
    assert (passes['model']['type'], passes['model']['fusion'],
            passes['model']['backbone']['num_frames'],
            passes['model']['cls_head']['in_channels']) == ('FastSlowRecognizer', 'concat', 5,
                                                            1024)
    for loader in loaders:
        assert passes[loader]['dataset']['pipeline'][-2:] == [
            {'type': 'HyperframeStack'},
            {'type': 'PackActionInputs', 'collect_keys': ['imgs_fast', 'imgs_slow']}]
    last = len(fast_slow['train_dataloader']['dataset']['pipeline']) - 1
    assert set(differing_paths(fast_slow, passes)) == {
        'model.type', 'model.streams', 'model.share_backbone', 'model.fusion',
        'model.backbone.num_frames', 'model.cls_head.in_channels'} | {
            f'{split}{part}' for split in loaders + ('train_pipeline', 'val_pipeline',
                                                     'test_pipeline')
            for part in ([f'.dataset.pipeline[{last - 1}].fuse_streams',
                          f'.dataset.pipeline[{last}].collect_keys'] if split in loaders else
                         [f'[{last - 1}].fuse_streams', f'[{last}].collect_keys'])}
    assert 'stream_downsample' not in fast_slow['model']
    half = flat(configs['fast/slow, fast stream at half size'])
    assert half['model']['stream_downsample'] == {'fast': 2}
    assert set(differing_paths(passes, half)) == {'model.stream_downsample'}
    picks = flat(configs['fast/slow, fast picks 2/30 s'])
    differ = {path for path in differing_paths(passes, picks)
              if not path.startswith(('train_pipeline', 'val_pipeline', 'test_pipeline'))}
    assert differ == {f'{loader}.dataset.pipeline[1].streams.fast.interval'
                      for loader in ('train_dataloader', 'val_dataloader', 'test_dataloader')}
    assert configs['fast/slow, fast picks 2/30 s'].train_dataloader.dataset.pipeline[
        1]['streams']['fast']['interval'] == 2 / 30


def test_frames_and_picks_rows_reach_every_pipeline_and_the_backbone(written):
    _, _, configs = written
    t8 = configs[bench.RECIPE_T8_ROW]
    assert t8.model.backbone.num_frames == 8
    # what mmaction2's inference and the cost tools read is what the run reads
    for split in ('train', 'val', 'test'):
        assert t8[f'{split}_pipeline'] == t8[f'{split}_dataloader'].dataset.pipeline
    for loader in ('train_dataloader', 'val_dataloader', 'test_dataloader'):
        sampler = edits.find(t8[loader].dataset.pipeline, 'HyperframeSampleFrames')
        assert sampler['num_frames'] == 8
        picks = edits.find(configs['picks 8/30 s apart'][loader].dataset.pipeline,
                           'HyperframeSampleFrames')
        assert (picks['mode'], picks['interval'], picks['time_based']) == \
            ('interval', 8 / 30, True)
    flips = edits.find(configs['flips + label map'].train_dataloader.dataset.pipeline,
                       'ConsistentClipAugment')
    assert flips['flip_ratio'] == 0.5 and flips['flip_label_map'] == {0: 1, 1: 0, 8: 9, 9: 8}
    sgd = configs['SGD schedule of the baselines']
    assert sgd.optim_wrapper.optimizer.type == 'SGD'
    assert sgd.optim_wrapper == Config.fromfile(str(bench.TSM)).optim_wrapper


def test_the_t8_config_is_the_recipe_with_eight_picks(written, tmp_path):
    """The zoo's T=8 config differs from the recipe in T alone: the sampler of every pipeline
    and the backbone (so its runs are the ablation's 'T=8' edit of the recipe)."""
    _, args, configs = written
    edited = bench.Row('recipe, 8 picks', bench.RECIPE, '', edits=(edits.frames(8), ))
    expected = Config.fromfile(str(bench.run_config(edited, 0, args, tmp_path))).to_dict()
    t8 = configs[bench.RECIPE_T8_ROW].to_dict()
    assert [key for key in runner.RUN_KEYS
            if runner.run_identity(t8, key) != runner.run_identity(expected, key)] == []
    recipe = configs[bench.RECIPE_ROW].to_dict()
    assert [key for key in runner.RUN_KEYS
            if runner.run_identity(t8, key) != runner.run_identity(recipe, key)] == [
        'model', 'train_dataloader', 'val_dataloader', 'test_dataloader']


def test_finished_runs_are_reused_only_for_the_same_config(written, tmp_path):
    data, args, _ = written
    data.mkdir(exist_ok=True)
    row = ROWS['motion products on']
    folder = bench.run_dir(args, row, 0)
    folder.mkdir(parents=True)
    config = bench.run_config(row, 0, args, folder)
    result = dict(top1=0.5)
    (folder / 'result.json').write_text(json.dumps(result))
    # tools/train.py dumps the config it ran over config.py, with the keys it sets from its
    # command line; a top-level variable the runner never reads does not make another run
    config.write_text(config.read_text() + f"launcher = 'none'\nwork_dir = '{folder}'\n"
                      "resume = True\ntrain_pipeline = []\n")
    assert bench.finished(args, row, 0) == result
    # ... but anything the runner reads does
    ran = config.read_text()
    config.write_text(ran + "train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=1)\n")
    assert bench.finished(args, row, 0) is None
    # how a missing frame cache entry would have been handled reads no other frame: the
    # benchmark builds every entry first (runs from before 'decode' and the hook still count)
    config.write_text(ran.replace("on_stale='decode'", "on_stale='rebuild'") +
                      "custom_hooks = []\n")
    assert "on_stale='rebuild'" in config.read_text()
    assert bench.finished(args, row, 0) == result
    config.write_text(ran.replace("type='FrameCacheInit'", "type='DecordInit'"))
    assert bench.finished(args, row, 0) is None
    # a list read unchecked loads the same samples (runs from before CheckedVideoDataset count)
    assert "type='CheckedVideoDataset'" in ran
    config.write_text(ran.replace("type='CheckedVideoDataset'", "type='VideoDataset'"))
    assert bench.finished(args, row, 0) == result
    config.write_text(ran.replace("type='CheckedVideoDataset'", "type='RawframeDataset'"))
    assert bench.finished(args, row, 0) is None
    # ... and so does one whose single labels were checked against a class count
    listed = 'pipeline=['
    assert ran.count(listed) == 3  # the three dataloaders' datasets
    config.write_text(ran.replace(listed, 'num_classes=27, ' + listed))
    assert bench.finished(args, row, 0) == result
    config.write_text(ran.replace(listed, 'num_classes=27, multi_class=True, ' + listed))
    assert bench.finished(args, row, 0) is None
    config.write_text(ran)
    # another row's config in that folder (here: raw frames, no motion products) is not this run
    other = bench.run_config(ROWS['plain stacked frames'], 0, args, tmp_path)
    config.write_text(other.read_text())
    assert bench.finished(args, row, 0) is None
    config.unlink()
    assert bench.finished(args, row, 0) is None


def test_a_run_counts_from_the_record_while_its_row_makes_the_same_run(written, tmp_path):
    """A run trained on another machine counts from the committed record by its key, for any
    row that makes the same run, and stops counting when the row (or the data) changes."""
    data, args, _ = written
    data.mkdir(exist_ok=True)
    args = bench.parse_args(['--data', str(data), '--work-dir', str(tmp_path / 'work'),
                             '--record', str(tmp_path / 'record.json')])
    row = ROWS['motion products on']
    assert bench.finished(args, row, 1) is None  # no record yet
    run = dict(row=row.name, seed=1, key=bench.run_key(row, 1, args), top1=0.5)
    record = {'results': {row.name: [run, dict(run, seed=7, key='0' * 64)]}}
    (tmp_path / 'record.json').write_text(json.dumps(record))
    assert bench.finished(args, row, 1) == run
    assert bench.finished(args, row, 0) is None  # another seed is another run
    assert bench.seeds_of(row, args) == [0, 1, 7]
    # the same edits under another name make the same run, and take it under their name
    renamed = row._replace(name='motion products')
    assert bench.finished(args, renamed, 1) == dict(run, row='motion products')
    # a row that trains something else does not
    other = row._replace(edits=row.edits + (edits.backbone(diff_gain=2.0), ))
    assert bench.finished(args, other, 1) is None
    # nor does the same row on a dataset converted with another mapping
    (data / 'convert_meta.json').write_text(json.dumps(dict(version=2, mapping=dict(size=64))))
    bench._RUN_KEYS.clear()
    try:
        assert bench.finished(args, row, 1) is None
    finally:
        (data / 'convert_meta.json').unlink()
        bench._RUN_KEYS.clear()


def test_only_a_stopped_run_of_the_same_config_resumes(written, tmp_path):
    _, args, _ = written
    row = ROWS['motion products on']
    folder = tmp_path / 'run'
    folder.mkdir()
    bench.run_config(row, 0, args, folder)
    (folder / lib.LIST_DIGESTS).write_text(json.dumps(bench.BENCH.list_digests(row, 0, args)))
    assert not bench.resumable(folder, row, 0, args)  # no checkpoint saved
    checkpoint = folder / 'epoch_5.pth'
    (folder / 'last_checkpoint').write_text(str(checkpoint))
    assert not bench.resumable(folder, row, 0, args)  # pointer to a missing file
    checkpoint.write_bytes(b'')
    assert bench.resumable(folder, row, 0, args)
    assert not bench.resumable(folder, row, 1, args)  # another seed's config
    assert not bench.resumable(folder, ROWS['plain stacked frames'], 0, args)


def test_stopped_runs_are_named_with_their_epoch(written, tmp_path):
    _, args, _ = written
    args = bench.parse_args(['--data', args.data, '--work-dir', str(tmp_path),
                             '--record', args.record])
    row = ROWS['motion products on']  # its own seeds: (0, )
    folder = bench.run_dir(args, row, 0)
    folder.mkdir(parents=True)
    bench.run_config(row, 0, args, folder)
    (folder / lib.LIST_DIGESTS).write_text(json.dumps(bench.BENCH.list_digests(row, 0, args)))
    assert bench.stopped_runs([row], args) == []
    (folder / 'epoch_35.pth').write_bytes(b'')
    (folder / 'last_checkpoint').write_text(str(folder / 'epoch_35.pth'))
    assert bench.stopped_runs([row], args) == ['motion products on seed 0 at epoch 35 of 60']


def test_a_data_set_made_again_in_its_folder_is_trained_again(tmp_path):
    """A conversion's run key holds its version and mapping, not which sequences it converted:
    converting other subjects into the same folder resumed the stopped run with no epoch left,
    and reported the record's runs of the first set as runs on the second."""
    data = tmp_path / 'data'
    data.mkdir()
    (data / 'convert_meta.json').write_text(json.dumps(dict(version=2, mapping={})))
    for name in bench.BENCH.train_list, bench.BENCH.test_list:
        (data / name).write_text('videos/a1_s1_t1_depth.mp4 0\n')
    record = tmp_path / 'record.json'
    args = bench.parse_args(['--data', str(data), '--work-dir', str(tmp_path / 'work'),
                             '--record', str(record)])
    row = ROWS['motion products on']
    config = bench.BENCH.fresh_run_dir(row, 0, args)
    assert json.loads((config.parent / lib.LIST_DIGESTS).read_text()) == {
        name: hashlib.sha256(b'videos/a1_s1_t1_depth.mp4 0\n').hexdigest()
        for name in (bench.BENCH.train_list, bench.BENCH.test_list)}
    (config.parent / 'epoch_30.pth').write_bytes(b'')
    (config.parent / 'last_checkpoint').write_text(str(config.parent / 'epoch_30.pth'))
    run = dict(key=bench.run_key(row, 0, args), top1=1.0,
               list_digests=bench.BENCH.list_digests(row, 0, args))
    record.write_text(json.dumps(dict(results={row.name: [run]})))
    assert bench.resumable(config.parent, row, 0, args)
    assert bench.finished(args, row, 0) == dict(run, row=row.name)
    # the same folder, another set: two subjects' sequences in the training list
    (data / bench.BENCH.train_list).write_text('videos/a1_s1_t1_depth.mp4 0\n'
                                              'videos/a1_s3_t1_depth.mp4 0\n')
    bench.BENCH.digests.clear()  # a new command reads the lists anew
    assert not bench.resumable(config.parent, row, 0, args)
    assert bench.finished(args, row, 0) is None
    # a run recorded before digests were kept is taken as it is
    record.write_text(json.dumps(dict(results={row.name: [dict(run, list_digests=None)]})))
    assert bench.finished(args, row, 0)['top1'] == 1.0


def test_the_tables_take_every_seed_a_row_has_a_run_folder_of(tmp_path):
    args = bench.parse_args(['--data', str(tmp_path / 'data'), '--work-dir', str(tmp_path),
                             '--record', str(tmp_path / 'none.json')])
    row = ROWS['motion products on']
    assert bench.seeds_of(row, args) == [0]
    for name in ('seed2', 'seed1', 'seed1.replaced-20260101_000000', 'seedling'):
        (tmp_path / slug(row.name) / name).mkdir(parents=True)
    assert bench.seeds_of(row, args) == [0, 1, 2]


def _runs(*top1):
    curves = {'5': dict(train_top1=0.5, train_loss=1.0, test_top1=0.4)}
    return [dict(seed=seed, top1=value, top5=0.9, mean_class=value - 0.01, train_top1=0.99,
                 train_min=10.0, curves=curves) for seed, value in enumerate(top1)]


def test_tables_and_targets_from_given_numbers():
    results = {bench.TSM_ROW: _runs(0.60, 0.62, 0.64), bench.RECIPE_ROW: _runs(0.70, 0.72, 0.74),
               bench.FASTSLOW_ROW: _runs(0.66, 0.66, 0.66), bench.SINGLE_ROW: _runs(0.3)}
    costs = {bench.TSM_ROW: dict(gflops=1.7, params_m=11.2, latency_ms=100.0),
             bench.RECIPE_ROW: dict(gflops=0.4, params_m=11.2, latency_ms=30.0),
             bench.FASTSLOW_ROW: dict(gflops=0.8, params_m=11.2, latency_ms=55.0),
             bench.SINGLE_ROW: dict(gflops=0.3, params_m=11.2, latency_ms=25.0)}
    lines = bench.targets(results, costs)
    assert lines[1] == ('- recipe 0.720 vs TSM-5 0.620 at 0.300x its latency (>= TSM-5 at '
                        '<= 1/3 = 0.333x): **met**')
    assert lines[2] == ('- fast/slow 0.660, +4.0 points vs TSM-5, at 0.550x its latency '
                        '(>= +3 points at <= 0.5x): **missed**')
    # 0.334x shows as 0.33x in the tables: the verdict reads the ratio, not its rounding
    slower = dict(costs, **{bench.RECIPE_ROW: dict(costs[bench.RECIPE_ROW], latency_ms=33.4)})
    assert bench.targets(results, slower)[1].endswith('at 0.334x its latency (>= TSM-5 at '
                                                      '<= 1/3 = 0.333x): **missed**')
    rows = [row for row in bench.ZOO_ROWS if row.name in results]
    table = bench.headline_table(rows, results, costs)
    recipe = next(line for line in table if line.startswith(f'| [{bench.RECIPE_ROW}]'))
    assert '**0.720** ± 0.020 (0.700 / 0.720 / 0.740)' in recipe and '| 0.30x |' in recipe
    single = next(line for line in table if line.startswith(f'| [{bench.SINGLE_ROW}]'))
    assert '| 0.300 | 0.290 |' in single
    assert bench.curve_table(rows, results)[2].endswith('| 0.50 / 0.40 |')
    # the README's rows: a spread only where there are seeds to spread
    readme = lib.readme_table(rows, results, costs, bench.TSM_ROW, 'TSM-5')
    assert f'| {bench.RECIPE_ROW} | 0.720 ± 0.020 | 3 | 0.40 | 0.30x |' in readme[4]
    assert readme[2].startswith(f'| {bench.SINGLE_ROW} | 0.300 | 1 | 0.30 | 0.25x |')
    noted = lib.readme_table(rows, results, costs, bench.TSM_ROW, 'TSM-5',
                             {bench.RECIPE_ROW: 'chosen'})
    assert noted[4].startswith(f'| {bench.RECIPE_ROW} (chosen) | 0.720 ± 0.020 |')
    assert noted[:4] + noted[5:] == readme[:4] + readme[5:]


def test_findings_sort_each_row_against_its_base_models_spread():
    results = {bench.RECIPE_ROW: _runs(0.70, 0.72, 0.74), bench.RECIPE_T8_ROW: _runs(0.80, 0.78),
               'T=3': _runs(0.65), 'diff, gain 2': _runs(0.70, 0.84),
               bench.FASTSLOW_ROW: _runs(0.79, 0.80, 0.81),
               'fast/slow, two backbone passes': _runs(0.77)}
    costs = {name: dict(latency_ms=30.0) for name in results}
    costs[bench.TSM_ROW] = dict(latency_ms=100.0)
    rows = [row for row in bench.ABLATION_ROWS if row.name in results]
    lines = bench.ablation_findings(rows, results, costs)
    # recipe spread 0.020: a clear change is more than 4 points either way, unless the row's
    # own spread is larger ('diff, gain 2': +5 points, but 0.099 over its 2 seeds)
    assert lines[:4] == [
        f'Against {bench.RECIPE_ROW} (0.720, spread 0.020 over 3 seeds; a clear change is more '
        'than 2x the larger spread of the row and its base, 4.0 points where the row\'s is '
        'smaller; points, seeds, latency vs TSM-5):',
        f'- clearly above: {bench.RECIPE_T8_ROW} (+7.0, 2 seeds, 0.30x)',
        '- within the spread: diff, gain 2 (+5.0, 2 seeds, 0.30x)',
        '- clearly below: T=3 (-7.0, 1 seed, 0.30x)']
    # the fast/slow rows are read against fast/slow, whose spread is 0.010
    assert lines[4] == ''
    assert lines[5].startswith(f'Against {bench.FASTSLOW_ROW} (0.800, spread 0.010')
    assert lines[6:] == ['- clearly above: none', '- within the spread: none',
                         '- clearly below: fast/slow, two backbone passes (-3.0, 1 seed, 0.30x)']
    # a base with one seed has no spread to read a change against
    assert bench.ablation_findings(rows, dict(results, **{bench.FASTSLOW_ROW: _runs(0.8)}),
                                   costs)[4:] == []


def test_costs_are_of_the_frames_the_run_read(written):
    """A row that changes T edits the dataloaders' pipelines, not the config's top-level
    pipeline variables: its cost is that of the T it trained with (conv1 alone grows, by
    64 x 3 x 7 x 7 weights a frame)."""
    _, args, _ = written
    names = ['T=3', bench.RECIPE_T8_ROW]
    costs = bench.cost_of([ROWS[name] for name in names], args)
    grown = (costs[bench.RECIPE_T8_ROW]['params_m'] - costs['T=3']['params_m']) * 1e6
    assert grown == pytest.approx(64 * 3 * 7 * 7 * (8 - 3), abs=1)


def test_the_costs_say_under_which_load_they_were_timed(written, monkeypatch, capsys):
    """Another process slows the rows unevenly, so it moves the latency ratios, not only the
    milliseconds: the timing keeps the load average at its start and end, says when the
    machine is busy, and the table's footer gives both; a record timed before the load was kept
    writes its footer as before."""
    _, args, _ = written
    loads = iter([2.4, 2.6])
    monkeypatch.setattr(lib, 'load_average', lambda: next(loads))
    monkeypatch.setattr(lib, 'side_by_side', lambda configs, *_, **__: {
        name: dict(gflops=0.1, params_m=1.0, latency_ms=10.0) for name in configs})
    costs = bench.cost_of([ROWS['T=3']], args)
    assert costs == {'T=3': dict(gflops=0.1, params_m=1.0, latency_ms=10.0,
                                 load_average=[2.4, 2.6])}
    assert 'with the load average at 2.40 (this process is about 1)' in capsys.readouterr().out
    quiet = iter([1.4, 1.2])
    monkeypatch.setattr(lib, 'load_average', lambda: next(quiet))
    assert bench.cost_of([ROWS['T=3']], args)['T=3']['load_average'] == [1.4, 1.2]
    assert 'load average' not in capsys.readouterr().out
    table = lib.headline_table([ROWS['T=3']], {'T=3': _runs(0.7)}, costs, 'T=3', 'T3',
                               'a sample.')
    assert table[-1] == ('T3: 10.0 ms a sample. Timed at a load average of 2.40 at the start '
                         'and 2.60 at the end.')
    costs['T=3'].pop('load_average')
    assert lib.headline_table([ROWS['T=3']], {'T=3': _runs(0.7)}, costs, 'T=3', 'T3',
                              'a sample.')[-1] == 'T3: 10.0 ms a sample.'


@pytest.mark.slow
def test_the_committed_record_alone_rewrites_every_table(tmp_path, monkeypatch):
    """A fresh clone (no data set, no run folders) writes the committed tables, the zoo
    results and the curves from benchmarks/results/utd_mhad.json, to the byte."""
    outputs = dict(RESULTS=bench.RESULTS, FAMILY_README=bench.FAMILY_README,
                   FINDINGS=bench.FINDINGS, PROJECT_README=bench.PROJECT_README)
    committed = {name: path.read_text() for name, path in outputs.items()}
    record, zoo_results = bench.RESULTS.with_suffix('.json'), bench.ZOO_RESULTS
    curves = (bench.RESULTS.parent / 'utd_mhad_curves.png').read_bytes()
    for name, path in outputs.items():
        (tmp_path / name).mkdir()
        monkeypatch.setattr(bench, name, tmp_path / name / path.name)
        bench.__dict__[name].write_text('' if name == 'RESULTS' else committed[name])
    monkeypatch.setattr(bench, 'ZOO_RESULTS', tmp_path / 'zoo_results')
    (tmp_path / 'record.json').write_text(record.read_text())
    bench.main(['--report-only', '--data', str(tmp_path / 'no_data'), '--work-dir',
                str(tmp_path / 'work'), '--record', str(tmp_path / 'record.json')])
    for name in outputs:
        assert bench.__dict__[name].read_text() == committed[name], name
    assert (tmp_path / 'record.json').read_text() == record.read_text()
    assert (tmp_path / 'RESULTS' / 'utd_mhad_curves.png').read_bytes() == curves
    written = sorted((tmp_path / 'zoo_results').iterdir())
    assert [path.name for path in written] == sorted(path.name
                                                     for path in zoo_results.glob('*.json'))
    for path in written:
        assert path.read_text() == (zoo_results / path.name).read_text()


def test_the_results_page_links_the_familys_files_where_they_lie():
    """The family README's section, copied into benchmarks/results/utd_mhad.md, linked its
    configs by bare name and its curves from the family folder: broken links on the page."""
    from benchmarks.lib.tables import rebased_links
    section = ['| [T=5](hyperframe_t5.py) | 0.763 |',
               '![curves](../../../benchmarks/results/utd_mhad_curves.png)',
               '[docs](https://example.org/a.md), [below](#ablations), [root](/README.md)']
    assert rebased_links(section, bench.FAMILY, bench.RESULTS.parent) == [
        '| [T=5](../../configs/hyperframes/utd_mhad/hyperframe_t5.py) | 0.763 |',
        '![curves](utd_mhad_curves.png)', section[2]]
    page = bench.RESULTS.read_text()
    assert '](../../configs/hyperframes/utd_mhad/hyperframe_scratch-r18_1xb16-1x1x5-60e_utd-' \
        'mhad-depth.py)' in page and '](utd_mhad_curves.png)' in page
