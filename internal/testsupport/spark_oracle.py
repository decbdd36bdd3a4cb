"""Spark + Delta Lake oracle for deltakit's Go tests (see spark.go).

Starts ONE local Spark session with the Delta jars that
scripts/install-interop.sh resolved into the Ivy cache ($DELTAKIT_IVY), then
answers requests: one JSON object per line on stdin, one JSON object per line
on stdout, in order.

  {"op": "read", "path": P, "version": V?}  -> {"ok": true, "schema": [...], "rows": [...]}
  {"op": "sql", "sql": S}                   -> {"ok": true, "schema": [...], "rows": [...]}
  {"op": "batch", "requests": [R, ...]}     -> {"ok": true, "results": [answer to R, ...]}

Every answer of a request that Spark ran has "ms": the milliseconds it took.
A batch runs its requests in order and answers each as if sent alone (one
refused request does not stop the others), in one round trip.

Rows are lists of values in schema order, sorted by their JSON text so that
the answer does not depend on file order. Values: null, booleans, integers,
floats (NaN and infinities as the strings "NaN", "Infinity", "-Infinity"),
strings, decimals as strings, dates as "YYYY-MM-DD", timestamps as ISO 8601
in UTC without zone ("2024-01-02T03:04:05.000006"), binary as base64,
structs as objects, arrays as lists, maps as lists of [key, value] pairs
sorted by key JSON. Errors are answers, not crashes:
{"ok": false, "error": message, "condition": Spark error class or ""}.
The first line written is {"ready": true, "spark": version} or
{"ready": false, "absent": bool, "error": message}.
"""
import base64
import datetime
import decimal
import glob
import json
import math
import os
import re
import sys
import threading
import time

os.environ["TZ"] = "UTC"
time.tzset()

# Answers go to the original stdout; everything else (py4j, the JVM, which
# inherits fd 1) to stderr, so no stray line can break the protocol.
_out = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr


def answer(obj):
    _out.write(json.dumps(obj, sort_keys=True, allow_nan=False) + "\n")
    _out.flush()


def artifact(jar):
    """The artifact name of a jar file name (without organisation and version)."""
    name = os.path.basename(jar)
    m = re.match(r"^(.*?)-\d", name)
    return m.group(1) if m else name


def start():
    try:
        import pyspark
        from pyspark.sql import SparkSession
        import delta  # noqa: F401  (delta-spark's Python package must be there too)
    except ImportError as e:
        answer({"ready": False, "absent": True, "error": "pyspark or delta-spark missing: %s" % e})
        return None
    ivy = os.environ.get("DELTAKIT_IVY") or os.path.expanduser("~/.cache/deltakit/ivy")
    jars = sorted(glob.glob(os.path.join(ivy, "jars", "*.jar")))
    if not any(os.path.basename(j).startswith("io.delta_delta-spark_") for j in jars):
        answer({"ready": False, "absent": True,
                "error": "no Delta jars in %s/jars: run scripts/install-interop.sh" % ivy})
        return None
    # Only the jars pyspark lacks: its own versions of the rest stay in charge.
    have = {artifact(j) for j in glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "*.jar"))}
    extra = [j for j in jars if os.path.basename(j).startswith("io.delta_")
             or artifact(j.split("_", 1)[-1]) not in have]
    mem = os.environ.get("DELTAKIT_SPARK_MEMORY", "3g")
    try:
        spark = (SparkSession.builder.master("local[2]").appName("deltakit-oracle")
                 .config("spark.jars", ",".join(extra))
                 .config("spark.driver.memory", mem)
                 .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC")
                 .config("spark.sql.shuffle.partitions", "2")
                 # Log replay of the small test tables in 2 tasks, not 50:
                 # each read and time travel builds a snapshot.
                 .config("spark.databricks.delta.snapshotPartitions", "2")
                 .config("spark.ui.enabled", "false")
                 .config("spark.sql.session.timeZone", "UTC")
                 .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
                 .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
                 .config("spark.sql.warehouse.dir", os.environ.get("DELTAKIT_SPARK_WAREHOUSE", "/tmp/deltakit-spark-warehouse"))
                 .getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        spark.sql("SELECT 1").collect()
    except Exception as e:  # noqa: BLE001
        answer({"ready": False, "absent": False, "error": "Spark session did not start: %s" % e})
        return None
    answer({"ready": True, "spark": spark.version})
    return spark


def enc(v):
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return v
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return v.isoformat(timespec="microseconds")
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(bytes(v)).decode()
    if hasattr(v, "asDict"):
        return {k: enc(x) for k, x in v.asDict(recursive=False).items()}
    if isinstance(v, (list, tuple)):
        return [enc(x) for x in v]
    if isinstance(v, dict):
        pairs = [[enc(k), enc(x)] for k, x in v.items()]
        return sorted(pairs, key=lambda p: json.dumps(p[0], sort_keys=True))
    return str(v)


def result(df):
    schema = [{"name": f.name, "type": f.dataType.simpleString(), "nullable": f.nullable}
              for f in df.schema.fields]
    rows = [[enc(x) for x in r] for r in df.collect()]
    rows.sort(key=lambda r: json.dumps(r, sort_keys=True))
    return {"ok": True, "schema": schema, "rows": rows}


def condition(e):
    for m in ("getCondition", "getErrorClass"):
        f = getattr(e, m, None)
        if f is not None:
            try:
                c = f()
                if c:
                    return c
            except Exception:  # noqa: BLE001
                pass
    m = re.search(r"\[([A-Z][A-Z0-9_]+)(\.[A-Z0-9_]+)*\]", str(e))
    return m.group(1) if m else ""


def message(e):
    """The first lines of an error, without py4j's prefix and Java stack."""
    s = str(e)
    s = re.sub(r"^An error occurred while calling [\w.]+\.\n: ", "", s)
    s = s.split("\n\tat ", 1)[0]
    return s[:4000]


def handle(spark, req):
    start = time.monotonic()
    resp = dispatch(spark, req)
    resp["ms"] = int((time.monotonic() - start) * 1000)
    return resp


def dispatch(spark, req):
    op = req.get("op")
    if op == "read":
        r = spark.read.format("delta")
        if req.get("version") is not None:
            r = r.option("versionAsOf", int(req["version"]))
        return result(r.load(req["path"]))
    if op == "sql":
        return result(spark.sql(req["sql"]))
    if op == "batch":
        out = []
        for r in req.get("requests") or []:
            try:
                if r.get("op") == "batch":
                    raise ValueError("nested batch")
                out.append(handle(spark, r))
            except Exception as e:  # noqa: BLE001
                out.append({"ok": False, "error": message(e), "condition": condition(e)})
        return {"ok": True, "results": out}
    return {"ok": False, "error": "unknown op %r" % op, "condition": ""}


def watch_parent():
    """Ends this process (and with it the JVM, which exits when its stdin
    from us closes) when the Go test binary that started it is gone, e.g.
    killed by go test's -timeout in the middle of a long request."""
    parent = os.getppid()

    def loop():
        while True:
            time.sleep(2)
            if os.getppid() != parent:
                os._exit(3)

    threading.Thread(target=loop, daemon=True).start()


def main():
    watch_parent()
    spark = start()
    if spark is None:
        return
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
            resp = handle(spark, req)
        except Exception as e:  # noqa: BLE001  (an answer, never a crash)
            resp = {"ok": False, "error": message(e), "condition": condition(e)}
        answer(resp)
    spark.stop()


main()
_out.flush()
sys.stderr.flush()
os._exit(0)
