"""benchmarks/bench_accuracy.py: every row's config differs from its base by exactly the
listed change, builds, and keeps the shared schedule; the rows that start from the single
frame train after it; the targets, the README section and the whole table are computed from
the numbers given, the table from the record alone."""
import json

import pytest
from mmaction.registry import MODELS
from mmengine.config import Config

from benchmarks import bench_accuracy as bench

NAMES = ('TSN-5 (mmaction2)', 'TSM-5 (mmaction2)', "TSM-5 on the recipe's picks (mmaction2)",
         'single frame', 'plain stacked', '+ consistent augmentation', '+ diff encoding (ours)',
         'diff encoding, per-frame crops', 'recipe, init replicate', 'recipe, init center',
         'recipe, init random', 'recipe + extra_bn', 'recipe + frame attention',
         'recipe + motion products', 'recipe, T=3', 'recipe, T=8', 'recipe, uniform sampling',
         'fast/slow (recipe)', 'recipe + aux centre-frame head')


def _args(root, *extra):
    return bench.parse_args(['--data', str(root / 'data'), '--work-dir', str(root / 'work'),
                             '--record', str(root / 'record.json'), *extra])


def _rows(args):
    zoo, ablation = bench.rows(args)
    return {row.name: row for row in zoo + ablation}


@pytest.fixture(scope='module')
def configs(tmp_path_factory):
    """Every row's seed-0 config at 12 epochs (data under a fake root; nothing is read)."""
    root = tmp_path_factory.mktemp('bench_accuracy')
    args = _args(root, '--epochs', '12')
    written = {}
    for name, row in _rows(args).items():
        folder = root / str(len(written))
        folder.mkdir()
        written[name] = Config.fromfile(str(bench.BENCH.run_config(row, 0, args, folder)))
    return root, args, written


def _train_step(cfg, type_name):
    return next(s for s in cfg.train_dataloader.dataset.pipeline if s['type'] == type_name)


def _sampler(cfg, loader='train_dataloader'):
    return next(s for s in cfg[loader].dataset.pipeline if s['type'] == 'HyperframeSampleFrames')


def test_the_issue_rows_are_all_there(configs):
    zoo, ablation = bench.rows(configs[1])
    assert tuple(row.name for row in zoo + ablation) == NAMES
    assert [row.name for row in zoo][-1] == '+ diff encoding (ours)'


def test_shared_schedule_seed_and_data(configs):
    root, _, written = configs
    for name, cfg in written.items():
        assert cfg.train_cfg.max_epochs == 12 and cfg.train_cfg.val_interval == 12, name
        assert cfg.param_scheduler[-1].T_max == 12 - cfg.param_scheduler[0].end, name
        assert cfg.param_scheduler[-1].end == 12, name
        assert cfg.default_hooks.checkpoint == dict(type='CheckpointHook', interval=12,
                                                    max_keep_ckpts=1), name
        assert cfg.randomness == dict(seed=0)
        assert cfg.optim_wrapper.optimizer == dict(type='AdamW', lr=2e-3, weight_decay=0.05,
                                                    fused=True)
        assert cfg.train_dataloader.dataset.pipeline[0]['type'] == 'FrameCacheInit', name
        for loader in ('train_dataloader', 'val_dataloader', 'test_dataloader'):
            assert (cfg[loader].num_workers, cfg[loader].persistent_workers) == (0, False)
            assert cfg[loader].dataset.ann_file.startswith(str(root / 'data'))


