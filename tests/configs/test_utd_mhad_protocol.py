"""The UTD-MHAD families read every choice on training subjects: HF_UTD_VAL_SUBJECT holds out
one training subject for validation (by number, of UTD-MHAD or of another data set in its
layout), and whatever it is set to, the test stays the test subjects' list (so the test is
never what a choice was read on)."""
from pathlib import Path

import pytest
from mmengine.config import Config

from .conftest import CONFIG_ROOT

CONFIGS = sorted(str(path) for family in ('utd_mhad', 'utd_mhad_imagenet')
                 for path in (CONFIG_ROOT / family).glob('*.py'))


def _lists(config: Config):
    return tuple(Path(loader.dataset.ann_file).relative_to(config.data_root).as_posix()
                 for loader in (config.train_dataloader, config.val_dataloader,
                                config.test_dataloader))


@pytest.mark.parametrize('path', CONFIGS, ids=lambda path: Path(path).stem[:40])
def test_validation_subject_moves_train_and_val_never_test(path, monkeypatch):
    monkeypatch.delenv('HF_UTD_VAL_SUBJECT', raising=False)
    assert _lists(Config.fromfile(path)) == (
        'cross_subject_train.txt', 'cross_subject_test.txt', 'cross_subject_test.txt')
    monkeypatch.setenv('HF_UTD_VAL_SUBJECT', '5')
    assert _lists(Config.fromfile(path)) == (
        'cross_subject_val/s5_train.txt', 'cross_subject_val/s5_val.txt',
        'cross_subject_test.txt')


def test_the_fold_is_a_subject_number_of_whichever_data_set(monkeypatch):
    """UTD-MHAD's converter writes folds for its training subjects only (a test subject has no
    lists to validate on); another data set in its layout names its own subjects."""
    monkeypatch.setenv('HF_UTD_VAL_SUBJECT', '9')
    assert _lists(Config.fromfile(CONFIGS[0])) == (
        'cross_subject_val/s9_train.txt', 'cross_subject_val/s9_val.txt',
        'cross_subject_test.txt')
    monkeypatch.setenv('HF_UTD_VAL_SUBJECT', 'all')
    with pytest.raises(ValueError, match="HF_UTD_VAL_SUBJECT='all': .*by its number"):
        Config.fromfile(CONFIGS[0])
