#!/usr/bin/env bash
# The story a user of Delta tables lives, with deltactl on the embedded
# default store (local filesystem, no server), on real data:
#
#   1. fetches the npm package vega-datasets@3.2.1 once (npm pack) into a cache
#      and takes data/flights-3m.parquet (3,000,000 flights written by Polars,
#      with a TIMESTAMP(MICROS, not UTC-adjusted) column) and
#      data/seattle-weather.csv (1,461 days);
#   2. builds deltactl;
#   3. streams the flights into a Delta table (deletion vectors and the change
#      data feed enabled) as epochs through the exactly-once sink, stops
#      mid-stream, restarts with the source replaying two already committed
#      epochs, and shows that they are skipped;
#   4. late corrections: a MERGE by key (date, origin, destination) that
#      updates three flights and inserts a late one;
#   5. a GDPR-style erasure: a DELETE of every flight between BTR and MEM,
#      with deletion vectors (no data file is rewritten);
#   6. an UPDATE of three AUS->CLE delays booked with the wrong sign;
#   7. the change data feed of those three versions;
#   8. a bad load (a backfill appends the first epoch again, outside the
#      exactly-once sink: duplicates, and the erased flights are back) and a
#      RESTORE to the version before it;
#   9. verifies the log and the exactly-once record, compacts with optimize,
#      lists what vacuum would delete and reports on the table (deltactl
#      report, also as HTML with plots: $DEMO_DIR/flights-report.html);
#  10. ingests the weather CSV into a table partitioned by weather;
#  11. prints the rows the readers must read back (also in
#      $DEMO_DIR/flights-rows.csv and weather-rows.csv) and reads both tables
#      back with delta-rs, installing only deltalake and pyarrow with
#      DELTAKIT_INTEROP=delta-rs scripts/install-interop.sh (idempotent;
#      without network the check is skipped with a message); and with Spark
#      too when the tests installed it (pyspark in the venv and the Delta jars
#      in the Ivy cache; its logs are kept out of the output).
#
# Environment:
#   DEMO_DIR     where the tables go (default ./demo-data)
#   DEMO_CACHE   download cache (default ~/.cache/deltakit/demo)
#   DEMO_ROWS    flights to ingest (default 3000000: all; at least 100000 so
#                that the story's flights of the first three days are there)
#   DEMO_EPOCHS  epochs to split them into (default 30)
#   DEMO_STOP    epochs the first run commits before it stops (default 2/5 of them)
#   DELTAKIT_VENV  Python venv with deltalake (default ./.venv; see scripts/install-interop.sh)
#   DEMO_SPARK   0: no Spark read-back even when the tests installed Spark
#   DELTAKIT_IVY   Ivy cache with the Delta jars for Spark (default ~/.cache/deltakit/ivy)
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
run deltactl ingest "$flights" "$ft" --max-rows "$rows" --epoch-rows "$epoch_rows" --query-id "$query" --max-epochs "$stop" \
  --property delta.enableDeletionVectors=true --property delta.enableChangeDataFeed=true

replay=$(( stop >= 2 ? stop - 2 : 0 ))
step "restart: the source replays from epoch $replay; the sink skips what the table holds"
run deltactl ingest "$flights" "$ft" --max-rows "$rows" --epoch-rows "$epoch_rows" --query-id "$query" --from-epoch "$replay" \
  --property delta.enableDeletionVectors=true --property delta.enableChangeDataFeed=true

# The story's rows: the flights of the first minute (the MERGE), every
# flight between BTR and MEM (the erasure) and three AUS->CLE flights (the
# UPDATE). Readers must read these back as deltactl prints them at the end.
w_merge="date = TIMESTAMP '2001-01-01 00:01:00'"
w_erase="(origin = 'BTR' AND destination = 'MEM') OR (origin = 'MEM' AND destination = 'BTR')"
w_update="origin = 'AUS' AND destination = 'CLE' AND date < TIMESTAMP '2001-01-04 00:00:00'"
w_story="($w_merge) OR ($w_erase) OR ($w_update)"
version() { deltactl snapshot "$1" -o json | sed -n 's/^  "version": \([0-9]*\),$/\1/p'; }
rows() { deltactl snapshot "$1" | sed -n 's/^rows: *//p'; }
count() { deltactl cat "$ft" --where "$1" --format csv --limit 0 | tail -n +2 | wc -l | tr -d ' '; }

step "history (last 3 commits) and snapshot"
run deltactl history "$ft" --limit 3
run deltactl snapshot "$ft"
step "exactly once?"
run deltactl verify --exactly-once "$ft"

step "late corrections: MERGE by key (date, origin, destination): three delays corrected, one late flight"
run deltactl cat "$ft" --where "$w_merge"
corrections=$out/corrections.csv
cat >"$corrections" <<'CSV'
date,delay,distance,origin,destination
2001-01-01T00:01:00,48,2176,LAS,PHL
2001-01-01T00:01:00,7,215,ATL,SAV
2001-01-01T00:01:00,-2,2345,ANC,LAX
2001-01-01T00:01:00,12,337,SFO,LAX
CSV
run cat "$corrections"
run deltactl merge "$ft" --source "$corrections" --on date,origin,destination
v_merge=$(version "$ft")
run deltactl cat "$ft" --where "$w_merge"

