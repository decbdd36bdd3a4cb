# The oracle of TestCatArrowDeltaRS (oracle_test.go): delta-rs
# (deltalake.DeltaTable(...).to_pyarrow_table()) and pyarrow.compute, in
# one process for every table, driven by JSON lines on stdin:
#
#  1. {"tables": [{"name": n, "path": p, "sql": s}, ...]}: reads every
#     table with delta-rs (with its DataFusion scan, "select * from t", when
#     s is true: it applies deletion vectors and column mapping, which
#     to_pyarrow_table() refuses or reads as nulls; on a copy under
#     directory c whose protocol lacks reader feature f when "strip": f and
#     "copy": c are given; with pyarrow.parquet from the files a replay of
#     the JSON commits leaves when "files" is true, for a table without
#     partitions, deletion vectors nor checkpoints) and answers one line per table, in order: {"name": n, "rows":
#     r, "filters": [where, ...]} or {"name": n, "error": message}. The
#     filters are --where texts built from delta-rs's values: an equality on
#     a primitive column (its middle distinct value) and a range on an
#     ordered column (between its first and third quartile of distinct
#     values) and, on a partitioned table, an equality on a partition column.
#  2. then, one line per case, {"name": n, "filter": i, "file": f}: reads f
#     as an Arrow IPC stream with pyarrow and compares it with table n's
#     delta-rs table (filter -1) or with that table filtered by
#     pyarrow.compute (filter i of step 1), answering {"ok": rows} or
#     {"diff": what differs}. Schemas must be equal (names, types,
#     nullability; metadata aside), values equal as multisets of rows.
import datetime, json, os, re, shutil, sys

import deltalake
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
import pyarrow.parquet as pq


