"""The experiment library: :mod:`.edits` (config edits), :mod:`.runner` (train and test through
mmaction2's tools, runs recorded by key, resume, report-only), :mod:`.costing` (GFLOPs, params
and latency side by side), :mod:`.tables` (markdown cells and README sections), :mod:`.zoo` (a
config family's model-zoo table and metafile), :mod:`.kernels` (the CPU kernels a run used and
the named settings that cap them)."""
