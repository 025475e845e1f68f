"""Install hyperframes_mm, an MMAction2 plugin for hyperframe (channel-stacked) video models.

mmcv is deliberately absent from ``install_requires``: mmaction2 1.2.0 needs ``mmcv>=2.0.0rc4,<2.2.0``
and both ``mmcv-lite`` (pure Python, CPU) and ``mmcv`` (compiled ops, a long source build where no
wheel matches) provide the module ``mmcv``. Listing either would force it on everyone; the README
says which to install, and ``hyperframes_mm.compat.check_environment`` says it at import time.
"""
from pathlib import Path

from setuptools import find_packages, setup


def read_requirements(name: str) -> list:
    lines = Path(__file__).parent.joinpath('requirements', name).read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith('#')]


def read_version() -> str:
    namespace: dict = {}
    exec(Path(__file__).parent.joinpath('hyperframes_mm', 'version.py').read_text(), namespace)
    return namespace['__version__']


setup(
    name='hyperframes_mm',
    version=read_version(),
    description='Hyperframes for MMAction2: T frames stacked on channels, any 2D network sees motion',
    long_description=Path(__file__).parent.joinpath('README.md').read_text(),
    long_description_content_type='text/markdown',
    license='Apache-2.0',
    python_requires='>=3.9',
    packages=find_packages(include=['hyperframes_mm', 'hyperframes_mm.*']),
    install_requires=read_requirements('runtime.txt'),
    extras_require={
        'cpu': ['mmcv-lite==2.1.0'],
        'optional': read_requirements('optional.txt'),
        'tests': read_requirements('tests.txt'),
    },
    zip_safe=False,
)
