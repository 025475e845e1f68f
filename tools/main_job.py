"""The main job: build the synthetic motion benchmark, train and test each model, print the table
and whether each model landed where its recorded runs say a rerun should.

    python tools/main_job.py                 # the README's rows; its time is printed
    python tools/main_job.py --full          # longer schedule, the larger preset and TSM-5
    python tools/main_job.py --record --work-dir DIR    # add DIR's finished run to the record
    python tools/main_job.py --report-only --readme     # README's table from the record

The rows, the record and the tables: :mod:`benchmarks.main_job`.
"""
import sys
from pathlib import Path

# Run from a clone: the experiments are not installed with the plugin (setup.py).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.main_job import main

if __name__ == '__main__':
    main()