def test_each_row_changes_what_it_says(configs):
    root, _, written = configs
    recipe = written['+ diff encoding (ours)']
    assert recipe.model.backbone.input_encoding == 'diff'
    assert _train_step(recipe, 'ConsistentClipAugment').get('independent', False) is False
    plain = written['plain stacked']
    assert plain.model.backbone.input_encoding == 'frames'
    augment = _train_step(plain, 'ConsistentClipAugment')
    assert augment['independent'] is True and augment['flip_ratio'] == 0.0
    assert written['+ consistent augmentation'].model.backbone.input_encoding == 'frames'
    # the single-frame row's seed-0 run of the same 12 epochs
    single = str(root / 'work' / 'single_frame' / 'seed0' / 'epoch_12.pth')
    for mode in ('replicate', 'center', 'random'):
        backbone = written[f'recipe, init {mode}'].model.backbone
        assert (backbone.pretrained, backbone.inflate_init) == (single, mode)
    assert written['recipe + extra_bn'].model.backbone.extra_bn is True
    assert written['recipe + frame attention'].model.backbone.frame_attention is True
    # motion products are one row's change, off elsewhere (the zoo recipe has them on)
    for name, cfg in written.items():
        products = cfg.model.backbone.get('motion_products', False)
        assert products is (name == 'recipe + motion products'), name
    for name, frames in (('recipe, T=3', 3), ('recipe, T=8', 8), ('+ diff encoding (ours)', 5)):
        cfg = written[name]
        for loader in ('train_dataloader', 'test_dataloader'):
            sampler = _sampler(cfg, loader)
            assert sampler['num_frames'] == cfg.model.backbone.num_frames == frames
            # every T covers the recipe's span: 4 gaps of 8/30 s
            assert (frames - 1) * sampler['interval'] == pytest.approx(4 * 8 / 30)
    uniform = _sampler(written['recipe, uniform sampling'])
    # no interval: uniform picks spread over the clip
    assert (uniform['mode'], uniform['time_based'], 'interval' in uniform) == ('uniform', False,
                                                                               False)
    aux_target = _train_step(written['recipe + aux centre-frame head'], 'CenterFrameTarget')
    assert (aux_target['ann_file'], aux_target['data_prefix']) == (
        str(root / 'data' / 'train_frame_labels.jsonl'), str(root / 'data'))


def test_every_row_pipeline_builds(configs):
    """Each transform of every row's pipelines accepts its arguments (a row that cannot build
    its pipeline fails only after the others have trained for an hour)."""
    from mmaction.registry import TRANSFORMS
    for name, cfg in configs[2].items():
        for loader in ('train_dataloader', 'test_dataloader'):
            for step in cfg[loader].dataset.pipeline:
                if step['type'] != 'CenterFrameTarget':  # reads its (absent) label file
                    TRANSFORMS.build(step)


@pytest.mark.parametrize('name', ['TSM-5 (mmaction2)', 'plain stacked', 'recipe, T=8',
                                  'fast/slow (recipe)', 'recipe + aux centre-frame head'])
def test_row_models_build(configs, name):
    cfg = configs[2][name]
    cfg.model.backbone.pop('pretrained', None)
    model = MODELS.build(cfg.model)
    assert type(model).__name__ == cfg.model.type


def test_latency_inputs_are_one_clip_of_each_row_at_224(configs, tmp_path):
    """Latency is timed on what each row's model takes: one clip at 224 (T=3: 9 channels;
    TSM: its 5 segments), and reads no checkpoint (the init rows' may not exist)."""
    from hyperframes_mm.apis import example_inputs
    _, args, _ = configs
    seen = {}
    for name, row in _rows(args).items():
        folder = tmp_path / str(len(seen))
        folder.mkdir()
        costed = row._replace(edits=row.edits + bench.BENCH.cost_edits)
        seen[name] = Config.fromfile(str(bench.BENCH.run_config(costed, 0, args, folder)))
        assert 'pretrained' not in seen[name].model.backbone, name
        example_inputs(seen[name], bench.VIDEO_SIZE)  # every row's timed input builds
    assert example_inputs(seen['recipe, T=3'], bench.VIDEO_SIZE).shape == (1, 1, 9, 224, 224)
    assert example_inputs(seen['TSM-5 (mmaction2)'], bench.VIDEO_SIZE).shape == \
        (1, 5, 3, 224, 224)
    assert example_inputs(seen["TSM-5 on the recipe's picks (mmaction2)"],
                          bench.VIDEO_SIZE).shape == (1, 5, 3, 224, 224)
    assert example_inputs(seen['recipe, uniform sampling'], bench.VIDEO_SIZE).shape == \
        (1, 1, 15, 224, 224)
    streams = example_inputs(seen['fast/slow (recipe)'], bench.VIDEO_SIZE)
    assert {key: tuple(value.shape) for key, value in streams.items()} == {
        'imgs_fast': (1, 1, 15, 224, 224), 'imgs_slow': (1, 1, 15, 224, 224)}


