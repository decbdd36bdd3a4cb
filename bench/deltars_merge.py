# The delta-rs side of deltabench's P11 (MERGE). Usage: python -c <this>
# Reads one JSON command per line from stdin and answers each with one JSON
# line (times in seconds: wall from time.perf_counter, "cpu" from
# time.process_time, all threads; peak RSS from VmHWM after resetting it
# through /proc/self/clear_refs):
#   {"cmd": "hello"}                              -> {"deltalake": version}
#   {"cmd": "merge", "table": T, "source": F}     -> MERGE of the rows of parquet file F into T
#   {"cmd": "restore", "table": T, "version": V}  -> DeltaTable(T).restore(V)
#   {"cmd": "digest", "table": T, "source": F}    -> the digest of T (see bench/merge.go)
import json
import sys
import time
import warnings
import zlib

warnings.simplefilter("ignore")

try:
    import deltalake
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    from deltalake import DeltaTable
except Exception as e:  # the Go side reports the error
    print(json.dumps({"error": "import deltalake: %s" % e}), flush=True)
    sys.exit(0)


def status_kb(key):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


def reset_peak():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def merge(table, source):
    src = pq.read_table(source)
    dt = DeltaTable(table)
    before = dt.version()
    reset = reset_peak()
    base_rss = status_kb("VmRSS")
    c0, t0 = time.process_time(), time.perf_counter()
    # streamed_exec=False: the source is an in-memory table, so delta-rs may
    # derive its early pruning predicate (partition values, key ranges) from
    # it, as deltakit does; with streamed_exec=True it reads every file.
    metrics = (
        dt.merge(source=src, predicate="t.id = s.id AND t.date = s.date", source_alias="s", target_alias="t",
                 streamed_exec=False)
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    t1, c1 = time.perf_counter(), time.process_time()
    peak = status_kb("VmHWM") if reset else -1
    dt = DeltaTable(table)
    return {"wall": t1 - t0, "cpu": c1 - c0, "peak_rss_kb": peak, "base_rss_kb": base_rss,
            "version": dt.version(), "before": before, "metrics": metrics}


def restore(table, version):
    dt = DeltaTable(table)
    dt.restore(version)
    return {"version": DeltaTable(table).version()}


def digest(table, source):
    dt = DeltaTable(table)
    t = dt.to_pyarrow_table(columns=["id", "date", "value", "payload"])
    ids = pq.read_table(source, columns=["id"]).column("id")
    out = {
        "rows": t.num_rows,
        "sum_id": pc.sum(t.column("id")).as_py() or 0,
        "sum_date": pc.sum(pc.cast(pc.cast(t.column("date"), "int32"), "int64")).as_py() or 0,
        "sum_value4": int(pc.sum(pc.multiply(t.column("value"), 4.0)).as_py() or 0),
        "sum_payload_len": pc.sum(pc.utf8_length(t.column("payload"))).as_py() or 0,
    }
    keyed = t.filter(pc.is_in(t.column("id"), value_set=ids))
    crc = 0
    for i, d, v, p in zip(keyed.column("id").to_pylist(), pc.cast(keyed.column("date"), "int32").to_pylist(),
                          keyed.column("value").to_pylist(), keyed.column("payload").to_pylist()):
        crc += zlib.crc32(("%d|%d|%d|%s" % (i, d, int(v * 4), p)).encode())
    out["key_rows"] = keyed.num_rows
    out["key_crc"] = crc % (1 << 64)
    return out


for line in sys.stdin:
    try:
        req = json.loads(line)
        cmd = req.get("cmd")
        if cmd == "hello":
            out = {"deltalake": deltalake.__version__}
        elif cmd == "merge":
            out = merge(req["table"], req["source"])
        elif cmd == "restore":
            out = restore(req["table"], req["version"])
        elif cmd == "digest":
            out = digest(req["table"], req["source"])
        else:
            out = {"error": "unknown command %r" % cmd}
    except Exception as e:
        out = {"error": "%s: %s" % (type(e).__name__, e)}
    print(json.dumps(out, default=str), flush=True)
