# The delta-rs side of deltabench's P3. Usage: python -c <this> TABLE_DIR BASE_VERSION
# Reads commands from stdin, one per line, and answers each with one JSON line
# (times in seconds: wall from time.perf_counter, "cpu" from time.process_time):
#   hello   -> {"deltalake": version}
#   open    -> DeltaTable(path), file_uris(), get_add_actions() of the latest version
#   update  -> DeltaTable(path, version=BASE_VERSION), then update_incremental()
import json
import sys
import time
import warnings

warnings.simplefilter("ignore")

try:
    import deltalake
    from deltalake import DeltaTable
except Exception as e:  # the Go side reports the error
    print(json.dumps({"error": "import deltalake: %s" % e}), flush=True)
    sys.exit(0)

path, base = sys.argv[1], int(sys.argv[2])


def open_latest():
    c0, t0 = time.process_time(), time.perf_counter()
    dt = DeltaTable(path)
    t1 = time.perf_counter()
    uris = dt.file_uris()
    t2, c2 = time.perf_counter(), time.process_time()
    dt.get_add_actions()
    t3 = time.perf_counter()
    return {"open": t1 - t0, "open_files": t2 - t0, "add_actions": t3 - t2, "cpu": c2 - c0,
            "files": len(uris), "version": dt.version()}


def update():
    dt = DeltaTable(path, version=base)
    c0, t0 = time.process_time(), time.perf_counter()
    dt.update_incremental()
    t1, c1 = time.perf_counter(), time.process_time()
    return {"update": t1 - t0, "cpu": c1 - c0, "version": dt.version()}


for line in sys.stdin:
    cmd = line.strip()
    try:
        if cmd == "hello":
            out = {"deltalake": deltalake.__version__}
        elif cmd == "open":
            out = open_latest()
        elif cmd == "update":
            out = update()
        else:
            out = {"error": "unknown command %r" % cmd}
    except Exception as e:
        out = {"error": "%s: %s" % (type(e).__name__, e)}
    print(json.dumps(out), flush=True)
