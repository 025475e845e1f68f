"""Each family's metafile.yml and README table are what tools/analysis/zoo_table.py derives from
its configs; the tool writes, checks and fills them."""
import json
import os
import re
import shutil

import pytest
import yaml
from mmengine.config import Config

from benchmarks.lib.tables import replace_section
from benchmarks.lib.views import view_options

from ..conftest import REPO
from .conftest import CONFIG_ROOT, FAMILIES

HMDB_R18 = 'hyperframe_imagenet-pretrained-r18_8xb32-5x2x1-50e_hmdb51-split1-rgb'


def _train_sampler(cfg: Config) -> dict:
    """The training pipeline's HyperframeSampleFrames, read straight from the config."""
    dataset = cfg.train_dataloader.dataset
    while 'pipeline' not in dataset:
        dataset = dataset.dataset
    return next(step for step in dataset.pipeline if step['type'] == 'HyperframeSampleFrames')


def _table_rows(readme: str):
    """The table between the zoo_table markers, one list of cells per model row."""
    table = readme.split('<!-- zoo_table: start -->')[1].split('<!-- zoo_table: end -->')[0]
    rows = [line.strip('|').split(' | ') for line in table.splitlines() if line.startswith('| [')]
    return [[cell.strip() for cell in row] for row in rows]


@pytest.mark.parametrize('family', FAMILIES)
def test_metafile_is_derived_from_the_configs(zoo_table, family):
    folder = CONFIG_ROOT / family
    # the committed file equals the one derived now (FLOPs, params, every field)
    assert zoo_table.main([str(folder), '--check']) == 0
    meta = yaml.safe_load((folder / 'metafile.yml').read_text())
    assert meta['Collections'] == [dict(Name=f'hyperframes-{family}',
                                        README=f'configs/hyperframes/{family}/README.md')]
    configs = sorted(folder.glob('*.py'))
    assert sorted(model['Name'] for model in meta['Models']) == [path.stem for path in configs]
    for model in meta['Models']:
        path = REPO / model['Config']
        assert path.is_file() and path.parent == folder and path.stem == model['Name']
        cfg = Config.fromfile(str(path))
        data = model['Metadata']
        assert data['Batch Size'] == cfg.train_dataloader.batch_size
        assert data['Epochs'] == cfg.train_cfg.max_epochs
        sampler = _train_sampler(cfg)
        if 'streams' in sampler:
            assert data['Streams'] == list(sampler['streams'])
            # strings: mim search lower-cases list items
            assert data['Frames'] == [str(spec.get('num_frames', sampler['num_frames']))
                                      for spec in sampler['streams'].values()]
            assert data['Frame Interval'] == [str(spec['interval'])
                                              for spec in sampler['streams'].values()]
        else:
            assert (data['Frames'], data['Frame Interval']) == (sampler['num_frames'],
                                                                sampler['interval'])
        crop = next(step['size'] for step in cfg.train_pipeline
                    if step['type'] == 'ConsistentClipAugment')
        assert data['Resolution'] == f'{crop}x{crop}'
        assert data['Pretrained'] == 'ImageNet' and cfg.model.backbone.pretrained
        assert re.fullmatch(r'\d+\.\d\dG', data['FLOPs'])
        assert re.fullmatch(r'\d+\.\d\dM', data['Parameters'])
        assert model['Modality'] == 'RGB'
        assert 'Weights' not in model
        # accuracy only from a test-metrics file (--check compared the values)
        assert ('Results' in model) == (folder / 'results' / f'{path.stem}.json').is_file()


@pytest.mark.parametrize('family, data, modality, tsn', [
    ('synthetic', 'Synthetic motion benchmark', 'RGB',
     'tsn_scratch-r18_1xb16-1x1x5-60e_synthetic-rgb'),
    ('utd_mhad', 'UTD-MHAD', 'Depth', 'tsn_scratch-r18_1xb16-1x1x5-60e_utd-mhad-depth')])
