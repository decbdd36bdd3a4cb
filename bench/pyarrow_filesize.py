# The pyarrow side of deltabench's S1 (issue 30 item 6: file sizes).
# Usage: python -c <this> INPUT_PARQUET ROWS ROW_GROUP_ROWS OUT_PARQUET OURS_PARQUET
# Reads the first ROWS rows of INPUT_PARQUET with pyarrow.parquet.read_table
# (Table.slice), writes them to
# OUT_PARQUET with pyarrow's default writer at ROW_GROUP_ROWS rows a row
# group (pq.write_table(tbl, out, row_group_size=N), nothing else set),
# timing only the write (cpu from time.process_time, all threads), then
# reads OURS_PARQUET (deltakit's file of the same rows) and checks that
# pyarrow reads the same table from it. Prints one JSON line, or
# {"error": ...}.
import json
import sys
import time
import warnings

warnings.simplefilter("ignore")

try:
    import pyarrow
    import pyarrow.parquet as pq
except Exception as e:  # the Go side reports the error
    print(json.dumps({"error": "import pyarrow: %s" % e}), flush=True)
    sys.exit(0)

src, rows, n, out, ours = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
try:
    tbl = pq.read_table(src).slice(0, rows)
    c0, t0 = time.process_time(), time.perf_counter()
    pq.write_table(tbl, out, row_group_size=n)
    t1, c1 = time.perf_counter(), time.process_time()
    md = pq.ParquetFile(out).metadata
    theirs = pq.read_table(ours)
    same = theirs.num_rows == tbl.num_rows and theirs.column_names == tbl.column_names
    diff = ""
    if same:
        try:
            same = theirs.cast(tbl.schema).equals(tbl)
        except Exception as e:
            same, diff = False, "cast %s to %s: %s" % (theirs.schema, tbl.schema, e)
    if not same and not diff:
        diff = "deltakit's file reads as %d rows of %s, the input as %d rows of %s" % (
            theirs.num_rows, theirs.column_names, tbl.num_rows, tbl.column_names)
        if theirs.num_rows == tbl.num_rows and theirs.column_names == tbl.column_names:
            cast = theirs.cast(tbl.schema)
            bad = [c for c in tbl.column_names if not cast[c].equals(tbl[c])]
            diff = "columns %s differ (deltakit's file: %s; input: %s)" % (bad, theirs.schema, tbl.schema)
    res = {"pyarrow": pyarrow.__version__, "wall": t1 - t0, "cpu": c1 - c0, "rows": md.num_rows,
           "row_groups": md.num_row_groups, "same": same, "diff": diff}
except Exception as e:
    res = {"error": "%s: %s" % (type(e).__name__, e)}
print(json.dumps(res), flush=True)
