#!/usr/bin/env bash
# The README's main job on the embedded default store (local filesystem, no
# server), on real data:
#
#   1. fetches the npm package vega-datasets@3.2.1 once (npm pack) into a cache
#      and takes data/flights-3m.parquet (3,000,000 flights written by Polars,
#      with a TIMESTAMP(MICROS, not UTC-adjusted) column) and
#      data/seattle-weather.csv (1,461 days);
#   2. builds deltactl;
#   3. ingests the flights into a Delta table as a stream of epochs through the
#      exactly-once sink, stops mid-stream, restarts with the source replaying
#      two already committed epochs, and shows that they are skipped;
#   4. prints history, snapshot and a few rows, verifies the log and the
#      exactly-once record, compacts the files with optimize, lists what
#      vacuum would delete and reports on the table (deltactl report, also
#      as HTML with plots: $DEMO_DIR/flights-report.html);
#   5. ingests the weather CSV into a table partitioned by weather;
#   6. reads both tables back with delta-rs, installing it first with
#      scripts/install-interop.sh (a venv with deltalake and pyarrow; idempotent;
#      without network the check is skipped with a message).
#
# Environment:
#   DEMO_DIR     where the tables go (default ./demo-data)
#   DEMO_CACHE   download cache (default ~/.cache/deltakit/demo)
#   DEMO_ROWS    flights to ingest (default 3000000: all)
#   DEMO_EPOCHS  epochs to split them into (default 30)
#   DEMO_STOP    epochs the first run commits before it stops (default 2/5 of them)
#   DELTAKIT_VENV  Python venv with deltalake (default ./.venv; see scripts/install-interop.sh)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
start_s=$(date +%s)

out=${DEMO_DIR:-$repo/demo-data}
cache=${DEMO_CACHE:-$HOME/.cache/deltakit/demo}
rows=${DEMO_ROWS:-3000000}
epochs=${DEMO_EPOCHS:-30}
stop=${DEMO_STOP:-$(( epochs * 2 / 5 > 0 ? epochs * 2 / 5 : 1 ))}
epoch_rows=$(( (rows + epochs - 1) / epochs ))
query=flights-demo

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$'; printf ' %q' "$@"; printf '\n'; "$@"; }

step "data: vega-datasets@3.2.1 (npm) in $cache"
DEMO_CACHE=$cache "$repo/scripts/fetch-demo-data.sh"
flights=$cache/flights-3m.parquet
weather=$cache/seattle-weather.csv
ls -l "$flights" "$weather"

step "build deltactl"
mkdir -p "$repo/bin"
go build -o "$repo/bin/deltactl" ./cmd/deltactl
deltactl() { "$repo/bin/deltactl" "$@"; }

mkdir -p "$out"
rm -rf "$out/flights" "$out/weather"
ft=$out/flights
wt=$out/weather

step "stream $rows flights as $epochs epochs of $epoch_rows rows; the first run stops after $stop epochs"
run deltactl ingest "$flights" "$ft" --max-rows "$rows" --epoch-rows "$epoch_rows" --query-id "$query" --max-epochs "$stop"

replay=$(( stop >= 2 ? stop - 2 : 0 ))
step "restart: the source replays from epoch $replay; the sink skips what the table holds"
run deltactl ingest "$flights" "$ft" --max-rows "$rows" --epoch-rows "$epoch_rows" --query-id "$query" --from-epoch "$replay"

step "history (last 5 commits)"
run deltactl history "$ft" --limit 5
step "snapshot"
run deltactl snapshot "$ft"
step "a few rows"
run deltactl cat "$ft" --limit 5 --where "delay > 60 AND origin = 'SFO'" --columns date,delay,distance,origin,destination
step "exactly once?"
run deltactl verify --exactly-once "$ft"
run deltactl verify "$ft"

step "maintenance: compact the small files (one OPTIMIZE commit, rows unchanged); what vacuum would delete"
run deltactl optimize "$ft"
run deltactl vacuum "$ft" --retain 0h --force --dry-run
run deltactl verify "$ft"

step "report: file sizes, partitions, deletion vectors, commits per hour, checkpoint and retention, and what to run"
run deltactl report "$ft" --html "$out/flights-report.html"

step "seattle-weather.csv into a table partitioned by weather"
run deltactl ingest "$weather" "$wt" --partition-by weather
run deltactl files "$wt"
run deltactl cat "$wt" --limit 3 --where "weather = 'snow'"

step "read back with delta-rs"
venv=${DELTAKIT_VENV:-$repo/.venv}
# install-interop.sh is idempotent: on a fresh clone it creates the venv with
# deltalake and pyarrow (pip, needs the network); later runs return at once.
if ! DELTAKIT_VENV="$venv" "$repo/scripts/install-interop.sh"; then
  echo "demo: scripts/install-interop.sh failed (no network or no python3-venv?); continuing without the delta-rs check" >&2
fi
# os._exit everywhere: deltalake's runtime sometimes aborts at interpreter
# exit ("terminate called without an active exception") after correct output.
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import os, sys, deltalake; sys.stdout.flush(); os._exit(0)' 2>/dev/null; then
  "$venv/bin/python" - "$ft" "$rows" "$wt" 1461 <<'PY'
import os, sys, traceback
try:
    import deltalake
    ok = True
    for path, want in ((sys.argv[1], int(sys.argv[2])), (sys.argv[3], int(sys.argv[4]))):
        t = deltalake.DeltaTable(path)
        n = t.to_pyarrow_table().num_rows
        status = "ok" if n == want else "MISMATCH"
        ok = ok and n == want
        print(f"delta-rs {deltalake.__version__}: {path} version {t.version()}: {n:,} rows (expected {want:,}) {status}")
except Exception:
    traceback.print_exc()
    sys.stdout.flush(); sys.stderr.flush()
    os._exit(1)
sys.stdout.flush()
os._exit(0 if ok else 1)
PY
else
  echo "delta-rs check skipped: no deltalake in $venv (scripts/install-interop.sh did not install it; see above)"
fi

step "done in $(( $(date +%s) - start_s ))s; tables in $out"