def test_scratch_family_metafile_is_derived_from_its_configs_and_results(zoo_table, family, data,
                                                                         modality, tsn):
    """The from-scratch families (hyperframe models and mmaction2's baselines): metafile
    current, accuracy exactly where a test-metrics file is committed."""
    folder = CONFIG_ROOT / family
    assert zoo_table.main([str(folder), '--check']) == 0
    models = {model['Name']: model
              for model in yaml.safe_load((folder / 'metafile.yml').read_text())['Models']}
    assert sorted(models) == sorted(path.stem for path in folder.glob('*.py'))
    for name, model in models.items():
        assert model['Metadata']['Pretrained'] == 'None'
        assert model['Metadata']['Training Data'] == data
        assert model['Modality'] == modality
        metrics = folder / 'results' / f'{name}.json'
        assert ('Results' in model) == metrics.is_file()
        if metrics.is_file():
            top1 = json.loads(metrics.read_text())['acc/top1']
            assert model['Results'][0]['Metrics']['Top 1 Accuracy'] == round(100 * top1, 2)
    # TSN: one view is the 5 segments, whether 5 one-frame test clips or one clip of 5 frames
    metadata = models[tsn]['Metadata']
    assert (metadata['Frames'], metadata['Architecture']) == (1, 'ResNet-18')
    clips = 3 if family == 'utd_mhad' else 1
    assert f'| [{tsn}]({tsn}.py) | ResNet-18 | None | 5 segments | {clips} clips' \
        in (folder / 'README.md').read_text()



def test_imagenet_family_metafile_is_derived_from_its_configs(zoo_table):
    """The ImageNet-initialised UTD-MHAD family: metafile current; every row ImageNet but the
    from-scratch control; 112x112 but where the name gives another side (``-128px_``)."""
    folder = CONFIG_ROOT / 'utd_mhad_imagenet'
    assert zoo_table.main([str(folder), '--check']) == 0
    models = {model['Name']: model
              for model in yaml.safe_load((folder / 'metafile.yml').read_text())['Models']}
    assert sorted(models) == sorted(path.stem for path in folder.glob('*.py'))
    for name, model in models.items():
        pretrained = 'None' if name.startswith('hyperframe_scratch-') else 'ImageNet'
        side = re.search(r'-(\d+)px_', name)
        side = side.group(1) if side else '112'
        assert (model['Metadata']['Pretrained'], model['Metadata']['Resolution'],
                model['Metadata']['Training Data'], model['Modality']) == (
                    pretrained, f'{side}x{side}', 'UTD-MHAD', 'Depth'), name
        assert ('Results' in model) == (folder / 'results' / f'{name}.json').is_file()

@pytest.mark.parametrize('family', FAMILIES + ('synthetic', 'utd_mhad', 'utd_mhad_imagenet'))
def test_readme_table_matches_the_metafile(family):
    folder = CONFIG_ROOT / family
    readme = (folder / 'README.md').read_text()
    assert f'python tools/analysis/zoo_table.py configs/hyperframes/{family} --readme ' \
           '--metafile' in readme
    models = yaml.safe_load((folder / 'metafile.yml').read_text())['Models']
    rows = _table_rows(readme)
    assert [row[0] for row in rows] == [f'[{model["Name"]}]({model["Name"]}.py)'
                                        for model in models]
    for row, model in zip(rows, models):
        assert row[5] == model['Metadata']['FLOPs'].rstrip('G')
        assert row[6] == model['Metadata']['Parameters'].rstrip('M')
        assert re.fullmatch(r'\d+\.\d', row[7]), row  # latency was measured for the table
        if 'Results' in model:
            metrics = model['Results'][0]['Metrics']
            assert row[8:] == [f'{metrics["Top 1 Accuracy"]:.2f}',
                               f'{metrics["Top 5 Accuracy"]:.2f}']
        else:
            assert row[8:] == ['not measured here', 'not measured here']


@pytest.fixture
def small_family(tmp_path):
    """A family folder holding one config, beside a link to the real configs/_base_."""
    configs = tmp_path / 'configs'
    folder = configs / 'hyperframes' / 'fam'
    folder.mkdir(parents=True)
    os.symlink(REPO / 'configs/_base_', configs / '_base_')
    shutil.copy(CONFIG_ROOT / 'hmdb51' / f'{HMDB_R18}.py', folder)
    (folder / 'README.md').write_text('# fam\n\n<!-- zoo_table: start -->\nold\n'
                                      '<!-- zoo_table: end -->\n\nafter\n')
    return folder


