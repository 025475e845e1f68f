"""Test a config with mmaction2's own `tools/test.py`, after the plugin's upstream fixes.

Same command line as mmaction2 (config, --work-dir, --resume, --amp, --cfg-options, --launcher,
...). Importing ``hyperframes_mm`` first applies its fixes before mmaction2 builds anything, so
configs without ``custom_imports`` work too.
"""
import runpy

import hyperframes_mm  # noqa: F401
from hyperframes_mm.utils import upstream_tool_path

if __name__ == '__main__':
    runpy.run_path(str(upstream_tool_path('test')), run_name='__main__')
