"""P8 reference figures: delta-rs to_pyarrow_table() of a table, wall and CPU.

Usage: python scripts/p8-deltars.py <table> [runs] [filter]
With filter "sel", runs the selective scan delay > 300 AND origin = 'SFO'
through to_pyarrow_dataset().to_table(filter=...). Prints one line per run
and the median: "deltars <table> wall=<s> cpu=<s> rows=<n>".
"""
import statistics
import sys
import time

import pyarrow.compute as pc
from deltalake import DeltaTable

path = sys.argv[1]
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
sel = len(sys.argv) > 3 and sys.argv[3] == "sel"
walls, cpus = [], []
for _ in range(runs):
    w0, c0 = time.perf_counter(), time.process_time()
    dt = DeltaTable(path)
    if sel:
        t = dt.to_pyarrow_dataset().to_table(filter=(pc.field("delay") > 300) & (pc.field("origin") == "SFO"))
    else:
        t = dt.to_pyarrow_table()
    walls.append(time.perf_counter() - w0)
    cpus.append(time.process_time() - c0)
    n = t.num_rows
    del t
    print(f"run wall={walls[-1]:.3f} cpu={cpus[-1]:.3f} rows={n}", flush=True)
print(f"deltars {path} wall={statistics.median(walls):.3f} cpu={statistics.median(cpus):.3f} rows={n}")
