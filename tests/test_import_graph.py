"""No import cycle inside ``hyperframes_mm``, not even one hidden behind a function-level import;
the plugin never imports the experiment library (``benchmarks``), so that what
``custom_imports=['hyperframes_mm']`` loads stays the plugin alone.

The graph is read from the source with ``ast``: an edge for every ``import`` / ``from ... import``
of a ``hyperframes_mm`` module (relative imports resolved), to the module itself and to the
packages above it that importing it runs (``from ..apis.inference import x`` runs
``hyperframes_mm/apis/__init__.py`` first). Packages above the importer are left out: they are
already being imported when it runs.
"""
import ast
from pathlib import Path
from typing import Dict, Iterator, List, NamedTuple, Optional, Tuple

import hyperframes_mm

PACKAGE = Path(hyperframes_mm.__file__).parent
NAME = hyperframes_mm.__name__


class Edge(NamedTuple):
    source: str
    target: str
    line: int
    module_level: bool


def modules() -> Dict[str, Path]:
    """Dotted name -> file of every module and package of the plugin."""
    found = {}
    for path in sorted(PACKAGE.rglob('*.py')):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix('').parts)
        if parts[-1] == '__init__':
            parts.pop()
        found['.'.join(parts)] = path
    return found


def _ancestors(name: str) -> List[str]:
    parts = name.split('.')
    return ['.'.join(parts[:end]) for end in range(1, len(parts))]


def _imported(source: str, is_package: bool, node: ast.AST, known: Dict[str, Path]) -> List[str]:
    """The plugin modules an import statement imports, its own targets last."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = source.split('.') if is_package else source.split('.')[:-1]
        base = base[:len(base) - (node.level - 1)]
        target = '.'.join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ''
    # ``from package import name`` imports the package, and the submodule when name is one.
    return [target] + [f'{target}.{alias.name}' for alias in node.names
                       if f'{target}.{alias.name}' in known]


def _owner(name: str, known: Dict[str, Path]) -> Optional[str]:
    """The plugin module ``name`` is or lies in (``pkg.mod.attr`` -> ``pkg.mod``), if any."""
    while name and name not in known:
        name = name.rpartition('.')[0]
    return name or None


def import_edges() -> Iterator[Edge]:
    known = modules()
    for source, path in known.items():
        is_package = path.name == '__init__.py'
        above = set(_ancestors(source)) | {source}

        def visit(node: ast.AST, module_level: bool) -> Iterator[Edge]:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    for name in _imported(source, is_package, child, known):
                        owner = _owner(name, known)
                        if owner is None:
                            continue
                        for target in _ancestors(owner) + [owner]:
                            if target not in above:
                                yield Edge(source, target, child.lineno, module_level)
                elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                    yield from visit(child, False)
                else:
                    yield from visit(child, module_level)

        yield from visit(ast.parse(path.read_text(), str(path)), True)


def find_cycle(edges: List[Edge]) -> Optional[List[Edge]]:
    """One cycle of ``edges`` as the edges that close it, or None."""
    graph: Dict[str, List[Edge]] = {}
    for edge in edges:
        graph.setdefault(edge.source, []).append(edge)
    done, path, on_path = set(), [], {}

    def walk(node: str) -> Optional[List[Edge]]:
        on_path[node] = len(path)
        for edge in graph.get(node, []):
            if edge.target in on_path:
                return path[on_path[edge.target]:] + [edge]
            if edge.target not in done:
                path.append(edge)
                cycle = walk(edge.target)
                if cycle:
                    return cycle
                path.pop()
        del on_path[node]
        done.add(node)
        return None

    for start in sorted(graph):
        if start not in done:
            cycle = walk(start)
            if cycle:
                return cycle
    return None


def describe(cycle: List[Edge]) -> str:
    steps = ' -> '.join([cycle[0].source] + [edge.target for edge in cycle])
    where = '; '.join(f'{edge.source} line {edge.line}'
                      f'{"" if edge.module_level else " (in a function)"} imports {edge.target}'
                      for edge in cycle)
    return f'import cycle {steps} ({where})'


def test_the_walker_sees_module_and_function_level_imports():
    edges = set(import_edges())
    pairs = {(edge.source, edge.target, edge.module_level) for edge in edges}
    # from . import compat; from .checkpoint import ...; from ..apis.inference import ... (its
    # package too); the backbones' import of the engine's loader inside read_state_dict().
    assert (NAME, f'{NAME}.compat', True) in pairs
    assert (f'{NAME}.engine.runner', f'{NAME}.engine.checkpoint', True) in pairs
    assert (f'{NAME}.analysis.doctor', f'{NAME}.apis', True) in pairs
    assert (f'{NAME}.analysis.doctor', f'{NAME}.apis.inference', True) in pairs
    assert (f'{NAME}.models.backbones.hyperframe_backbone', f'{NAME}.engine.checkpoint',
            False) in pairs


def test_module_level_imports_have_no_cycle():
    cycle = find_cycle([edge for edge in import_edges() if edge.module_level])
    assert cycle is None, describe(cycle)


def test_function_level_imports_close_no_cycle():
    """A function-level import that closes a cycle only postpones it to the first call."""
    cycle = find_cycle(list(import_edges()))
    assert cycle is None, describe(cycle)


def test_a_cycle_is_named():
    edges = [Edge('a', 'b', 3, True), Edge('b', 'c', 5, False), Edge('c', 'a', 7, True)]
    assert describe(find_cycle(edges)) == (
        'import cycle a -> b -> c -> a (a line 3 imports b; b line 5 (in a function) imports c; '
        'c line 7 imports a)')
    assert find_cycle(edges[:2]) is None



def absolute_imports(path: Path) -> Iterator[Tuple[int, str]]:
    """``(line, module)`` of every absolute import of a file, module or function level."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            yield node.lineno, node.module or ''


def test_the_plugin_never_imports_the_experiment_library():
    found = [f'{name} line {line} imports {target}' for name, path in modules().items()
             for line, target in absolute_imports(path) if target.split('.')[0] == 'benchmarks']
    assert found == []


def test_the_experiment_library_imports_no_row_declarations():
    """benchmarks.lib is what the rows are declared on, never the other way round."""
    library = sorted((PACKAGE.parent / 'benchmarks' / 'lib').glob('*.py'))
    assert [path.name for path in library][:2] == ['__init__.py', 'costing.py']
    found = [f'{path.name} line {line} imports {target}' for path in library
             for line, target in absolute_imports(path)
             if target.split('.')[0] == 'benchmarks' and not target.startswith('benchmarks.lib')]
    assert found == []


def test_absolute_imports_are_read_at_every_level(tmp_path):
    source = tmp_path / 'module.py'
    source.write_text('import os, benchmarks.lib\nfrom . import x\n\n\ndef f():\n'
                      '    from benchmarks import bench_utd_mhad\n')
    assert list(absolute_imports(source)) == [(1, 'os'), (1, 'benchmarks.lib'),
                                              (6, 'benchmarks')]
