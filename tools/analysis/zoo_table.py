"""Model-zoo table and metafile of a config family, derived from the family's configs.

    python tools/analysis/zoo_table.py configs/hyperframes/ucf101              # print the table
    OMP_NUM_THREADS=1 python tools/analysis/zoo_table.py configs/hyperframes/ucf101 \\
        --readme --metafile                                                    # write both
    python tools/analysis/zoo_table.py configs/hyperframes/ucf101 --check      # metafile current?

What each column is and how it is measured: :mod:`benchmarks.lib.zoo`.
"""
import sys

from benchmarks.lib.zoo import main

if __name__ == '__main__':
    sys.exit(main())
