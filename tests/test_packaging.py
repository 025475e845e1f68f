"""What a user installs: one OpenCV, a consistent ``pip check``, the OpenMMLab model index, and
``mim train/test/search`` from a non-editable install (``scripts/check_mim.sh``)."""
import re
import subprocess
import sys
from importlib import metadata

import pytest
import yaml

from .conftest import REPO

#: Lines ``pip check`` prints for declarations upstream got wrong, each with why it is harmless.
#: Anything else it reports fails the test.
KNOWN_PIP_CHECK = {
    # The mmengine and mmcv-lite wheels declare opencv-python, mmaction2 opencv-contrib-python;
    # both install cv2 into one folder, so the lock keeps only the contrib build, a superset
    # (requirements/lock-cpu.txt). mmengine's and mmcv's own setup.py accept any OpenCV.
    r'mmengine \S+ requires opencv-python, which is not installed\.',
    r'mmcv-lite \S+ requires opencv-python, which is not installed\.',
    # decord 0.6.0's only Linux wheel is named py3-none-manylinux2010 but its WHEEL file says
    # cp36-cp36m; pip check reads the latter. It installs and runs on every CPython 3.
    r'decord 0\.6\.0 is not supported on this platform',
}


def cv2_providers():
    """Installed distributions that ship the top-level package ``cv2``."""
    providers = {}
    for dist in metadata.distributions():
        if any(file.parts[:1] == ('cv2', ) for file in dist.files or ()):
            providers[dist.metadata['Name']] = dist.version
    return providers


def test_exactly_one_distribution_provides_cv2():
    providers = cv2_providers()
    assert len(providers) == 1, (
        f'cv2 comes from {providers}: they overwrite each other\'s files. Keep the one '
        'requirements/lock-cpu.txt pins: pip uninstall -y ' + ' '.join(providers) +
        ' && pip install --no-deps opencv-contrib-python')
    locked = [line for line in (REPO / 'requirements/lock-cpu.txt').read_text().splitlines()
              if line.startswith('opencv')]
    assert locked == [f'{name}=={version}' for name, version in providers.items()]


def test_every_requirements_file_names_at_most_one_opencv():
    for path in sorted((REPO / 'requirements').glob('*.txt')):
        names = {re.split(r'[<>=!~ ;\[]', line.strip(), maxsplit=1)[0].lower()
                 for line in path.read_text().splitlines()
                 if line.strip() and not line.lstrip().startswith('#')}
        assert len({name for name in names if name.startswith('opencv')}) <= 1, path


def test_pip_check_reports_only_known_upstream_declarations():
    result = subprocess.run([sys.executable, '-m', 'pip', 'check'], capture_output=True,
                            text=True)
    if result.returncode == 0:
        return
    unknown = [line for line in result.stdout.splitlines()
               if line.strip() and not any(re.fullmatch(known, line.strip())
                                           for known in KNOWN_PIP_CHECK)]
    assert result.stdout.strip() and not unknown, '\n'.join(unknown) or result.stderr


def test_model_index_lists_every_family_metafile():
    listed = yaml.safe_load((REPO / 'model-index.yml').read_text())['Import']
    metafiles = sorted(str(path.relative_to(REPO))
                       for path in (REPO / 'configs').glob('hyperframes/*/metafile.yml'))
    missing = sorted(set(metafiles) - set(listed))
    assert not missing, ('model-index.yml does not list ' + ', '.join(missing) + ': add "- ' +
                         '" and "- '.join(missing) + '" under Import')
    assert listed == metafiles, 'model-index.yml: list each metafile once, sorted'


def test_model_index_loads_and_points_at_existing_configs():
    from modelindex.load_model_index import load
    index = load(str(REPO / 'model-index.yml'))
    assert index.models, 'model-index.yml has no models'
    for model in index.models:
        assert (REPO / model.config).is_file(), f'{model.name}: no config {model.config}'


def _mim_unreadable(value) -> bool:
    """mim search lower-cases every metadata value and every item of a list value."""
    if isinstance(value, dict):
        return any(_mim_unreadable(item) for item in value.values())
    return isinstance(value, list) and not all(isinstance(item, (str, dict)) for item in value)


def test_metafile_metadata_is_readable_by_mim_search():
    bad = []
    for path in sorted((REPO / 'configs').glob('hyperframes/*/metafile.yml')):
        for model in yaml.safe_load(path.read_text()).get('Models', []):
            for key, value in (model.get('Metadata') or {}).items():
                if _mim_unreadable(value):
                    bad.append(f'{path.relative_to(REPO)}: {model["Name"]}: {key}: {value}')
    assert not bad, ('mim search crashes on lists of non-strings (it lower-cases each item); '
                     'write them as strings:\n' + '\n'.join(bad))


@pytest.mark.slow
def test_mim_runs_the_plugin_from_a_non_editable_install():
    """sdist -> wheel -> fresh venv (no editable install) -> mim train / test / search."""
    result = subprocess.run(['bash', 'scripts/check_mim.sh', sys.prefix], cwd=REPO,
                            capture_output=True, text=True, timeout=600)
    if result.returncode == 3:
        pytest.skip('requirements/mim.txt could not be downloaded: ' + result.stdout[-300:])
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert '[check_mim] ok:' in result.stdout