def answer(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


SIMPLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def literal(v):
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    if isinstance(v, datetime.date):
        return "DATE '%s'" % v.isoformat()
    raise TypeError(type(v))


def eq_kind(t):
    return (pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
            or pa.types.is_date32(t) or pa.types.is_boolean(t))


def range_kind(t):
    return (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_date32(t)
            or pa.types.is_string(t) or pa.types.is_large_string(t))


def distinct(col):
    u = pc.unique(pc.drop_null(col))
    if pa.types.is_floating(u.type):
        u = pc.filter(u, pc.invert(pc.is_nan(u)))
    return pc.sort_indices(u), u


def equality(tbl, f, u):
    """Returns (where, mask) for f = the middle of its sorted distinct values u."""
    v = u[len(u) // 2]
    return ("`%s` = %s" % (f.name, literal(v.as_py())), pc.equal(tbl[f.name], v))


def filters(tbl, partition_columns):
    """Returns [(where, mask)], mask a boolean array over tbl's rows."""
    out = []
    fields = [f for f in tbl.schema if SIMPLE.match(f.name)]
    for f in fields:
        if f.name in partition_columns and eq_kind(f.type):
            idx, u = distinct(tbl[f.name])
            if len(u) > 0:
                out.append(equality(tbl, f, pc.take(u, idx)))
                break
    # Equality: prefer a column with several distinct values.
    best = None
    for f in fields:
        if not eq_kind(f.type) or f.name in partition_columns:
            continue
        idx, u = distinct(tbl[f.name])
        if len(u) == 0:
            continue
        if best is None or (len(u) > 1 and best[2] < 2):
            best = (f, pc.take(u, idx), len(u))
        if len(u) > 1 and not pa.types.is_boolean(f.type):
            break
    if best is not None:
        out.append(equality(tbl, best[0], best[1]))
    # Range: prefer a column other than the equality's.
    eqname = best[0].name if best is not None else None
    for f in sorted(fields, key=lambda f: f.name == eqname):
        if not range_kind(f.type):
            continue
        idx, u = distinct(tbl[f.name])
        if len(u) < 2:
            continue
        u = pc.take(u, idx)
        lo, hi = u[len(u) // 4], u[(3 * len(u)) // 4]
        where = "`%s` >= %s AND `%s` < %s" % (f.name, literal(lo.as_py()), f.name, literal(hi.as_py()))
        mask = pc.and_(pc.greater_equal(tbl[f.name], lo), pc.less(tbl[f.name], hi))
        out.append((where, mask))
        break
    return out


def stripped(path, feature, into):
    """Copies the table at path into the folder into, the feature removed
    from its protocol actions, and returns the copy's path."""
    dst = os.path.join(into, os.path.basename(path))
    shutil.copytree(path, dst)
    log = os.path.join(dst, "_delta_log")
    for name in os.listdir(log):
        if not name.endswith(".json"):
            continue
        lines = []
        with open(os.path.join(log, name)) as f:
            for line in f:
                a = json.loads(line)
                for k in ("readerFeatures", "writerFeatures"):
                    if k in a.get("protocol", {}):
                        a["protocol"][k] = [x for x in a["protocol"][k] if x != feature]
                lines.append(json.dumps(a))
        with open(os.path.join(log, name), "w") as f:
            f.write("\n".join(lines) + "\n")
    return dst


def from_files(path):
    """Reads the live files of a table with only JSON commits, no partition
    columns and no deletion vectors with pyarrow.parquet, INT96 as
    microseconds and Delta timestamps as timestamp[us, tz=UTC]."""
    log = os.path.join(path, "_delta_log")
    live = {}
    for name in sorted(n for n in os.listdir(log) if n.endswith(".json")):
        with open(os.path.join(log, name)) as f:
            for line in f:
                a = json.loads(line)
                if "add" in a:
                    assert not a["add"].get("partitionValues") and not a["add"].get("deletionVector")
                    live[a["add"]["path"]] = True
                elif "remove" in a:
                    live.pop(a["remove"]["path"], None)
    parts = [pq.read_table(os.path.join(path, p), coerce_int96_timestamp_unit="us") for p in live]
    tbl = pa.concat_tables(parts)
    return tbl.cast(pa.schema([f.with_type(pa.timestamp("us", "UTC")) if pa.types.is_timestamp(f.type) else f
                               for f in tbl.schema]))


def unview(t):
    """Returns type t with the view types of DataFusion's output (string_view,
    binary_view) replaced by the plain ones to_pyarrow_table() gives."""
    if pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(unview(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(unview(t.value_type)))
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(unview(t.key_type)), t.item_field.with_type(unview(t.item_type)))
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(unview(f.type)) for f in t])
    return t


def row_key(r):
    return repr(r)


def compare(got, want):
    if not got.schema.equals(want.schema, check_metadata=False):
        return "schema differs:\n--- deltactl\n%s\n--- delta-rs\n%s" % (got.schema, want.schema)
    if got.num_rows != want.num_rows:
        return "rows: deltactl %d, delta-rs %d" % (got.num_rows, want.num_rows)
    keys = [(f.name, "ascending") for f in want.schema
            if not pa.types.is_nested(f.type) and not pa.types.is_floating(f.type)]
    try:
        if keys and got.sort_by(keys).equals(want.sort_by(keys)):
            return None
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, TypeError):
        pass
    # Ties in the sort keys, unsortable or floating columns (NaN != NaN in
    # Table.equals): compare the repr of every row as a multiset.
    g = sorted(map(row_key, got.to_pylist()))
    w = sorted(map(row_key, want.to_pylist()))
    if g == w:
        return None
    for a, b in zip(g, w):
        if a != b:
            return "row differs:\n deltactl %s\n delta-rs  %s" % (a, b)
    return "rows differ"


def main():
    req = json.loads(sys.stdin.readline())
    tables = {}
    for t in req["tables"]:
        try:
            path = t["path"]
            if t.get("strip"):
                path = stripped(path, t["strip"], t["copy"])
            dt = deltalake.DeltaTable(path)
            if t.get("files"):
                tbl = from_files(path)
            elif t.get("sql"):
                q = deltalake.QueryBuilder().register("t", dt).execute("select * from t")
                tbl = pa.table(q.read_all())
                tbl = tbl.cast(pa.schema([f.with_type(unview(f.type)) for f in tbl.schema]))
            else:
                tbl = dt.to_pyarrow_table()
            parts = set(dt.metadata().partition_columns)
        except Exception as e:  # noqa: BLE001 - the reason is the answer
            answer({"name": t["name"], "error": "%s: %s" % (type(e).__name__, e)})
            continue
        fs = filters(tbl, parts)
        tables[t["name"]] = (tbl, fs)
        answer({"name": t["name"], "rows": tbl.num_rows, "filters": [w for w, _ in fs]})
    for line in sys.stdin:
        c = json.loads(line)
        tbl, fs = tables[c["name"]]
        try:
            if c["filter"] >= 0:
                tbl = tbl.filter(fs[c["filter"]][1])
            with open(c["file"], "rb") as f:
                got = ipc.open_stream(f).read_all()
            diff = compare(got, tbl)
        except Exception as e:  # noqa: BLE001
            diff = "%s: %s" % (type(e).__name__, e)
        answer({"diff": diff} if diff else {"ok": tbl.num_rows})


main()
