#!/usr/bin/env bash
# Runs every test of deltakit, installing first whatever is missing:
# Go modules, the MinIO server (for S3 tests) and the Python interop readers.
#
#   ./scripts/test.sh            all tests (race detector on the concurrent packages)
#   FUZZTIME=30s ./scripts/test.sh   longer fuzzing of commit decoding (default 10s)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

echo "== installing"
go mod download
./scripts/install-minio.sh
./scripts/install-interop.sh
export DELTAKIT_VENV=${DELTAKIT_VENV:-$repo/.venv}

echo "== go vet"
go vet ./...

# Packages whose correctness depends on concurrency run under the race detector.
race_pkgs=(./objectstore/... ./txlog/... ./streamsink/...)
echo "== go test -race ${race_pkgs[*]}"
go test -race -count=1 -timeout 30m "${race_pkgs[@]}"

others=$(go list ./... | grep -v -E '/(objectstore|txlog|streamsink)(/|$)' || true)
if [ -n "$others" ]; then
  echo "== go test (other packages)"
  # shellcheck disable=SC2086
  go test -count=1 -timeout 30m $others
fi

if grep -q 'func FuzzDecodeCommit' txlog/*_test.go 2>/dev/null; then
  echo "== fuzz FuzzDecodeCommit (${FUZZTIME:-10s})"
  go test -run='^$' -fuzz='^FuzzDecodeCommit$' -fuzztime="${FUZZTIME:-10s}" ./txlog
fi
echo "== benchmarks, quick sizes (figures only, no thresholds; BENCHMARKS.md)"
go run ./cmd/deltabench --quick -o table
echo "== all tests passed"
