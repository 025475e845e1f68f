"""Scores from the predictions ``tools/test.py --dump`` writes (mmaction2's ``DumpResults``)."""
import pickle
from pathlib import Path
from typing import Dict, List, Union

import numpy as np


def accuracy_by_group(predictions: Union[str, Path],
                      groups: Dict[str, List[int]]) -> Dict[str, float]:
    """Top-1, mean class accuracy and the top-1 of each group of labels.

    Args:
        predictions: a ``.pkl`` of dumped samples (``pred_label``, ``gt_label`` each).
        groups: group name -> its labels (e.g. the synthetic benchmark's fast/slow classes).

    Returns:
        dict: ``top1``, ``mean_class`` and one entry per group (NaN for a group with no sample).
    """
    with open(predictions, 'rb') as f:
        samples = pickle.load(f)
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
