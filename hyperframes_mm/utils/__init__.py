from .naming import slug
from .timing import interleaved_timing
from .upstream_tools import load_upstream_tool, upstream_tool_path

__all__ = ['interleaved_timing', 'load_upstream_tool', 'slug', 'upstream_tool_path']
