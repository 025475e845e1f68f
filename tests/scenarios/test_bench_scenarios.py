"""benchmarks/bench_scenarios.py: the synthetic rows are the scenario recipes, schedules scale,
results keep their sections; one real training run, its table from the record alone, and one
real cost row."""
import json
import shutil

import pytest
from mmengine.config import Config

from benchmarks import bench_scenarios as bench
from benchmarks.lib.edits import one_config
from benchmarks.lib.tables import replace_titled_section


def _args(root, *extra):
    return bench.parse_args(['synthetic', '--data', str(root / 'data'), '--work-dir',
                             str(root / 'work'), '--record', str(root / 'record.json'), *extra])


def _config(name, args, folder, seed=0):
    zoo, ablation = bench.rows(args)
    row = next(row for row in zoo + ablation if row.name == name)
    folder.mkdir(exist_ok=True)
    return Config.fromfile(str(bench.BENCH.run_config(row, seed, args, folder)))


@pytest.mark.parametrize('row, frames, interval, backbone', [
    ('fast', 5, 2, 'HyperResNet'), ('slow', 8, 8, 'HyperResNet'),
    ('alerting', 3, 1, 'HyperMobileNetV3'), ('accuracy', 16, 4, 'InflatedBackbone')])
def test_scenario_rows_take_t_interval_and_backbone_from_the_scenario(row, frames, interval,
                                                                      backbone, tmp_path):
    args = _args(tmp_path)
    cfg = _config(row, args, tmp_path / 'run', seed=3)
    recipe = _config('recipe', args, tmp_path / 'recipe')
    for loader in ('train_dataloader', 'val_dataloader', 'test_dataloader'):
        sampler = cfg[loader].dataset.pipeline[1]
        assert (sampler['num_frames'], sampler['interval'], sampler['time_based']) == \
            (frames, interval / 30, True)
        assert cfg[loader].dataset.ann_file.startswith(str(tmp_path / 'data') + '/')
    assert cfg.model.backbone.type == backbone and cfg.model.backbone.num_frames == frames
    assert cfg.model.backbone.pretrained is None
    assert cfg.model.backbone.input_encoding == recipe.model.backbone.input_encoding
    # the recipe's motion products, where the backbone has them (not the ViT wrapper)
    assert recipe.model.backbone.motion_products is True
    assert cfg.model.backbone.get('motion_products', False) is (backbone != 'InflatedBackbone')
    assert cfg.model.cls_head.num_classes == recipe.model.cls_head.num_classes
    for key in ('optim_wrapper', 'param_scheduler', 'train_cfg', 'data_preprocessor',
                'default_hooks'):
        assert cfg.get(key, cfg.model.get(key)) == recipe.get(key, recipe.model.get(key))
    assert cfg.randomness == dict(seed=3)
    assert cfg.default_hooks.checkpoint == dict(type='CheckpointHook', interval=1,
                                                max_keep_ckpts=1)
    if row == 'accuracy':
        assert cfg.model.backbone.backbone == dict(bench.SHRUNK_VIT, img_size=32)
        assert cfg.model.cls_head.in_channels == 192
        zoo, _ = bench.rows(args)
        assert bench.row_title(zoo[-1], args) == (
            'accuracy first: ViT 4 layers x 192, patch 4 (shrunk from ViT-B/16), inflated '
            'patch embedding, T=16, 4/30 s')


def test_ablation_rows_are_the_recipe_and_the_aux_config(tmp_path):
    args = _args(tmp_path, '--epochs', '6')
    recipe = _config('recipe', args, tmp_path / 'recipe')
    aux = _config('aux', args, tmp_path / 'aux')
    assert recipe.model.cls_head.type == 'TSNHead' and aux.model.cls_head.type == 'AuxFrameHead'
    assert aux.model.cls_head.head == recipe.model.cls_head
    for key in ('optim_wrapper', 'param_scheduler', 'train_cfg', 'randomness', 'val_dataloader',
                'default_hooks'):
        assert aux[key] == recipe[key], key
    assert (recipe.train_cfg.max_epochs, recipe.param_scheduler[-1].end) == (6, 6)
    target = next(step for step in aux.train_dataloader.dataset.pipeline
                  if step['type'] == 'CenterFrameTarget')
    assert (target['ann_file'], target['data_prefix']) == (
        str(tmp_path / 'data' / 'train_frame_labels.jsonl'), str(tmp_path / 'data'))


