"""Test a config with mmaction2's own `tools/test.py`, with the plugin registered.

Same command line as mmaction2 (config, --work-dir, --resume, --amp, --cfg-options, --launcher,
...). Importing ``hyperframes_mm`` first registers the plugin (and provides the module the
mmaction2 1.2.0 wheel lacks) before mmaction2 builds anything, so configs without
``custom_imports`` work too; the runner and hooks are the config's.
"""
import runpy

import hyperframes_mm  # noqa: F401
from hyperframes_mm.utils import upstream_tool_path

if __name__ == '__main__':
    runpy.run_path(str(upstream_tool_path('test')), run_name='__main__')