def test_zoo_table_writes_checks_and_reads_results(zoo_table, small_family):
    folder = str(small_family)
    assert zoo_table.main([folder, '--check']) == 1  # no metafile yet
    assert zoo_table.main([folder, '--metafile', '--readme', '--repeats', '2', '--warmup',
                           '0']) == 0
    assert zoo_table.main([folder, '--check']) == 0
    readme = (small_family / 'README.md').read_text()
    assert readme.startswith('# fam\n\n<!-- zoo_table: start -->\n| config |')
    assert readme.endswith('<!-- zoo_table: end -->\n\nafter\n') and 'old' not in readme
    assert 'CPU latency: median of 2 calls after 0 warm-up, the models interleaved round by ' \
        'round, batch 1, one view. Machine: ' in readme and ' with 1 thread(s), kernels ' in readme
    (row, ) = _table_rows(readme)
    assert row[1:5] == ['HyperResNet-18', 'ImageNet', '5 × 2', '10 clips × 3 crops']
    assert float(row[7]) > 0

    metafile = small_family / 'metafile.yml'
    metafile.write_text(metafile.read_text().replace('Batch Size: 32', 'Batch Size: 16'))
    assert zoo_table.main([folder, '--check']) == 1

    results = small_family / 'results'
    results.mkdir()
    (results / f'{HMDB_R18}.json').write_text(json.dumps(
        {'acc/top1': 0.53125, 'acc/top5': 0.8125, 'acc/mean1': 0.5, 'time': 0.1}))
    assert zoo_table.main([folder, '--metafile', '--readme', '--no-latency']) == 0
    (model, ) = yaml.safe_load(metafile.read_text())['Models']
    assert model['Results'] == [dict(Dataset='HMDB51', Task='Action Recognition',
                                     Metrics={'Top 1 Accuracy': 53.12, 'Top 5 Accuracy': 81.25})]
    (row, ) = _table_rows((small_family / 'README.md').read_text())
    assert row[7:] == ['not measured here', '53.12', '81.25']

    (results / f'{HMDB_R18}.json').write_text(json.dumps({'acc/mean1': 0.5}))
    with pytest.raises(ValueError, match=r"no \['acc/top1', 'acc/top5'\] in it"):
        zoo_table.main([folder, '--check'])


def test_zoo_table_refuses_a_readme_without_markers(zoo_table, tmp_path):
    readme = tmp_path / 'README.md'
    readme.write_text('# no table here\n')
    with pytest.raises(ValueError, match='needs the lines <!-- zoo_table: start -->'):
        replace_section(readme, '| table |\n', zoo_table.TABLE_START, zoo_table.TABLE_END)
    assert readme.read_text() == '# no table here\n'


def test_zoo_table_refuses_a_misnamed_config(zoo_table, small_family):
    wrong = small_family / HMDB_R18.replace('8xb32', '8xb16')
    (small_family / f'{HMDB_R18}.py').rename(wrong.with_suffix('.py'))
    with pytest.raises(ValueError, match='the name says batch 16, the config has 32'):
        zoo_table.main([str(small_family), '--check'])


def test_one_view_loads_no_checkpoint_into_any_stream():
    """A fast/slow model with a backbone per stream: each stream's ``pretrained`` is dropped,
    and the view's sampler takes one clip."""
    sampler = dict(type='HyperframeSampleFrames', num_frames=5, num_clips=3, test_mode=True)
    cfg = Config(dict(
        model=dict(type='FastSlowRecognizer', share_backbone=False, backbone=dict(
            fast=dict(type='HyperResNet', depth=18, pretrained='fast.pth'),
            slow=dict(type='HyperResNet', depth=18, pretrained=None))),
        val_pipeline=[dict(type='DecordInit'), sampler, dict(type='PackActionInputs')]))
    options = view_options(cfg)
    assert {key for key in options if key != 'test_pipeline'} == {
        'model.backbone.fast.pretrained', 'model.backbone.slow.pretrained'}
    assert options['test_pipeline'][1] == dict(sampler, num_clips=1)
    single = Config(dict(cfg.to_dict(), model=dict(backbone=dict(type='HyperResNet', depth=18,
                                                                  pretrained='a.pth'))))
    assert {key for key in view_options(single) if key != 'test_pipeline'} == {
        'model.backbone.pretrained'}
