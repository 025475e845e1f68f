"""Model-zoo table and metafile of a config family, derived from the family's configs.

    python tools/analysis/zoo_table.py configs/hyperframes/ucf101              # print the table
    OMP_NUM_THREADS=1 python tools/analysis/zoo_table.py configs/hyperframes/ucf101 \\
        --readme --metafile                                                    # write both
    python tools/analysis/zoo_table.py configs/hyperframes/ucf101 --check      # metafile current?

What each column is and how it is measured: :mod:`benchmarks.lib.zoo`.
"""
import sys
from pathlib import Path

# Run from a clone: the zoo tables are written on the experiment library, which is not
# installed with the plugin (setup.py).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.lib.zoo import main

if __name__ == '__main__':
    try:
        sys.exit(main())
    except ValueError as error:  # a damaged results file, named: one line, not a traceback
        sys.exit(f'error: {error}')
