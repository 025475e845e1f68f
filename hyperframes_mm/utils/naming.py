"""File-system names for runs named in words."""


def slug(name: str) -> str:
    """``'fast/slow (recipe)'`` -> ``'fast_slow__recipe'``: a run's name as a directory name."""
    return ''.join(c if c.isalnum() else '_' for c in name).strip('_').lower()
