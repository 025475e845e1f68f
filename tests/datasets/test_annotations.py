"""datasets/annotations.py: the one reader of VideoDataset lists."""
from hyperframes_mm.datasets.annotations import ListLine, read_list_lines


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