def test_the_init_rows_train_after_the_single_frame_and_train_only_writes_nothing(tmp_path,
                                                                                 monkeypatch):
    (tmp_path / 'data').mkdir()
    (tmp_path / 'data' / 'meta.json').write_text(json.dumps(dict(
        params=dict(clips_per_class=dict(train=1, val=1)), classes=['a'], groups={},
        annotations=dict(train='train.txt', val='val.txt'))))
    trained = []
    monkeypatch.setattr(bench.BENCH, 'train', lambda jobs, args: trained.append(
        [(row.name, seed) for row, seed in jobs]))
    assert bench.main(['--data', str(tmp_path / 'data'), '--work-dir', str(tmp_path / 'work'),
                       '--record', str(tmp_path / 'record.json'), '--rows', 'init', 'T=8',
                       '--train-only']) == ''
    assert trained == [[('recipe, T=8', 0), ('single frame', 0)],
                       [('recipe, init replicate', 0), ('recipe, init center', 0),
                        ('recipe, init random', 0)]]
    assert not (tmp_path / 'record.json').exists()


def _run(top1, fast, slow, train_min, seed=0):
    return dict(seed=seed, top1=top1, top5=1.0, mean_class=top1, fast=fast, slow=slow,
                train_top1=0.9, train_min=train_min, curves={})


def test_targets_compare_with_plain_stacking_never_with_tsm(configs):
    rows = _rows(configs[1])
    shown = [rows[name] for name in ('TSM-5 (mmaction2)', 'single frame', 'plain stacked',
                                     '+ diff encoding (ours)', 'recipe, T=3',
                                     'fast/slow (recipe)')]
    results = {'TSM-5 (mmaction2)': [dict(top1=0.90, train_top1=0.95)],
               'single frame': [dict(top1=0.99)],
               'plain stacked': [dict(top1=0.50)], '+ diff encoding (ours)': [dict(top1=0.88)],
               'recipe, T=3': [dict(top1=0.80)], 'fast/slow (recipe)': [dict(top1=0.45)]}
    lines = bench.targets(shown, results, 0.1)
    # TSM learnt here (0.90 > 2x chance): the claims stay against plain stacking all the same
    assert lines[0] == ('TSM-5 (mmaction2) 0.900 on the test clips (chance 0.100; on their '
                        'training clips 0.950): this table\'s claims are against plain '
                        'stacking; UTD-MHAD (`benchmarks/bench_utd_mhad.py`) compares the '
                        'recipe with a converged TSM-5.')
    # the single frame is not a hyperframe model, TSM is not a reference: the best one is the
    # diff-encoding row, against plain stacking
    assert lines[1:] == [
        '- best single-stream hyperframe model (+ diff encoding (ours)): 38.0 points above '
        'plain stacked frames',
        '- fast/slow (recipe): 5.0 points below plain stacked frames']
    assert not any('TSM-5 at' in line for line in lines)
    # without the plain row only the baselines' line is left
    del results['plain stacked']
    assert bench.targets(shown, results, 0.1) == lines[:1]


def test_stock_baselines_within_twice_chance_are_said_not_to_learn(configs):
    results = {'TSN-5 (mmaction2)': [dict(top1=0.07, train_top1=0.85)],
               'TSM-5 (mmaction2)': [dict(top1=0.20, train_top1=0.65)]}
    assert bench.targets([], results, 0.1) == [
        'TSN-5 (mmaction2) 0.070 and TSM-5 (mmaction2) 0.200 on the test clips (chance 0.100; '
        'on their training clips 0.850 / 0.650): within 2x chance: they do not learn these '
        'clips on this schedule, so no claim against them is drawn from this table; UTD-MHAD '
        '(`benchmarks/bench_utd_mhad.py`) compares the recipe with a converged TSM-5.']
    results['TSM-5 (mmaction2)'][0]['top1'] = 0.21
    assert 'claims are against plain stacking' in bench.targets([], results, 0.1)[0]


