"""The UTD-MHAD families read every choice on training subjects: HF_UTD_VAL_SUBJECT holds out
one training subject for validation, and whatever it is set to, the test stays the test
subjects' list (so the test is never what a choice was read on)."""
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


def test_a_test_subject_cannot_validate(monkeypatch):
    monkeypatch.setenv('HF_UTD_VAL_SUBJECT', '2')
    with pytest.raises(ValueError, match='HF_UTD_VAL_SUBJECT=.2.*1, 3, 5 or 7'):
        Config.fromfile(CONFIGS[0])
