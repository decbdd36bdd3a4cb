# The delta-rs side of deltabench's P12 (issue 17's "P7 ingest").
# Usage: python -c <this> SOURCE_PARQUET TABLE_DIR
# Reads SOURCE_PARQUET with pyarrow.parquet.read_table and writes it to a new
# table at TABLE_DIR with one write_deltalake (one commit), both inside the
# timed region, then prints one JSON line (seconds: wall from
# time.perf_counter, cpu from time.process_time, all threads; maxrss_kb the
# process's peak RSS (VmHWM, else getrusage); rows the row count of the table's data
# files, read from their footers after the clock stops), or {"error": ...}.
import json
import resource
import sys
import time
import warnings

warnings.simplefilter("ignore")

try:
    import deltalake
    import pyarrow.parquet as pq
    from deltalake import DeltaTable, write_deltalake
except Exception as e:  # the Go side reports the error
    print(json.dumps({"error": "import deltalake: %s" % e}), flush=True)
    sys.exit(0)

src, dst = sys.argv[1], sys.argv[2]


def vm_hwm_kb():
    # This process's own peak RSS (KiB). Not ru_maxrss: on Linux a process
    # started by exec inherits its parent's peak RSS as the floor of its
    # ru_maxrss (deltabench's, ~4 GiB after P11).
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0

try:
    c0, t0 = time.process_time(), time.perf_counter()
    tbl = pq.read_table(src)
    t1 = time.perf_counter()
    write_deltalake(dst, tbl)
    t2, c2 = time.perf_counter(), time.process_time()
    maxrss = vm_hwm_kb() or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    dt = DeltaTable(dst)
    rows = sum(pq.ParquetFile(u.removeprefix("file://")).metadata.num_rows for u in dt.file_uris())
    out = {"deltalake": deltalake.__version__, "wall": t2 - t0, "read": t1 - t0, "cpu": c2 - c0,
           "maxrss_kb": maxrss, "rows": rows, "files": len(dt.file_uris()), "version": dt.version()}
except Exception as e:
    out = {"error": "%s: %s" % (type(e).__name__, e)}
print(json.dumps(out), flush=True)
