"""benchmarks/bench_accuracy.py: every row's config differs from its base by exactly the
listed change, builds, and keeps the shared schedule; the targets and README section are
computed from the numbers given."""

import pytest
from mmaction.registry import MODELS
from mmengine.config import Config

from benchmarks import bench_accuracy as bench
ROWS = {row.name: row for row in bench.ROWS}


@pytest.fixture(scope='module')
def configs(tmp_path_factory):
    """Every row's written config (data under a fake root; nothing is read)."""
    root = tmp_path_factory.mktemp('bench_accuracy')
    args = bench.parse_args(['--data', str(root / 'data'), '--epochs', '12'])
    written = {}
    for row in bench.ROWS:
        work_dir = root / bench.slug(row.name)
        work_dir.mkdir()
        written[row.name] = Config.fromfile(str(bench.row_config(row, args, work_dir,
                                                                 '/ckpt/single.pth')))
    return root / 'data', written


def _train_step(cfg, type_name):
    return next(s for s in cfg.train_dataloader.dataset.pipeline if s['type'] == type_name)


def _sampler(cfg, loader='train_dataloader'):
    return next(s for s in cfg[loader].dataset.pipeline if s['type'] == 'HyperframeSampleFrames')


def test_the_issue_rows_are_all_there():
    assert len(ROWS) == 19
    for needed in ('TSN-5 (mmaction2)', 'TSM-5 (mmaction2)',
                   "TSM-5 on the recipe's picks (mmaction2)", 'plain stacked',
                   'recipe, init replicate', 'recipe, init center', 'recipe, init random',
                   'recipe + extra_bn', 'recipe + frame attention', 'recipe + motion products',
                   'recipe, T=3', 'recipe, T=8', 'recipe, uniform sampling',
                   'fast/slow (recipe)'):
        assert needed in ROWS


def test_shared_schedule_cache_and_seed(configs):
    data, written = configs
    for name, cfg in written.items():
        assert cfg.train_cfg.max_epochs == 12 and cfg.train_cfg.val_interval == 12, name
        assert cfg.param_scheduler[-1].T_max == 12 - cfg.param_scheduler[0].end, name
        assert cfg.param_scheduler[-1].end == 12, name
        assert cfg.randomness == dict(seed=0)
        assert cfg.optim_wrapper.optimizer == dict(type='AdamW', lr=2e-3, weight_decay=0.05,
                                                    fused=True)
        for loader in ('train_dataloader', 'val_dataloader', 'test_dataloader'):
            types = [s['type'] for s in cfg[loader].dataset.pipeline]
            assert types[0] == 'FrameCacheInit' and 'FrameCacheDecode' in types, (name, types)
            assert cfg[loader].dataset.pipeline[0]['cache_root'] == str(data) + '_cache'
            assert cfg[loader].dataset.ann_file.startswith(str(data))


def test_each_row_changes_what_it_says(configs):
    _, written = configs
    recipe = written['+ diff encoding (ours)']
    assert recipe.model.backbone.input_encoding == 'diff'
    assert _train_step(recipe, 'ConsistentClipAugment').get('independent', False) is False
    plain = written['plain stacked']
    assert plain.model.backbone.input_encoding == 'frames'
    augment = _train_step(plain, 'ConsistentClipAugment')
    assert augment['independent'] is True and augment['flip_ratio'] == 0.0
    assert written['+ consistent augmentation'].model.backbone.input_encoding == 'frames'
    for mode in ('replicate', 'center', 'random'):
        backbone = written[f'recipe, init {mode}'].model.backbone
        assert (backbone.pretrained, backbone.inflate_init) == ('/ckpt/single.pth', mode)
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
    assert aux_target['ann_file'].endswith('data/train_frame_labels.jsonl')


def test_every_row_pipeline_builds(configs):
    """Each transform of every row's pipelines accepts its arguments (a row that cannot build
    its pipeline fails only after the others have trained for an hour)."""
    from mmaction.registry import TRANSFORMS
    for name, cfg in configs[1].items():
        for loader in ('train_dataloader', 'test_dataloader'):
            for step in cfg[loader].dataset.pipeline:
                if step['type'] != 'CenterFrameTarget':  # reads its (absent) label file
                    TRANSFORMS.build(step)


