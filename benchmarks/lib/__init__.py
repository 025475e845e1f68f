"""The experiment library: :mod:`.edits` (config edits), :mod:`.runner` (train and test through
mmaction2's tools, runs recorded by key, resume, report-only), :mod:`.costing` (GFLOPs, params
and latency side by side; the machine line every timed table prints), :mod:`.tables` (markdown
cells and README sections), :mod:`.zoo` (a config family's model-zoo table and metafile),
:mod:`.views` (one view of a config, the unit the zoo states costs in), :mod:`.kernels` (the CPU
kernels a run used and the named settings that cap them). Timings go through the plugin's
:func:`hyperframes_mm.utils.timing.interleaved_timing`, the one loop that ``compare_latency``
(the zoo tables' latency) also uses; the plugin never imports this library."""
