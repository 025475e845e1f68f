"""Reading mmaction2 ``VideoDataset`` lists (``path label ...`` per line): the one reader the
plugin's validation, ``CheckedVideoDataset``, frame-cache builder, doctor and probes share, so
that they agree on what a line is. Each caller keeps its own rules about what a line may hold;
a blank line is refused here, for every reader of a list that mmaction2's ``VideoDataset`` also
reads (the validator, the cache builder), with one message. Kept free of mmaction2 imports, for
the cache workers.
"""
import codecs
import io
import re
from pathlib import Path
from typing import Iterator, List, NamedTuple, Optional, Tuple, Union

#: a label as a list writes one: ASCII digits, a minus sign for a negative one. Python's
#: ``int()`` also reads ``'1_0'`` as 10, ``'+2'`` as 2 and other scripts' digits (``'٣'`` as 3),
#: which no list means as those numbers
_LABEL = re.compile(r'-?[0-9]+')


class AnnotationError(ValueError):
    """A malformed annotation line; the message starts with ``file:line``.

    Attributes:
        ann_file (str): the annotation file.
        line (int): 1-based line number (0 when the error concerns the whole file).
    """

    def __init__(self, message: str, ann_file: str = '', line: int = 0) -> None:
        super().__init__(message)
        self.ann_file = ann_file
        self.line = line


class ListLine(NamedTuple):
    """One line of a video list: its 1-based ``number``, the ``text`` without its line break, and
    its ``fields`` (``text.strip()`` split at the delimiter; ``[]`` for a blank line)."""
    number: int
    text: str
    fields: List[str]

    @property
    def blank(self) -> bool:
        return not self.fields


def parse_label(text: str) -> Optional[int]:
    """The integer a list's label field writes (ASCII digits, an optional leading ``-``), or
    None for any other text: every reader of labels takes the same fields as numbers."""
    return int(text) if _LABEL.fullmatch(text) else None


def _position(text: str) -> Tuple[int, int]:
    """1-based ``(line, column)`` just past ``text``, lines broken as text-mode ``open`` breaks
    them (``\\n``, ``\\r\\n`` and a lone ``\\r``)."""
    lines = text.replace('\r\n', '\n').replace('\r', '\n').split('\n')
    return len(lines), len(lines[-1]) + 1


def _not_text(ann_file: str, number: int, column: int, what: str) -> AnnotationError:
    return AnnotationError(
        f'{ann_file}:{number}: {what} at column {column}: not a UTF-8 text list (a list saved '
        'as Latin-1 or UTF-16, or a file that is not a list, such as a video; save it as UTF-8)',
        ann_file, number)


def _blank_line(ann_file: str, number: int, text: str, last: int,
                total: int) -> AnnotationError:
    """A blank line refused, with what to remove: the usual one ends the list (``echo >>``,
    editors), and mmaction2's own parser, which the plugin cannot change, breaks on it too."""
    if number <= last:
        fix = 'remove the line'
    elif total == number:
        fix = 'remove the blank line at the end of the list'
    else:
        fix = (f'remove the {total - last} blank lines at the end of the list, lines '
               f'{number}-{total}')
    return AnnotationError(f'{ann_file}:{number}: empty line (mmaction2 would turn it into a '
                           f'sample with no video; {fix}): {text!r}', ann_file, number)


def read_list_lines(ann_file: Union[str, Path], delimiter: str = ' ',
                    blank_lines: bool = True) -> Iterator[ListLine]:
    """The lines of a ``VideoDataset`` list, in order.

    The list is read as UTF-8, and a leading byte-order mark is dropped: editors that write one
    would otherwise glue an invisible ``'\\ufeff'`` to the first path, which then "does not
    exist" while it looks right in every message.

    Args:
        ann_file (str | Path): the list.
        delimiter (str): field separator. Defaults to ``' '``.
        blank_lines (bool): yield blank (or whitespace-only) lines; False refuses the first
            one, as mmaction2's ``VideoDataset`` reads it as a sample with no video. A list of
            blank lines alone is yielded all the same, for its reader to call it empty.
            Defaults to True.

    Raises:
        AnnotationError: ``file:line`` of the first byte that is not UTF-8 (another encoding,
            or not a text file), or of a NUL character, which no path holds and which is what
            UTF-16 text without a byte-order mark and binary files decode to; of the first
            blank line, with ``blank_lines=False``, saying which lines to remove.
    """
    data = Path(ann_file).read_bytes()
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    try:
        text = data.decode('utf-8')
    except UnicodeDecodeError as error:
        number, column = _position(data[:error.start].decode('utf-8'))
        raise _not_text(str(ann_file), number, column,
                        f'byte {data[error.start]:#04x} is not UTF-8') from None
    nul = text.find('\0')
    if nul >= 0:
        raise _not_text(str(ann_file), *_position(text[:nul]), 'a NUL character')
    # newline=None: the line breaks text-mode open() reads, the same lines as before the bytes
    # were checked
    lines = [line.rstrip('\n\r') for line in io.StringIO(text, newline=None)]
    last = max((number for number, line in enumerate(lines, start=1) if line.strip()), default=0)
    for number, line in enumerate(lines, start=1):
        if last and not blank_lines and not line.strip():
            raise _blank_line(str(ann_file), number, line, last, len(lines))
        yield ListLine(number, line, line.strip().split(delimiter) if line.strip() else [])
