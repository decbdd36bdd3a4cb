#!/usr/bin/env bash
# Measures deltakit against its floors and delta-rs (cmd/deltabench), after
# installing what the figures need: the MinIO server (P1, P2, P4, P6, P7) and the
# Python venv with deltalake (the delta-rs side of P3 and P11). See BENCHMARKS.md.
#
#   ./scripts/bench.sh                      full sizes (1-4 minutes on 2 cores; P11 adds 6-8 and ~5 GiB RSS)
#   ./scripts/bench.sh --quick              quick sizes, as CI runs them (5-30 s plus compiling)
#   ./scripts/bench.sh --only P1,P3 -o json
#   GOTEST=1 ./scripts/bench.sh             also go test -bench ./bench (same code, quick sizes)
#
# Arguments go to deltabench. No figure is compared with a threshold: the exit
# status is non-zero only when a figure fails to run. scripts/test.sh (CI) does
# not call this script; it runs go run ./cmd/deltabench --quick -o table itself.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

./scripts/install-minio.sh >&2
./scripts/install-interop.sh >&2 || echo "bench: delta-rs venv not installed; P3 and P11 measure deltakit only" >&2
export DELTAKIT_VENV=${DELTAKIT_VENV:-$repo/.venv}

go run ./cmd/deltabench "$@"
if [ -n "${GOTEST:-}" ]; then
  go test -run '^$' -bench . -benchtime=3x ./bench
fi
