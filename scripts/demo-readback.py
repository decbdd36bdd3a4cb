"""Reads the demo's tables back with an independent reader and compares them
with what deltactl printed (scripts/demo.sh runs it with the venv's python).

    demo-readback.py delta-rs|spark TABLE PREDICATE ROWS_CSV ROW_COUNT [...]

For each table (4 arguments each): the reader's row count must be
ROW_COUNT, and the rows where the SQL PREDICATE holds must be the rows of
ROWS_CSV (deltactl cat --format csv of the same predicate), in any order.
Values compare as numbers when both sides are numbers, else as text
(timestamps and dates in ISO 8601, as deltactl prints them). Exit 1 on a
mismatch or a failed read. Spark's and delta-rs's own logs go to stderr.
"""
import csv
import datetime
import glob
import os
import re
import sys
import traceback


def norm(v):
    if v is None:
        return ""
    if isinstance(v, (datetime.datetime, datetime.date)):
        return v.isoformat()
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return float(v)
    try:
        return float(v)
    except ValueError:
        return v


def key(row):
    return tuple(sorted(row.items(), key=lambda kv: kv[0]))


def deltars(path, pred):
    import deltalake
    import pyarrow as pa
    dt = deltalake.DeltaTable(path)
    q = deltalake.QueryBuilder().register("t", dt)
    n = pa.table(q.execute("SELECT count(*) AS n FROM t").read_all()).column(0)[0].as_py()
    rows = pa.table(q.execute("SELECT * FROM t WHERE " + pred).read_all()).to_pylist()
    return "delta-rs %s" % deltalake.__version__, dt.version(), n, rows


_spark = None


def spark(path, pred):
    global _spark
    if _spark is None:
        import pyspark
        from pyspark.sql import SparkSession
        ivy = os.environ.get("DELTAKIT_IVY") or os.path.expanduser("~/.cache/deltakit/ivy")
        have = {re.sub(r"-\d.*$", "", os.path.basename(j))
                for j in glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "*.jar"))}
        jars = [j for j in sorted(glob.glob(os.path.join(ivy, "jars", "*.jar")))
                if os.path.basename(j).startswith("io.delta_")
                or re.sub(r"-\d.*$", "", os.path.basename(j).split("_", 1)[-1]) not in have]
        _spark = (SparkSession.builder.master("local[2]").appName("deltakit-demo")
                  .config("spark.jars", ",".join(jars))
                  .config("spark.ui.enabled", "false")
                  .config("spark.ui.showConsoleProgress", "false")
                  .config("spark.sql.shuffle.partitions", "2")
                  .config("spark.databricks.delta.snapshotPartitions", "2")
                  .config("spark.sql.session.timeZone", "UTC")
                  .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC")
                  .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
                  .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
                  .getOrCreate())
        _spark.sparkContext.setLogLevel("ERROR")
    df = _spark.read.format("delta").load(path)
    n = df.count()
    rows = [r.asDict() for r in df.where(pred).collect()]
    return "spark %s" % _spark.version, "latest", n, rows


def main():
    reader = {"delta-rs": deltars, "spark": spark}[sys.argv[1]]
    args = sys.argv[2:]
    ok = True
    for i in range(0, len(args), 4):
        path, pred, rows_csv, want_n = args[i], args[i + 1], args[i + 2], int(args[i + 3])
        with open(rows_csv, newline="") as f:
            want = sorted(key({k: norm(v) for k, v in r.items()}) for r in csv.DictReader(f))
        name, version, n, got = reader(path, pred)
        got = sorted(key({k: norm(v) for k, v in r.items()}) for r in got)
        same = got == want
        ok = ok and same and n == want_n
        print("%s: %s version %s: %d rows (deltactl: %d) %s; the %d rows printed above: %s" % (
            name, path, version, n, want_n, "ok" if n == want_n else "MISMATCH",
            len(want), "the same" if same else "MISMATCH"))
        if not same:
            for r in sorted(set(want) - set(got)):
                print("  only in deltactl's:", dict(r))
            for r in sorted(set(got) - set(want)):
                print("  only in the reader's:", dict(r))
    return ok


if __name__ == "__main__":
    try:
        ok = main()
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        ok = False
    sys.stdout.flush()
    sys.stderr.flush()
    # os._exit: deltalake's runtime sometimes aborts at interpreter exit.
    os._exit(0 if ok else 1)
