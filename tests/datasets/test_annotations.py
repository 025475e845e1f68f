"""datasets/annotations.py: the one reader of VideoDataset lists."""
import codecs

import pytest

from hyperframes_mm.datasets.annotations import AnnotationError, ListLine, read_list_lines
from hyperframes_mm.datasets.bad_video import check_video_list


def test_lines_keep_their_numbers_blank_lines_and_fields(tmp_path):
    path = tmp_path / 'list.txt'
    path.write_text('a/x.mp4 3\n\n  b y.mp4 1 2  \r\nc.mp4')
    lines = list(read_list_lines(path))
    assert lines == [ListLine(1, 'a/x.mp4 3', ['a/x.mp4', '3']), ListLine(2, '', []),
                     ListLine(3, '  b y.mp4 1 2  ', ['b', 'y.mp4', '1', '2']),
                     ListLine(4, 'c.mp4', ['c.mp4'])]
    assert [line.blank for line in lines] == [False, True, False, False]
    path.write_text('b y.mp4,1\n')
    assert list(read_list_lines(path, ','))[0].fields == ['b y.mp4', '1']


@pytest.mark.parametrize('text, number, fix, line', [
    ('a.mp4 0\nb.mp4 1\n\n', 3, 'remove the blank line at the end of the list', ''),
    ('a.mp4 0\nb.mp4 1\n  \n', 3, 'remove the blank line at the end of the list', '  '),
    ('a.mp4 0\nb.mp4 1\n\n \r\n', 3,
     'remove the 2 blank lines at the end of the list, lines 3-4', ''),
    ('a.mp4 0\n\nb.mp4 1\n', 2, 'remove the line', ''),
])
def test_a_blank_line_is_refused_naming_what_to_remove(tmp_path, text, number, fix, line):
    """One blank line at the end (``echo >>``, editors) stopped training with "empty line" and
    no word of what to do, while the frame-cache builder read the same list."""
    path = tmp_path / 'list.txt'
    path.write_bytes(text.encode())
    with pytest.raises(AnnotationError) as info:
        list(read_list_lines(path, blank_lines=False))
    assert str(info.value) == (f'{path}:{number}: empty line (mmaction2 would turn it into a '
                               f'sample with no video; {fix}): {line!r}')
    assert (info.value.ann_file, info.value.line) == (str(path), number)
    assert len(list(read_list_lines(path))) == text.count('\n')  # yielded by default
    path.write_text('\n \n')  # blank lines alone: their reader calls the list empty
    assert list(read_list_lines(path, blank_lines=False)) == [ListLine(1, '', []),
                                                              ListLine(2, ' ', [])]


def test_a_byte_order_mark_is_dropped(tmp_path):
    """Editors that save "UTF-8 with BOM" put U+FEFF before the first path: kept, it would make
    that video "not found" with the character invisible in the message."""
    path = tmp_path / 'list.txt'
    path.write_bytes(codecs.BOM_UTF8 + 'a/x.mp4 3\nb.mp4 1\n'.encode())
    assert list(read_list_lines(path)) == [ListLine(1, 'a/x.mp4 3', ['a/x.mp4', '3']),
                                           ListLine(2, 'b.mp4 1', ['b.mp4', '1'])]


# A video whose MP4 header is valid UTF-8 and whose first payload byte is not.
MP4_START = b'\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomiso2\x00\x00\x08\x00mdat\x89\xa7'


@pytest.mark.parametrize('data, line, message', [
    ('a.mp4 0\ncafé.mp4 1\n'.encode('latin-1'), 2, 'byte 0xe9 is not UTF-8 at column 4'),
    # line breaks count as text-mode open() counts them: a lone \r ends a line
    ('a.mp4 0\rb.mp4 1\r\ncafé.mp4 2\n'.encode('latin-1'), 3,
     'byte 0xe9 is not UTF-8 at column 4'),
    (codecs.BOM_UTF8 + 'a.mp4 0\ncafé.mp4 1\n'.encode('latin-1'), 2,
     'byte 0xe9 is not UTF-8 at column 4'),
    ('a.mp4 0\n'.encode('utf-16'), 1, 'byte 0xff is not UTF-8 at column 1'),
    ('a.mp4 0\n'.encode('utf-16-le'), 1, 'a NUL character at column 2'),
    (MP4_START, 1, 'byte 0x89 is not UTF-8 at column 33'),
    ('a.mp4 0\nb.mp4\x00 1\n'.encode(), 2, 'a NUL character at column 6'),
])
def test_what_is_not_utf8_text_names_file_line_and_column(tmp_path, data, line, message):
    path = tmp_path / 'list.txt'
    path.write_bytes(data)
    with pytest.raises(AnnotationError) as info:
        list(read_list_lines(path))
    assert str(info.value) == (
        f'{path}:{line}: {message}: not a UTF-8 text list (a list saved as Latin-1 or UTF-16, '
        'or a file that is not a list, such as a video; save it as UTF-8)')
    assert (info.value.ann_file, info.value.line) == (str(path), line)
    assert isinstance(info.value, ValueError)  # callers that catch ValueError still do


@pytest.mark.parametrize('line, delimiter, kwargs, where, number', [
    ('a.mp4  0', ' ', {}, 'is repeated', 2),
    ('a.mp4  0', ' ', dict(multi_class=True), 'is repeated', 2),
    ('a.mp4,,0', ',', {}, 'is repeated', 2),
    ('a.mp4,0,', ',', {}, 'ends the line', 3),
    (',a.mp4,0', ',', {}, 'starts the line', 1),
])
def test_an_empty_field_names_the_repeated_delimiter(tmp_path, line, delimiter, kwargs, where,
                                                     number):
    """Two spaces between path and label: the hint blamed a path with spaces or several
    labels (and, with multi_class, an empty label that is not an integer)."""
    path = tmp_path / 'list.txt'
    path.write_text(f'b.mp4{delimiter}1\n{line}\n')
    with pytest.raises(AnnotationError) as info:
        check_video_list(str(path), delimiter, **kwargs)
    assert str(info.value) == (
        f'{path}:2: field {number} is empty (the delimiter {delimiter!r} {where}): put a single '
        f'{delimiter!r} between the fields and none at the ends: {line!r}')
