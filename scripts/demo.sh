#!/usr/bin/env bash
# The README's main job on the embedded default store (local filesystem, no server).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
go run ./cmd/deltactl version
