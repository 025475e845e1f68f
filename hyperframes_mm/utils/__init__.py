from .checks import int_argument, int_at_least, is_int, positive_int
from .delegation import delegated
from .naming import slug
from .paths import check_output_folder, refuse_overwrite, same_file, written_beside
from .timing import Timings, interleaved_timing
from .upstream_tools import upstream_tool_path

__all__ = [
    'check_output_folder', 'refuse_overwrite', 'same_file',
    'int_argument',
    'Timings', 'delegated', 'int_at_least', 'interleaved_timing', 'is_int', 'positive_int',
    'slug', 'upstream_tool_path'
]