step "GDPR-style erasure: DELETE every flight between BTR and MEM (deletion vectors: no data file rewritten)"
echo "flights between BTR and MEM: $(count "$w_erase")"
run deltactl delete "$ft" --where "$w_erase"
echo "flights between BTR and MEM: $(count "$w_erase")"

step "UPDATE: three AUS->CLE delays were booked with the wrong sign"
run deltactl cat "$ft" --where "$w_update"
run deltactl update "$ft" --set 'delay = 0 - delay' --where "$w_update"
v_update=$(version "$ft")
run deltactl cat "$ft" --where "$w_update"

step "change data feed of versions $v_merge-$v_update (MERGE, DELETE, UPDATE)"
echo "rows per version and change type:"
deltactl changes "$ft" --from "$v_merge" --to "$v_update" --columns origin --format csv |
  awk -F, 'NR > 1 { n[$3 " " $2]++ } END { for (k in n) print "  version " k ": " n[k] }' | sort
run deltactl changes "$ft" --from "$v_merge" --to "$v_update" --where "($w_merge) OR ($w_update)" --columns date,delay,origin,destination

step "a bad load: a backfill appends the first epoch again, outside the exactly-once sink"
before=$(rows "$ft")
run deltactl ingest "$flights" "$ft" --max-rows "$epoch_rows"
echo "rows: $(rows "$ft") (was $before); flights between BTR and MEM: $(count "$w_erase") (erased, and back)"
step "RESTORE to version $v_update, the version before the bad load"
run deltactl restore "$ft" --version "$v_update"
echo "rows: $(rows "$ft"); flights between BTR and MEM: $(count "$w_erase")"
run deltactl history "$ft" --limit 6

step "verify: the log, the values and the exactly-once record"
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
w_snow="weather = 'snow' AND date < DATE '2013-01-01'"

step "the rows the readers must read back"
ft_rows=$(rows "$ft")
wt_rows=$(rows "$wt")
deltactl cat "$ft" --where "$w_story" --format csv --limit 0 >"$out/flights-rows.csv"
deltactl cat "$wt" --where "$w_snow" --format csv --limit 0 >"$out/weather-rows.csv"
echo "flights: $ft_rows rows; where $w_story:"
cat "$out/flights-rows.csv"
echo "weather: $wt_rows rows; where $w_snow:"
cat "$out/weather-rows.csv"

step "read back with delta-rs"
venv=${DELTAKIT_VENV:-$repo/.venv}
ivy=${DELTAKIT_IVY:-$HOME/.cache/deltakit/ivy}
readback=("$ft" "$w_story" "$out/flights-rows.csv" "$ft_rows" "$wt" "$w_snow" "$out/weather-rows.csv" "$wt_rows")
# install-interop.sh is idempotent: on a fresh clone it creates the venv with
# deltalake and pyarrow only (pip, needs the network); later runs, and a venv
# the tests installed, return at once.
if ! DELTAKIT_INTEROP=delta-rs DELTAKIT_VENV="$venv" "$repo/scripts/install-interop.sh"; then
  echo "demo: scripts/install-interop.sh failed (no network or no python3-venv?); continuing without the delta-rs check" >&2
fi
# os._exit: deltalake's runtime sometimes aborts at interpreter exit
# ("terminate called without an active exception") after correct output.
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import os, sys, deltalake; sys.stdout.flush(); os._exit(0)' 2>/dev/null; then
  "$venv/bin/python" "$repo/scripts/demo-readback.py" delta-rs "${readback[@]}"
else
  echo "delta-rs check skipped: no deltalake in $venv (scripts/install-interop.sh did not install it; see above)"
fi
# Spark only when the tests installed it (scripts/test.sh): pyspark in the
# venv and the Delta jars in the Ivy cache, put on spark.jars directly (no
# Ivy resolution); its logs go to a file, shown only when it fails.
# DEMO_SPARK=0 leaves Spark out (it takes 20 s to minutes on 2 cores).
if [ "${DEMO_SPARK:-auto}" != 0 ] && [ -x "$venv/bin/python" ] && [ -f "$ivy/jars/io.delta_delta-spark_4.2_2.13-4.4.0.jar" ] &&
  "$venv/bin/python" -c 'import pyspark, delta' 2>/dev/null; then
  step "read back with Spark (installed by the tests)"
  if ! DELTAKIT_IVY="$ivy" "$venv/bin/python" "$repo/scripts/demo-readback.py" spark "${readback[@]}" 2>"$out/spark.log"; then
    tail -n 20 "$out/spark.log" >&2
    exit 1
  fi
fi

step "done in $(( $(date +%s) - start_s ))s; tables in $out"
