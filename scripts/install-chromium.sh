#!/usr/bin/env bash
# Installs the headless browser the HTML report test (cmd/deltactl
# TestReportHTMLInBrowser) renders `deltactl report --html` in: Debian's
# chromium package, with apt-get (as root, or through sudo without a
# password). Nothing else is downloaded.
# Idempotent: does nothing when $DELTAKIT_CHROMIUM is set to an executable
# or chromium, chromium-browser or Chrome is on the PATH (the test looks for
# the same names).
set -euo pipefail
if [ -n "${DELTAKIT_CHROMIUM:-}" ] && [ -x "$DELTAKIT_CHROMIUM" ]; then
  echo "chromium: using \$DELTAKIT_CHROMIUM=$DELTAKIT_CHROMIUM"
  exit 0
fi
for name in chromium chromium-browser google-chrome google-chrome-stable; do
  if p=$(command -v "$name"); then
    echo "chromium: already installed ($p)"
    exit 0
  fi
done
command -v apt-get > /dev/null || {
  echo "chromium: not found, and no apt-get to install it: install Chromium or Chrome, or set DELTAKIT_CHROMIUM" >&2
  exit 1
}
sudo=()
if [ "$(id -u)" != 0 ]; then
  if command -v sudo > /dev/null && sudo -n true 2> /dev/null; then
    sudo=(sudo -n)
  else
    echo "chromium: apt-get install chromium needs root (or sudo without a password); or set DELTAKIT_CHROMIUM" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "chromium: installing Debian's chromium with apt-get"
if ! "${sudo[@]}" apt-get install -y -q --no-install-recommends chromium > "$log" 2>&1; then
  # A fresh machine's package lists may be missing or stale.
  if ! { "${sudo[@]}" apt-get update -q && "${sudo[@]}" apt-get install -y -q --no-install-recommends chromium; } >> "$log" 2>&1; then
    tail -n 20 "$log" >&2
    exit 1
  fi
fi
echo "chromium: installed ($(command -v chromium))"
