#!/usr/bin/env bash
# Fetches the demo data once into a cache (default ~/.cache/deltakit/demo,
# or $DEMO_CACHE): the npm package vega-datasets@3.2.1 (npm pack), from which
# it takes data/flights-3m.parquet (3,000,000 flights written by Polars) and
# data/seattle-weather.csv (1,461 days). Idempotent; needs npm and tar the
# first time. scripts/demo.sh and scripts/test.sh use it.
set -euo pipefail
cache=${DEMO_CACHE:-$HOME/.cache/deltakit/demo}
mkdir -p "$cache"
flights=$cache/flights-3m.parquet
weather=$cache/seattle-weather.csv
tgz=$cache/vega-datasets-3.2.1.tgz
if [ ! -f "$flights" ] || [ ! -f "$weather" ]; then
  if [ ! -f "$tgz" ]; then
    if ! command -v npm >/dev/null; then
      echo "fetch-demo-data: npm is needed to fetch vega-datasets@3.2.1 (apt-get install npm)" >&2
      exit 1
    fi
    npm pack --silent --pack-destination "$cache" vega-datasets@3.2.1 >/dev/null
  fi
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  tar -xzf "$tgz" -C "$tmp" package/data/flights-3m.parquet package/data/seattle-weather.csv
  mv "$tmp/package/data/flights-3m.parquet" "$flights.tmp" && mv "$flights.tmp" "$flights"
  mv "$tmp/package/data/seattle-weather.csv" "$weather.tmp" && mv "$weather.tmp" "$weather"
fi
