"""benchmarks.lib.zoo: a damaged test metrics file (zoo_table.py --results) is named with what is
wrong with it, not a raw JSONDecodeError."""
import pytest

from benchmarks.lib.zoo import load_results
from ..conftest import REPO, run_tool


def test_a_damaged_metrics_file_is_named(tmp_path):
    path = tmp_path / 'config.json'
    assert load_results(path) is None  # not tested yet
    for text, problem in (
            ('{"acc/top1": 0.5', "not JSON (Expecting ',' delimiter: line 1 column 17 "
                                 '(char 16))'),
            ('', 'not JSON (Expecting value: line 1 column 1 (char 0))')):
        path.write_text(text)
        with pytest.raises(ValueError) as raised:
            load_results(path)
        assert str(raised.value) == (f'{path}: {problem}; expected the metrics file mmengine '
                                     'writes after tools/test.py: write it again, or move it '
                                     'aside')
    path.write_text('[0.5]')
    with pytest.raises(ValueError) as raised:
        load_results(path)
    assert str(raised.value) == (f'{path}: a JSON list, not the object of metrics mmengine '
                                 'writes after tools/test.py: write it again, or move it aside')
    path.write_text('{"acc/top1": 0.5, "acc/top5": 0.75}')
    assert load_results(path) == {'Top 1 Accuracy': 50.0, 'Top 5 Accuracy': 75.0}


def test_zoo_table_names_a_damaged_metrics_file_in_one_line(tmp_path):
    family = REPO / 'configs/hyperframes/ucf101'
    config = sorted(family.glob('*.py'))[0]
    (tmp_path / f'{config.stem}.json').write_text('{"acc/top1": 0.5')
    done = run_tool(['tools/analysis/zoo_table.py', family, '--results', tmp_path], tmp_path,
                    check=False)
    assert done.returncode == 1
    assert done.stderr == (f'error: {tmp_path / config.stem}.json: not JSON (Expecting \',\' '
                           'delimiter: line 1 column 17 (char 16)); expected the metrics file '
                           'mmengine writes after tools/test.py: write it again, or move it '
                           'aside\n')