def test_readme_section_is_replaced_between_markers(tmp_path):
    readme = tmp_path / 'README.md'
    readme.write_text(f'intro\n{bench.BEGIN}\nold table\n{bench.END}\nafter\n')
    bench.update_readme('# Title\n\nnew table\n', readme)
    assert readme.read_text() == f'intro\n{bench.BEGIN}\nnew table\n{bench.END}\nafter\n'


@pytest.mark.slow
def test_the_record_alone_writes_the_table(tmp_path):
    """A fresh clone (no data, no run folders) writes the table from the record (an init row's
    key included: it names the single-frame checkpoint, not its file), twice the same."""
    args = _args(tmp_path, '--epochs', '12')
    rows = _rows(args)
    runs = {'TSM-5 (mmaction2)': [_run(0.12, 0.1, 0.14, 10.0)],
            'plain stacked': [_run(0.1, 0.08, 0.12, 2.5)],
            '+ diff encoding (ours)': [_run(0.8, 0.84, 0.76, 3.0), _run(0.86, 0.9, 0.82, 3.0, 1)],
            'recipe, init center': [_run(0.7, 0.74, 0.66, 2.0)]}
    generator = dict(preset='default', generator_version=4, seed=0)
    data = dict(generator=generator, classes=10, groups=dict(fast=[0], slow=[1]),
                lists={'train.txt': 400, 'val.txt': 150})
    # the keys name what made the data set: the record's description, written first
    (tmp_path / 'record.json').write_text(json.dumps(dict(data=data)))
    record = dict(
        results={name: [dict(run, row=name, key=bench.BENCH.run_key(rows[name], run['seed'],
                                                                    args)) for run in row_runs]
                 for name, row_runs in runs.items()},
        costs={name: dict(gflops=1.0, params_m=11.0, latency_ms=latency) for name, latency in
               (('TSM-5 (mmaction2)', 400.0), ('plain stacked', 100.0),
                ('+ diff encoding (ours)', 100.0), ('recipe, init center', 104.0))},
        data=data)
    (tmp_path / 'record.json').write_text(json.dumps(record))
    argv = ['--report-only', '--data', args.data, '--work-dir', args.work_dir, '--record',
            args.record, '--epochs', '12', '--out', str(tmp_path / 'accuracy.md')]
    table = bench.main(argv)
    assert bench.main(argv) == table == (tmp_path / 'accuracy.md').read_text()
    lines = table.splitlines()
    assert lines[2].startswith('10 motion-only classes (preset `default`, generator version 4), '
                               '400 training / 150 test clips, chance 0.100; every row trained '
                               'from scratch with the same AdamW/cosine schedule for 12 epochs '
                               'at 32x32, seeds 0, 1,')
    assert lines[6:10] == [
        '| TSM-5 (mmaction2) | ResNetTSM-18, 5 uniform segments, shift 1/8 | 0.120 | 0.120 | '
        '0.100 | 0.140 | 1.00x | 1.00x |',
        '| plain stacked | T=5 frames stacked as they are, flips without label map, per-frame '
        'crops | 0.100 | 0.100 | 0.080 | 0.120 | 0.25x | 0.25x |',
        '| + diff encoding (ours) | centre frame + 4x consecutive differences | **0.830** ± '
        '0.042 (0.800 / 0.860) | 0.830 | 0.870 | 0.790 | 0.30x | 0.25x |',
        '| recipe, init center | conv1 from the single-frame checkpoint, center | 0.700 | 0.700 '
        '| 0.740 | 0.660 | 0.20x | 0.26x |']
    assert 'TSM-5: 400 ms per clip at 224x224' in table
    assert '- best single-stream hyperframe model (+ diff encoding (ours)): 73.0 points above ' \
        'plain stacked frames' in table
    assert table.endswith('`OMP_NUM_THREADS=1 python benchmarks/bench_accuracy.py --epochs 12` '
                          '(about an hour on 2 cores; `--report-only` rewrites this table from '
                          'the record).\n')
