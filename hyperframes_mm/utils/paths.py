"""Where a tool may write: never over what it reads."""
import os
from typing import Dict, Union

PathLike = Union[str, 'os.PathLike[str]']


def same_file(first: PathLike, second: PathLike) -> bool:
    """Whether two paths name one file: the same spelling, a link to it, or a hard link."""
    if os.path.exists(first) and os.path.exists(second):
        return os.path.samefile(first, second)
    return os.path.realpath(first) == os.path.realpath(second)


def refuse_overwrite(outputs: Dict[str, PathLike], inputs: Dict[str, PathLike]) -> None:
    """Refuse, before any work, outputs that would destroy what the run reads or writes
    (the checkpoint a model is loaded from, its config, a source video, another output of the
    same run) or that name a directory.

    Args:
        outputs (dict): what each file the tool writes is (``'--out'``, ``'the report'``) ->
            its path.
        inputs (dict): what each file the tool reads is -> its path (None: not given).

    Raises:
        ValueError: naming the output, its path and the file it would replace.
    """
    written = list(outputs.items())
    for index, (name, path) in enumerate(written):
        if os.path.isdir(path) or str(path).endswith(('/', os.sep)):
            # a path ending in a separator names a directory even before it exists: writing
            # it as a file would leave a file where the user expects a folder
            raise ValueError(f'{name} {path} is a directory; name the file to write in it')
        others = [(what, other) for what, other in inputs.items() if other is not None]
        others += [(what, other) for what, other in written[:index]]
        for what, other in others:
            if same_file(path, other):
                raise ValueError(f'{name} {path} is {what} ({other}): writing it would destroy '
                                 f'that file; write to another path')
