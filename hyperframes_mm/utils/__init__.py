from .upstream_tools import load_upstream_tool, upstream_tool_path

__all__ = ['load_upstream_tool', 'upstream_tool_path']