def test_replace_section_keeps_the_other_section_and_the_order(tmp_path):
    out = tmp_path / 'r.md'
    header = ('# Scenario reference configs: cost and synthetic-benchmark accuracy\n\n')
    for title, text in (('A', '## A\n\none\n'), ('B', '## B\n\ntwo\n'),
                        ('A', '## A\n\nthree\n')):
        replace_titled_section(out, title, text, bench.HEADER)
    assert out.read_text() == header + '## A\n\nthree\n\n## B\n\ntwo\n'
    replace_titled_section(out, 'B', '## B\n\nfour\n', bench.HEADER)
    assert out.read_text() == header + '## A\n\nthree\n\n## B\n\nfour\n'
    replace_titled_section(out, 'C', '## C\n\nfive\n', bench.HEADER)
    assert out.read_text() == header + '## A\n\nthree\n\n## B\n\nfour\n\n## C\n\nfive\n'


@pytest.mark.slow
def test_one_training_run_and_the_table_from_the_record(labelled_dataset, tmp_path):
    """One epoch of the aux row through mmaction2's tools, recorded; the record alone (no run
    folder, no data) writes the same section again, beside the file's other sections."""
    out = tmp_path / 'scenarios.md'
    out.write_text(bench.HEADER + '## Cost at each scenario\'s input size\n\ncosts\n')
    argv = ['synthetic', '--data', str(labelled_dataset), '--rows', 'aux', '--epochs', '1',
            '--jobs', '1', '--work-dir', str(tmp_path / 'work'), '--record',
            str(tmp_path / 'record.json'), '--out', str(out)]
    bench.main(argv)
    ((run, ), ) = json.loads((tmp_path / 'record.json').read_text())['results'].values()
    assert (run['row'], run['seed'], sorted(run['curves'])) == ('aux', 0, ['1'])
    assert 0 <= run['top1'] <= 1
    text = out.read_text()
    assert text.startswith(bench.HEADER + '## Cost at each scenario\'s input size\n\ncosts\n\n'
                           '## Synthetic motion benchmark\n')
    assert ('| synthetic recipe: HyperResNet-18, T=5, 8/30 s + AuxFrameHead (centre-frame '
            f'motion state, weight 0.5) | {100 * run["top1"]:.1f} | {100 * run["top1"]:.1f} |'
            ) in text
    assert ' --epochs 1` (the same command with `--report-only`' in text
    shutil.rmtree(tmp_path / 'work')
    bench.main(argv[:2] + [str(tmp_path / 'no_data'), '--report-only'] + argv[3:])
    assert out.read_text() == text


def test_cost_row_of_the_alerting_scenario(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, 'SCENARIOS', (bench.scenario('alerting'), ))
    out = tmp_path / 'scenarios.md'
    bench.main(['cost', '--repeats', '1', '--warmup', '0', '--out', str(out)])
    row = [line for line in out.read_text().splitlines() if line.startswith('| real-time')][0]
    cells = [cell.strip() for cell in row.split('|')[1:-1]]
    assert cells[2:7] == ['3', '1', '160x160', 'HyperMobileNetV3-small', '8']
    assert cells[-1] == '1' and float(cells[7]) > 0 and float(cells[8]) > 0


def test_one_config_of_a_pattern(tmp_path):
    assert bench.AUX.parent == bench.SCENARIO_DIR
    (tmp_path / 'a_1.py').touch()
    (tmp_path / 'a_2.py').touch()
    with pytest.raises(FileNotFoundError, match=r"expected one config named a_\*.py, found "
                                                r"\['a_1.py', 'a_2.py'\]"):
        one_config(tmp_path, 'a_*.py')
    with pytest.raises(FileNotFoundError, match=r'found \[\]'):
        one_config(tmp_path, 'b_*.py')


def test_bad_epochs_refused():
    with pytest.raises(SystemExit):
        bench.parse_args(['synthetic', '--epochs', '0'])
