"""Scores from ``tools/test.py --dump`` predictions: exact values on hand-made dumps."""
import json
import math
import pickle

import pytest
import torch

from hyperframes_mm.evaluation import accuracy_by_group, class_groups_of
from hyperframes_mm.evaluation.predictions import load_predictions


def _dump(path, pairs, as_tensors=True):
    """A dump as mmaction2's DumpResults writes it: one dict per sample."""
    samples = [dict(pred_label=torch.tensor([pred]) if as_tensors else pred,
                    gt_label=torch.tensor([truth]) if as_tensors else truth,
                    pred_score=torch.zeros(4)) for pred, truth in pairs]
    path.write_bytes(pickle.dumps(samples))
    return path


def test_top1_mean_class_and_groups(tmp_path):
    # label 0: 2 of 2 right; label 1: 1 of 2; label 2: 0 of 1; label 3 never appears
    dump = _dump(tmp_path / 'p.pkl', [(0, 0), (0, 0), (1, 1), (0, 1), (1, 2)])
    result = accuracy_by_group(dump, dict(fast=[0, 1], slow=[2], empty=[3]))
    assert result['top1'] == pytest.approx(3 / 5)
    assert result['mean_class'] == pytest.approx((1 + 0.5 + 0) / 3)
    assert result['fast'] == pytest.approx(3 / 4)
    assert result['slow'] == 0.0
    assert math.isnan(result['empty'])


def test_plain_integer_labels(tmp_path):
    dump = _dump(tmp_path / 'p.pkl', [(2, 2), (1, 2)], as_tensors=False)
    assert accuracy_by_group(dump, {})['top1'] == 0.5


@pytest.mark.parametrize('protocol', [2, pickle.HIGHEST_PROTOCOL])
def test_a_dump_as_mmengine_writes_it(tmp_path, protocol):
    """mmengine's dump (protocol 2) and a plain pickle alike: tensors come back as tensors."""
    samples = [dict(pred_label=torch.tensor([1]), gt_label=torch.tensor([1]),
                    pred_score=torch.tensor([0.25, 0.75]), num_classes=2)]
    path = tmp_path / 'p.pkl'
    path.write_bytes(pickle.dumps(samples, protocol=protocol))
    loaded = load_predictions(path)
    assert torch.equal(loaded[0]['pred_score'], samples[0]['pred_score'])
    assert accuracy_by_group(path, {})['top1'] == 1.0


class _Payload:
    def __reduce__(self):
        return (open, (str(_Payload.target), 'w'))


def test_a_pickle_that_would_run_code_is_refused_by_name(tmp_path):
    _Payload.target = tmp_path / 'ran'
    path = tmp_path / 'crafted.pkl'
    path.write_bytes(pickle.dumps([dict(pred_label=0, gt_label=0, extra=_Payload())]))
    with pytest.raises(pickle.UnpicklingError, match=r'crafted\.pkl: refused (builtins|io)\.open: '
                       r'a predictions dump'):
        accuracy_by_group(path, {})
    assert not _Payload.target.exists()


def test_empty_dump_names_the_file(tmp_path):
    dump = _dump(tmp_path / 'empty.pkl', [])
    with pytest.raises(ValueError, match='empty.pkl: no predictions'):
        accuracy_by_group(dump, {})


def test_groups_from_meta(tmp_path):
    from hyperframes_mm.datasets.synthetic import make_synthetic_dataset
    make_synthetic_dataset(tmp_path, dict(train=1, val=1), preset='tiny', workers=1)
    meta = json.loads((tmp_path / 'meta.json').read_text())
    assert class_groups_of(tmp_path) == {
        group: [meta['classes'].index(name) for name in names]
        for group, names in meta['groups'].items()}
    assert class_groups_of(tmp_path) == dict(fast=[0, 1], slow=[2, 3])
