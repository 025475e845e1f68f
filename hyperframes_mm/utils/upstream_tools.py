"""mmaction2's own command-line tools, shipped inside its wheel under ``mmaction/.mim/tools``.

The plugin's ``tools/train.py`` and ``tools/test.py`` run them as they are instead of copying
them, so the CLI stays exactly mmaction2's.
"""
import importlib.util
from pathlib import Path


def upstream_tool_path(name: str) -> Path:
    """Path of mmaction2's ``tools/<name>.py`` (e.g. ``'train'``, ``'test'``)."""
    spec = importlib.util.find_spec('mmaction')
    if spec is None or not spec.submodule_search_locations:
        raise ImportError('mmaction2 is not installed: pip install mmaction2==1.2.0')
    path = Path(list(spec.submodule_search_locations)[0], '.mim', 'tools', f'{name}.py')
    if not path.is_file():
        raise FileNotFoundError(f'mmaction2 tool {name!r} not found at {path}; this mmaction2 '
                                'install does not ship its tools (install the PyPI wheel)')
    return path
