"""The repository's experiments: side-by-side benchmarks, the main job and the model-zoo tables.

``benchmarks.lib`` is the one experiment library they are written on (config edits, a runner
that records finished runs by key, costing, table writing); the ``bench_*`` modules and
:mod:`benchmarks.main_job` declare rows and tables on it. None of it is part of the plugin:
``custom_imports=['hyperframes_mm']`` never loads this package (tests/test_import_graph.py).
"""
