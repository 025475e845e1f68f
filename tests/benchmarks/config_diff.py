"""Where two configs differ, as dotted paths: what the benchmark tests compare rows by."""
import json


def flat(cfg) -> dict:
    """The config as nested plain dicts and lists."""
    return json.loads(json.dumps(cfg.to_dict(), default=str))


def differing_paths(a, b, path: str = '') -> list:
    """Dotted paths (``model.backbone.depth``, ``pipeline[3].size``) where two nested
    structures differ; lists of another length differ as a whole."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(set(a) | set(b)):
            out += differing_paths(a.get(key), b.get(key), f'{path}.{key}' if path else str(key))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [p for i, (x, y) in enumerate(zip(a, b))
                for p in differing_paths(x, y, f'{path}[{i}]')]
    return [] if a == b else [path]
