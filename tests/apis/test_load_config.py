"""load_config: overrides merged into a copy, and the two names of the test pipeline kept one."""
import pytest

from hyperframes_mm.apis import example_inputs, load_config

from ..conftest import TINY_CONFIG


def _loader_pipeline(cfg):
    dataset = cfg.test_dataloader.dataset
    return dataset.get('dataset', dataset).pipeline


@pytest.mark.parametrize('key', ['test_dataloader.dataset.pipeline', 'test_pipeline'])
def test_an_override_of_either_test_pipeline_reaches_the_other(key):
    """--cfg-options test_dataloader.dataset.pipeline.1.num_clips=4 changed what tools/test.py
    runs, while get_flops, latency, export and streaming read test_pipeline's 2 clips."""
    plain = load_config(TINY_CONFIG)
    sampler = next(index for index, step in enumerate(plain.test_pipeline)
                   if 'num_clips' in step)
    assert plain.test_pipeline[sampler].num_clips == 2
    assert example_inputs(plain).shape[1] == 2
    if key.startswith('test_dataloader') and 'dataset' in plain.test_dataloader.dataset:
        key = 'test_dataloader.dataset.dataset.pipeline'  # the list inside a wrapper
    cfg = load_config(TINY_CONFIG, {f'{key}.{sampler}.num_clips': 4})
    assert cfg.test_pipeline[sampler].num_clips == 4
    assert _loader_pipeline(cfg)[sampler].num_clips == 4
    assert example_inputs(cfg).shape[1] == 4
    assert load_config(TINY_CONFIG).test_pipeline[sampler].num_clips == 2  # a copy


def test_pipelines_the_file_does_not_link_stay_as_given(tmp_path):
    config = tmp_path / 'separate.py'
    config.write_text("test_pipeline = [dict(type='A', n=1)]\n"
                      "test_dataloader = dict(dataset=dict(pipeline=[dict(type='B', n=1)]))\n")
    cfg = load_config(config, {'test_pipeline.0.n': 2})
    assert (cfg.test_pipeline[0].n, cfg.test_dataloader.dataset.pipeline[0].n) == (2, 1)
