"""Reading mmaction2 ``VideoDataset`` lists (``path label ...`` per line): the one reader the
plugin's validation, frame-cache builder, doctor and probes share, so that they agree on what a
line is. Each caller keeps its own rules about what a line may hold (the validator refuses a
blank line, the cache builder skips it). Kept free of mmaction2 imports, for the cache workers.
"""
from pathlib import Path
from typing import Iterator, List, NamedTuple, Union


class ListLine(NamedTuple):
    """One line of a video list: its 1-based ``number``, the ``text`` without its line break, and
    its ``fields`` (``text.strip()`` split at the delimiter; ``[]`` for a blank line)."""
    number: int
    text: str
    fields: List[str]

    @property
    def blank(self) -> bool:
        return not self.fields


def read_list_lines(ann_file: Union[str, Path], delimiter: str = ' ') -> Iterator[ListLine]:
    """The lines of a ``VideoDataset`` list, blank ones included, in order."""
    with open(ann_file, encoding='utf-8') as handle:
        for number, line in enumerate(handle, start=1):
            text = line.rstrip('\n\r')
            yield ListLine(number, text, text.strip().split(delimiter) if text.strip() else [])