@pytest.mark.parametrize('name', ['TSM-5 (mmaction2)', 'plain stacked', 'recipe, T=8',
                                  'fast/slow (recipe)', 'recipe + aux centre-frame head'])
def test_row_models_build(configs, name):
    cfg = configs[1][name]
    cfg.model.backbone.pop('pretrained', None)
    model = MODELS.build(cfg.model)
    assert type(model).__name__ == cfg.model.type


def test_targets_compare_with_plain_stacking_never_with_tsm():
    rows = [ROWS[name] for name in ('TSM-5 (mmaction2)', 'single frame', 'plain stacked',
                                    '+ diff encoding (ours)', 'recipe, T=3',
                                    'fast/slow (recipe)')]
    results = {'TSM-5 (mmaction2)': dict(top1=0.90), 'single frame': dict(top1=0.99),
               'plain stacked': dict(top1=0.50), '+ diff encoding (ours)': dict(top1=0.88),
               'recipe, T=3': dict(top1=0.80), 'fast/slow (recipe)': dict(top1=0.45)}
    lines = bench.targets(rows, results)
    assert lines[0].startswith('TSN-5 and TSM-5 do not learn these clips')
    # the single frame is not a hyperframe model, TSM is not a reference: the best one is the
    # diff-encoding row, against plain stacking
    assert lines[1:] == [
        '- best single-stream hyperframe model (+ diff encoding (ours)): 38.0 points above '
        'plain stacked frames',
        '- fast/slow (recipe): 5.0 points below plain stacked frames']
    assert not any('TSM-5 at' in line for line in lines)
    # without the plain row only the reason is left
    del results['plain stacked']
    assert bench.targets(rows, results) == lines[:1]


def test_readme_section_is_replaced_between_markers(tmp_path):
    readme = tmp_path / 'README.md'
    readme.write_text(f'intro\n{bench.BEGIN}\nold table\n{bench.END}\nafter\n')
    bench.update_readme('# Title\n\nnew table\n', readme)
    assert readme.read_text() == f'intro\n{bench.BEGIN}\nnew table\n{bench.END}\nafter\n'


def test_latency_inputs_follow_each_row(configs, monkeypatch, tmp_path):
    """Latency is timed on what each row's model takes: one clip at 224 (T=3: 9 channels;
    TSM: its 5 segments), not on the base config's top-level test pipeline."""
    from hyperframes_mm.analysis import complexity
    from hyperframes_mm.apis import example_inputs
    seen = {}
    monkeypatch.setattr(complexity, 'compare_latency',
                        lambda configs, **kwargs: seen.update(configs) or
                        {name: dict(median_ms=1.0) for name in configs})
    rows = bench.ROWS
    results = {}
    for row in rows:
        path = tmp_path / f'{bench.slug(row.name)}.py'
        configs[1][row.name].dump(str(path))
        results[row.name] = dict(config=str(path))
    bench.latency_224(rows, results)
    for name in seen:  # every row's timed input builds (the shapes of four are checked)
        example_inputs(seen[name], (256, 256))
    assert example_inputs(seen['recipe, T=3'], (256, 256)).shape == (1, 1, 9, 224, 224)
    assert example_inputs(seen['TSM-5 (mmaction2)'], (256, 256)).shape == (1, 5, 3, 224, 224)
    assert example_inputs(seen["TSM-5 on the recipe's picks (mmaction2)"],
                          (256, 256)).shape == (1, 5, 3, 224, 224)
    assert example_inputs(seen['recipe, uniform sampling'], (256, 256)).shape == \
        (1, 1, 15, 224, 224)
    streams = example_inputs(seen['fast/slow (recipe)'], (256, 256))
    assert {key: tuple(value.shape) for key, value in streams.items()} == {
        'imgs_fast': (1, 1, 15, 224, 224), 'imgs_slow': (1, 1, 15, 224, 224)}
