"""What HyperframeRunner says when it loads a checkpoint from an unexpected place: a resume whose
last_checkpoint names a file outside the work dir, and a 2D network's file given as load_from."""
from pathlib import Path

import pytest
import torch
import torchvision

from hyperframes_mm.engine import CheckpointMismatchError
from hyperframes_mm.engine.checkpoint import first_names
from hyperframes_mm.engine.runner import latest_intact_checkpoint


def _checkpoints(folder: Path, epochs: int) -> None:
    folder.mkdir()
    for epoch in range(1, epochs + 1):
        torch.save({'state_dict': {'w': torch.full((64, ), float(epoch))}, 'meta': {}},
                   folder / f'epoch_{epoch}.pth')


def test_resume_in_a_copy_without_the_file_it_names_reads_its_own_or_says_it_does_not(
        tmp_path):
    """A work dir copied, then its newest checkpoint deleted: last_checkpoint still names the
    original's, which the copy resumed from without a word while saving into itself."""
    original, copy = tmp_path / 'run', tmp_path / 'copy'
    _checkpoints(original, 2)
    _checkpoints(copy, 1)
    (copy / 'last_checkpoint').write_text(str(original / 'epoch_2.pth'))
    warnings = []
    assert latest_intact_checkpoint(str(copy), warnings.append) == str(copy / 'epoch_1.pth')
    assert warnings == [
        f'last_checkpoint in {copy} names {original / "epoch_2.pth"}, outside this work dir, '
        'and the config\'s checkpoint hook has no out_dir; resuming from this work dir\'s '
        f'newest intact checkpoint {copy / "epoch_1.pth"} instead.']
    # none of its own: the outside file, named
    (copy / 'epoch_1.pth').unlink()
    warnings.clear()
    assert latest_intact_checkpoint(str(copy), warnings.append) == str(original / 'epoch_2.pth')
    assert warnings == [
        f'last_checkpoint in {copy} names {original / "epoch_2.pth"}, outside this work dir, '
        'and the config\'s checkpoint hook has no out_dir; this work dir holds no checkpoint of '
        f'its own: resuming from {original / "epoch_2.pth"} itself.']
    # the checkpoint hook saves under out_dir, and last_checkpoint names its files: followed
    _checkpoints(tmp_path / 'logs', 1)
    (tmp_path / 'logs' / 'last_checkpoint').write_text(str(original / 'epoch_2.pth'))
    warnings.clear()
    assert latest_intact_checkpoint(str(tmp_path / 'logs'), warnings.append,
                                    str(tmp_path)) == str(original / 'epoch_2.pth')
    assert warnings == []
    # an out_dir elsewhere is no reason to read the file
    assert latest_intact_checkpoint(str(tmp_path / 'logs'), warnings.append,
                                    str(copy)) == str(tmp_path / 'logs' / 'epoch_1.pth')
    assert warnings == [
        f'last_checkpoint in {tmp_path / "logs"} names {original / "epoch_2.pth"}, outside this '
        f'work dir, not in the checkpoint hook\'s out_dir {copy}; resuming from this work '
        f'dir\'s newest intact checkpoint {tmp_path / "logs" / "epoch_1.pth"} instead.']


def test_the_runner_resumes_with_the_out_dir_of_its_checkpoint_hook(runner_of, tmp_path):
    from hyperframes_mm.engine.runner import checkpoint_out_dir
    original = tmp_path / 'run'
    _checkpoints(original, 2)
    _checkpoints(tmp_path / 'work', 1)
    (tmp_path / 'work' / 'last_checkpoint').write_text(str(original / 'epoch_2.pth'))
    for out_dir, resumed, said in ((None, tmp_path / 'work' / 'epoch_1.pth', 1),
                                   (str(tmp_path), original / 'epoch_2.pth', 0)):
        runner = runner_of(resume=True, **{'default_hooks.checkpoint.out_dir': out_dir})
        assert checkpoint_out_dir(runner.cfg) == out_dir
        started, warned = [], []
        runner.resume = started.append
        runner.logger.warning = warned.append
        runner.load_or_resume()
        assert started == [str(resumed)]
        assert sum('outside this work dir' in line for line in warned) == said


def test_load_from_a_2d_network_s_file_says_it_is_the_backbone_s_pretrained(runner_of,
                                                                             tmp_path):
    """An ImageNet file of torchvision's ResNet-18 as load_from: refused (its keys are not the
    recognizer's), and the refusal now says where such a file goes."""
    runner = runner_of()
    path = tmp_path / 'resnet18_imagenet.pth'
    imagenet = torchvision.models.resnet18().state_dict()
    torch.save(imagenet, path)
    with pytest.raises(CheckpointMismatchError) as refused:
        runner.load_checkpoint(str(path))
    assert str(refused.value) == (
        f'{path}: no weight of the checkpoint is one of the model of the config, so loading it '
        f'would change nothing. It holds {first_names(list(imagenet))}; the model has '
        f'{first_names(list(runner.model.state_dict()))}. Its weights are a backbone\'s alone, '
        'as a 2D network\'s file (an ImageNet ResNet\'s) holds them: such a file goes in '
        '`model.backbone.pretrained` (the backbone reads its layout and inflates its first '
        'conv), not in load_from.')
    assert first_names(list(imagenet)).startswith('conv1.weight, bn1.weight, bn1.bias, ...')
