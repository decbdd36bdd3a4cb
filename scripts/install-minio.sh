#!/usr/bin/env bash
# Installs the MinIO server that testenv starts for the S3 tests, built from
# source at a pinned commit (about 10 minutes on 2 cores the first time).
# Idempotent: does nothing when the binary is already there.
#
# Where: $DELTAKIT_MINIO_BIN, the binary's path or a directory to hold
# "minio"; default ~/.cache/deltakit/minio/bin/minio. testenv looks in the
# same places, then on PATH.
#
# The MinIO server is AGPL-3.0. deltakit never links it: tests run it as a
# separate program and talk S3 to it.
set -euo pipefail
version=v0.0.0-20260212201848-7aac2a2c5b7c

bin=${DELTAKIT_MINIO_BIN:-$HOME/.cache/deltakit/minio/bin/minio}
if [ -d "$bin" ] || [[ "$bin" == */ ]]; then
  bin=${bin%/}/minio
fi
if [ -x "$bin" ]; then
  echo "minio: already installed at $bin"
  exit 0
fi

dir=$(dirname "$bin")
mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "minio: building github.com/minio/minio@$version into $bin"
# Build outside the repository so that our go.mod is neither read nor changed.
(cd "$tmp" && GOWORK=off GOBIN="$tmp/bin" go install "github.com/minio/minio@$version")
# Copy next to the target, then rename: an interrupted install leaves no
# half-written binary that the next run would take as installed.
cp "$tmp/bin/minio" "$bin.tmp.$$"
mv -f "$bin.tmp.$$" "$bin"
echo "minio: installed $("$bin" --version | head -n 1)"
