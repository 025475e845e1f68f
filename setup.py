"""Install hyperframes_mm, an MMAction2 plugin for hyperframe (channel-stacked) video models.

mmcv is deliberately absent from ``install_requires``: mmaction2 1.2.0 needs ``mmcv>=2.0.0rc4,<2.2.0``
and both ``mmcv-lite`` (pure Python, CPU) and ``mmcv`` (compiled ops, a long source build where no
wheel matches) provide the module ``mmcv``. Listing either would force it on everyone; the README
says which to install, and ``hyperframes_mm.compat.check_environment`` says it at import time.

As in OpenMMLab's codebases, the package carries ``hyperframes_mm/.mim/`` with ``configs``,
``tools`` and ``model-index.yml``, where ``mim train/test/search hyperframes_mm`` look for them:
copied into the build of a wheel (``pip install .``), symlinks to the checkout in an editable
install (``pip install -e .``), so that edits show at once.
"""
import os
import shutil
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py
from setuptools.command.develop import develop

ROOT = Path(__file__).resolve().parent
#: What mim reads from ``<package>/.mim/``: configs and tools/{train,test}.py by name, and the
#: model index for ``mim search``.
MIM_FILES = ('configs', 'tools', 'model-index.yml')


def _replace(target: Path) -> None:
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.is_dir():
        shutil.rmtree(target)


def add_mim_files(package_dir: Path, mode: str) -> None:
    """Put :data:`MIM_FILES` into ``package_dir/.mim``, as copies or as relative symlinks.

    Unlike mmaction2's ``add_mim_extension``, a wheel build copies into the build directory,
    never into the checkout, so an editable install's symlinks are left alone.

    Args:
        package_dir (Path): the ``hyperframes_mm`` folder to extend.
        mode (str): ``'copy'`` (wheels) or ``'symlink'`` (editable installs).

    Raises:
        FileNotFoundError: a file mim needs is missing from the source tree (e.g. an sdist
            built without MANIFEST.in).
    """
    mim = package_dir / '.mim'
    mim.mkdir(parents=True, exist_ok=True)
    for name in MIM_FILES:
        source, target = ROOT / name, mim / name
        if not source.exists():
            raise FileNotFoundError(f'setup.py: {source} is missing; mim needs it in the package')
        _replace(target)
        if mode == 'symlink':
            target.symlink_to(os.path.relpath(source, mim))
        elif source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns('__pycache__', '*.pyc'))
        else:
            shutil.copyfile(source, target)


class BuildPy(build_py):
    """build_py that adds the mim files: copied into the wheel, linked when editable."""

    def run(self) -> None:
        super().run()
        if getattr(self, 'editable_mode', False):  # setuptools < 64 has no such flag
            add_mim_files(ROOT / 'hyperframes_mm', 'symlink')
        else:
            add_mim_files(Path(self.build_lib) / 'hyperframes_mm', 'copy')


class Develop(develop):
    """``setup.py develop`` (setuptools without PEP 660 editable wheels): link the mim files."""

    def run(self) -> None:
        add_mim_files(ROOT / 'hyperframes_mm', 'symlink')
        super().run()


def read_requirements(name: str) -> list:
    lines = ROOT.joinpath('requirements', name).read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith('#')]


def read_version() -> str:
    namespace: dict = {}
    exec(ROOT.joinpath('hyperframes_mm', 'version.py').read_text(), namespace)
    return namespace['__version__']


setup(
    name='hyperframes_mm',
    version=read_version(),
    description='Hyperframes for MMAction2: T frames stacked on channels, any 2D network sees motion',
    long_description=ROOT.joinpath('README.md').read_text(),
    long_description_content_type='text/markdown',
    license='Apache-2.0',
    python_requires='>=3.9',
    # The plugin alone: benchmarks/ is the repository's lab (experiments, the main job, the zoo
    # tables), run from a clone; installed, it would be a top-level ``benchmarks`` for everyone.
    packages=find_packages(include=['hyperframes_mm', 'hyperframes_mm.*']),
    install_requires=read_requirements('runtime.txt'),
    extras_require={
        'cpu': ['mmcv-lite==2.1.0'],
        'optional': read_requirements('optional.txt'),
        'tests': read_requirements('tests.txt'),
    },
    cmdclass={'build_py': BuildPy, 'develop': Develop},
    zip_safe=False,
)
