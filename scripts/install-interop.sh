#!/usr/bin/env bash
# Installs the independent Delta readers used by the interop tests (delta-rs via
# the Python package deltalake, pyarrow, and Apache Spark with Delta Lake via
# pyspark and delta-spark) into a virtual environment, and resolves the Delta
# jars Spark needs from Maven Central once into an Ivy cache outside the
# repository ($DELTAKIT_IVY, default ~/.cache/deltakit/ivy), so that tests
# never download anything.
# Idempotent: does nothing when the pinned versions and the jars are there.
# The venv path is $DELTAKIT_VENV (default: <repo>/.venv); tests find its
# python through the same variable or the default path, and the jars through
# $DELTAKIT_IVY or its default.
# DELTAKIT_INTEROP=delta-rs installs only deltalake and pyarrow (no pyspark,
# no Ivy resolution: what scripts/demo.sh needs); a later run without it adds
# Spark to the same venv.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
venv=${DELTAKIT_VENV:-$repo/.venv}
ivy=${DELTAKIT_IVY:-$HOME/.cache/deltakit/ivy}
want="deltalake==1.6.6 pyarrow==26.0.1 pyspark==4.2.0 delta-spark==4.4.0"
stamp="$venv/.deltakit-interop"
jar="$ivy/jars/io.delta_delta-spark_4.2_2.13-4.4.0.jar"
case "${DELTAKIT_INTEROP:-all}" in
all) ;;
delta-rs)
  rs="deltalake==1.6.6 pyarrow==26.0.1"
  have=$(cat "$stamp" 2>/dev/null || true)
  if [ -x "$venv/bin/python" ] && { [ "$have" = "$rs" ] || [ "$have" = "$want" ]; }; then
    echo "interop: $rs already installed in $venv"
    exit 0
  fi
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
  fi
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check $rs
  # os._exit: deltalake's runtime sometimes aborts at interpreter exit.
  "$venv/bin/python" -c 'import os, sys, deltalake, pyarrow; print("interop: deltalake", deltalake.__version__, "pyarrow", pyarrow.__version__); sys.stdout.flush(); os._exit(0)'
  echo "$rs" > "$stamp"
  exit 0
  ;;
*)
  echo "install-interop: DELTAKIT_INTEROP=$DELTAKIT_INTEROP: want all or delta-rs" >&2
  exit 2
  ;;
esac
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ] && [ -f "$jar" ]; then
  echo "interop: $want already installed in $venv, Delta jars in $ivy"
  exit 0
fi
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check $want
"$venv/bin/python" -c 'import deltalake, pyarrow, pyspark, delta; print("interop: deltalake", deltalake.__version__, "pyarrow", pyarrow.__version__, "pyspark", pyspark.__version__)'
if [ ! -f "$jar" ]; then
  # One Spark session through delta.configure_spark_with_delta_pip makes Ivy
  # fetch io.delta:delta-spark and its dependencies into $ivy/jars; the test
  # oracle (internal/testsupport/spark_oracle.py) then puts those jars on
  # spark.jars directly.
  mkdir -p "$ivy"
  DELTAKIT_IVY="$ivy" "$venv/bin/python" - <<'PY'
import os
from pyspark.sql import SparkSession
from delta import configure_spark_with_delta_pip
b = (SparkSession.builder.master("local[1]").appName("deltakit-ivy-resolve")
     .config("spark.jars.ivy", os.environ["DELTAKIT_IVY"])
     .config("spark.ui.enabled", "false")
     .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
     .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"))
s = configure_spark_with_delta_pip(b).getOrCreate()
print("interop: spark", s.version, "resolved Delta jars")
s.stop()
PY
  test -f "$jar" || { echo "interop: $jar missing after Ivy resolution" >&2; exit 1; }
fi
echo "$want" > "$stamp"
