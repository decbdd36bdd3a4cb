#!/usr/bin/env bash
# Runs every test of deltakit, installing first whatever is missing:
# Go modules, the MinIO server (for S3 tests), the Kafka broker jars (for
# the Kafka tests), the Python interop readers and Chromium (for the test
# that renders deltactl report --html in a headless browser).
#
#   ./scripts/test.sh            all tests (race detector on the concurrent packages)
#   FUZZTIME=1000000x ./scripts/test.sh   longer fuzzing of log decoding (default 100000x:
#                                    a count, not a duration: a duration's end races Go 1.26's
#                                    fuzz coordinator, golang/go#75804, and fails the run with
#                                    "context deadline exceeded" and no crasher)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

echo "== installing"
go mod download
./scripts/install-minio.sh
./scripts/install-kafka.sh
./scripts/install-interop.sh
./scripts/install-chromium.sh
export DELTAKIT_VENV=${DELTAKIT_VENV:-$repo/.venv}
# The demo data (npm vega-datasets@3.2.1): the demo test and the Polars
# flights test read it.
./scripts/fetch-demo-data.sh
export DELTAKIT_FLIGHTS_PARQUET=${DELTAKIT_FLIGHTS_PARQUET:-${DEMO_CACHE:-$HOME/.cache/deltakit/demo}/flights-3m.parquet}

echo "== gofmt, go vet, staticcheck"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt needed on:"; echo "$unformatted"; exit 1
fi
go vet ./...
# Pinned, run from the module proxy (no install step, nothing added to go.mod).
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

# gotest runs go test -v, keeps the whole output in a log and prints the
# package results, skips, failures and the summary lines tests print (MinIO
# conformance, corpus, crash matrix), so CI output shows what ran.
logdir=$(mktemp -d)
trap 'status=$?; if [ "$status" = 0 ]; then rm -rf "$logdir"; fi' EXIT
gotest() {
  local log="$logdir/$1.log"
  shift
  if go test -v -count=1 -timeout 30m "$@" > "$log" 2>&1; then
    grep -E '^(ok|FAIL|panic:)|^--- SKIP|^    --- SKIP|^--- PASS: Test[^ /]*(MinIO|S3|Local|Mem|Faulty|Corpus|Interop|Crash|Kafka|Demo|Browser|Conformance)|^(crash matrix|corpus|corpus scan):' "$log" || true
  else
    echo "---- failures (full log: $log) ----"
    grep -n -B3 -A40 -E -- '--- FAIL|^panic:|^FAIL' "$log" | head -600
    return 1
  fi
}

# Packages whose correctness depends on concurrency run under the race detector.
race_pkgs=(./objectstore/... ./txlog/... ./streamsink/...)
echo "== go test -race ${race_pkgs[*]}"
gotest race -race "${race_pkgs[@]}"

others=$(go list ./... | grep -v -E '/(objectstore|txlog|streamsink)(/|$)' || true)
if [ -n "$others" ]; then
  echo "== go test (other packages)"
  # shellcheck disable=SC2086
  gotest others $others
fi

# Fuzz what decodes untrusted log bytes and what must round-trip them exactly,
# and that counts in log file names and _last_checkpoint bound no allocation.
for spec in txlog:FuzzDecodeCommit txlog/internal/textpack:FuzzPackStats txlog/internal/textpack:FuzzPackPath \
  txlog:FuzzParseLogKey txlog:FuzzLastCheckpoint table/internal/maint:FuzzMissingParts; do
  pkg=${spec%%:*} target=${spec#*:}
  if ! grep -q "func $target" "$pkg"/*_test.go; then
    echo "fuzz target $target is gone from $pkg: update scripts/test.sh"; exit 1
  fi
  echo "== fuzz $target (${FUZZTIME:-100000x})"
  go test -run='^$' -fuzz="^$target\$" -fuzztime="${FUZZTIME:-100000x}" "./$pkg"
done
echo "== benchmarks, quick sizes (figures only, no thresholds; BENCHMARKS.md)"
go run ./cmd/deltabench --quick -o table
echo "== all tests passed"
