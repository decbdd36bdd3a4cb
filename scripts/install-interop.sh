#!/usr/bin/env bash
# Installs the independent Delta readers used by the interop tests (delta-rs via
# the Python package deltalake, and pyarrow) into a virtual environment.
# Idempotent: does nothing when the pinned versions are already there.
# The venv path is $DELTAKIT_VENV (default: <repo>/.venv); tests find its
# python through the same variable or the default path.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
venv=${DELTAKIT_VENV:-$repo/.venv}
want="deltalake==1.6.6 pyarrow==26.0.1"
stamp="$venv/.deltakit-interop"
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "interop: $want already installed in $venv"
  exit 0
fi
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check $want
"$venv/bin/python" -c 'import deltalake, pyarrow; print("interop: deltalake", deltalake.__version__, "pyarrow", pyarrow.__version__)'
echo "$want" > "$stamp"
