"""Scores from the predictions ``tools/test.py --dump`` writes (mmaction2's ``DumpResults``)."""
import io
import pickle
from pathlib import Path
from typing import Dict, List, Union

import numpy as np

#: what a dump of mmaction2's data samples (dicts of tensors, numbers and lists, pickled by
#: mmengine's ``dump``) names besides plain containers; nothing that runs code
_DUMP_GLOBALS = {('torch._utils', '_rebuild_tensor_v2'), ('collections', 'OrderedDict'),
                 ('_codecs', 'encode'), ('torch', 'Size')}


def _storage_from_bytes(data: bytes):
    """A tensor's storage as a dump holds it: ``torch.save`` bytes, read weights-only (torch's
    own ``_load_from_bytes`` reads them with every global allowed)."""
    import torch
    return torch.load(io.BytesIO(data), weights_only=True)


class _DumpUnpickler(pickle.Unpickler):
    """Unpickles a predictions dump and nothing else: a ``.pkl`` is a program, and one passed
    as predictions must not run."""

    def __init__(self, handle, path) -> None:
        super().__init__(handle)
        self.path = path

    def find_class(self, module: str, name: str):
        if (module, name) == ('torch.storage', '_load_from_bytes'):
            return _storage_from_bytes
        if (module, name) in _DUMP_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(
            f'{self.path}: refused {module}.{name}: a predictions dump (tools/test.py --dump) '
            'holds tensors, numbers and containers only')


def load_predictions(path: Union[str, Path]) -> list:
    """The samples of a ``tools/test.py --dump`` file, unpickled with only the globals such a
    dump needs (:class:`_DumpUnpickler`).

    Raises:
        pickle.UnpicklingError: naming the file and the global it refused.
    """
    with open(path, 'rb') as handle:
        return _DumpUnpickler(handle, path).load()


def accuracy_by_group(predictions: Union[str, Path],
                      groups: Dict[str, List[int]]) -> Dict[str, float]:
    """Top-1, mean class accuracy and the top-1 of each group of labels.

    Args:
        predictions: a ``.pkl`` of dumped samples (``pred_label``, ``gt_label`` each).
        groups: group name -> its labels (e.g. the synthetic benchmark's fast/slow classes).

    Returns:
        dict: ``top1``, ``mean_class`` and one entry per group (NaN for a group with no sample).
    """
    samples = load_predictions(predictions)
    if not samples:
        raise ValueError(f'{predictions}: no predictions')
    pred = np.array([int(sample['pred_label']) for sample in samples])
    truth = np.array([int(sample['gt_label']) for sample in samples])
    result = dict(top1=float((pred == truth).mean()),
                  mean_class=float(np.mean([(pred[truth == label] == label).mean()
                                            for label in np.unique(truth)])))
    for group, labels in groups.items():
        mask = np.isin(truth, labels)
        result[group] = float((pred[mask] == truth[mask]).mean()) if mask.any() else float('nan')
    return result


def class_groups_of(data_root: Union[str, Path]) -> Dict[str, List[int]]:
    """The synthetic benchmark's groups (``fast``/``slow``) as labels, from its ``meta.json``."""
    from ..datasets.synthetic import load_meta
    return groups_as_labels(load_meta(data_root))


def groups_as_labels(meta: Dict) -> Dict[str, List[int]]:
    """A synthetic ``meta.json``'s groups of class names as groups of labels."""
    classes = meta['classes']
    return {group: [classes.index(name) for name in names]
            for group, names in meta['groups'].items()}
