"""benchmarks/bench_scenarios.py: the synthetic rows are the scenario recipes, schedules scale,
results keep their sections; one real training run and one real cost row."""
import json

import pytest
from mmengine.config import Config

from benchmarks import bench_scenarios as bench
from benchmarks.lib.tables import replace_titled_section


@pytest.mark.parametrize('row, frames, interval, backbone', [
    ('fast', 5, 2, 'HyperResNet'), ('slow', 8, 8, 'HyperResNet'),
    ('alerting', 3, 1, 'HyperMobileNetV3'), ('accuracy', 16, 4, 'InflatedBackbone')])
def test_scenario_rows_take_t_interval_and_backbone_from_the_scenario(row, frames, interval,
                                                                      backbone, tmp_path):
    cfg = bench.synthetic_config(row, 'data/x', 3, str(tmp_path), None)
    recipe = bench.load(bench.find_config(bench.RECIPE_PATTERN), 'data/x')
    for loader in ('train_dataloader', 'val_dataloader', 'test_dataloader'):
        sampler = cfg[loader].dataset.pipeline[1]
        assert (sampler['num_frames'], sampler['interval'], sampler['time_based']) == \
            (frames, interval / 30, True)
        assert cfg[loader].dataset.ann_file.startswith('data/x/')
    assert cfg.model.backbone.type == backbone and cfg.model.backbone.num_frames == frames
    assert cfg.model.backbone.pretrained is None
    assert cfg.model.backbone.input_encoding == recipe.model.backbone.input_encoding
    # the recipe's motion products, where the backbone has them (not the ViT wrapper)
    assert recipe.model.backbone.motion_products is True
    assert cfg.model.backbone.get('motion_products', False) is (backbone != 'InflatedBackbone')
    assert cfg.model.cls_head.num_classes == recipe.model.cls_head.num_classes
    for key in ('optim_wrapper', 'param_scheduler', 'train_cfg', 'data_preprocessor'):
        assert cfg.get(key, cfg.model.get(key)) == recipe.get(key, recipe.model.get(key))
    assert (cfg.randomness, cfg.work_dir, cfg.resume) == (dict(seed=3), str(tmp_path), True)
    if row == 'accuracy':
        assert cfg.model.backbone.backbone == dict(bench.SHRUNK_VIT, img_size=32)
        assert cfg.model.cls_head.in_channels == 192
        assert bench.row_title(row, 'data/x') == (
            'accuracy first: ViT 4 layers x 192, patch 4 (shrunk from ViT-B/16), inflated '
            'patch embedding, T=16, 4/30 s')


def test_ablation_rows_are_the_recipe_and_the_aux_config():
    recipe = bench.synthetic_config('recipe', 'data/x', 0, 'w', None)
    aux = bench.synthetic_config('aux', 'data/x', 0, 'w', None)
    assert recipe.model.cls_head.type == 'TSNHead' and aux.model.cls_head.type == 'AuxFrameHead'
    assert aux.model.cls_head.head == recipe.model.cls_head
    for key in ('optim_wrapper', 'param_scheduler', 'train_cfg', 'randomness', 'val_dataloader',
                'default_hooks'):
        assert aux[key] == recipe[key], key


def test_replace_section_keeps_the_other_section(tmp_path):
    out = tmp_path / 'r.md'
    for title, text in (('A', '## A\n\none\n'), ('B', '## B\n\ntwo\n'),
                        ('A', '## A\n\nthree\n')):
        replace_titled_section(out, title, text, bench.HEADER)
    assert out.read_text() == ('# Scenario reference configs: cost and synthetic-benchmark '
                               'accuracy\n\n## B\n\ntwo\n\n## A\n\nthree\n')


def test_one_training_run_and_the_table(labelled_dataset, tmp_path, monkeypatch):
    result = bench.run_one('aux', str(labelled_dataset), 0, tmp_path / 'aux-seed0', 1)
    assert json.loads((tmp_path / 'aux-seed0' / 'result.json').read_text()) == result
    assert result['epochs'] == 1 and 0 <= result['top1'] <= 1
    (tmp_path / 'recipe-seed0').mkdir()
    (tmp_path / 'recipe-seed0' / 'result.json').write_text(json.dumps(
        dict(row='recipe', seed=0, epochs=1, top1=0.5, mean1=0.25, seconds=60.0)))
    monkeypatch.setattr(bench, 'run_one', lambda *a, **k: pytest.fail('not skipped'))
    out = tmp_path / 'scenarios.md'
    bench.main(['synthetic', '--data', str(labelled_dataset), '--rows', 'recipe', 'aux',
                '--epochs', '1', '--work-dir', str(tmp_path), '--out', str(out)])
    text = out.read_text()
    assert '## Synthetic motion benchmark: auxiliary-head ablation\n' in text
    assert '| synthetic recipe: HyperResNet-18, T=5, 8/30 s | 50.0 | 50.0 | 25.0 | 1.0 |' in text
    assert ('| synthetic recipe: HyperResNet-18, T=5, 8/30 s + AuxFrameHead (centre-frame '
            'motion state, weight 0.5) |') in text
    assert f'| {100 * result["top1"]:.1f} | {100 * result["top1"]:.1f} |' in text
    assert '--rows recipe aux --epochs 1`' in text


def test_cost_row_of_the_alerting_scenario(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, 'SCENARIOS', (bench.scenario('alerting'), ))
    out = tmp_path / 'scenarios.md'
    bench.main(['cost', '--repeats', '1', '--warmup', '0', '--out', str(out)])
    row = [line for line in out.read_text().splitlines() if line.startswith('| real-time')][0]
    cells = [cell.strip() for cell in row.split('|')[1:-1]]
    assert cells[2:7] == ['3', '1', '160x160', 'HyperMobileNetV3-small', '8']
    assert cells[-1] == '1' and float(cells[7]) > 0 and float(cells[8]) > 0


def test_section_names():
    assert bench.section_name(['aux', 'recipe']) == 'auxiliary-head ablation'
    assert bench.section_name(['fast', 'accuracy']) == 'scenario recipes'
    assert bench.section_name(['fast', 'aux']) == 'scenario recipes and auxiliary-head ablation'


def test_find_config(tmp_path):
    assert bench.find_config(bench.AUX_PATTERN).parent == bench.SCENARIO_DIR
    (tmp_path / 'a_1.py').touch()
    (tmp_path / 'a_2.py').touch()
    with pytest.raises(FileNotFoundError, match=r"expected one config named a_\*.py, found "
                                                r"\['a_1.py', 'a_2.py'\]"):
        bench.find_config((tmp_path, 'a_*.py'))
    with pytest.raises(FileNotFoundError, match=r'found \[\]'):
        bench.find_config((tmp_path, 'b_*.py'))


def test_bad_epochs_refused():
    with pytest.raises(SystemExit):
        bench.parse_args(['synthetic', '--epochs', '0'])
