#!/usr/bin/env bash
# Check a GPU install in one command (no network): install the wheels carried in .whl/ (made here by
# scripts/gpu_wheels.sh) into /tmp/site, then run scripts/gpu_check.py with these arguments, e.g.
#   bash scripts/gpu_check.sh --device cuda --out "$OUT"
# It exits non-zero when a method's output differs from AR's (a MISMATCH) or a step crashes.
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if compgen -G ".whl/*.whl" > /dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "gpu_check: installing the wheels of .whl/ failed" >&2; exit 2; }
  export PYTHONPATH="/tmp/site:${PYTHONPATH:-}"
fi
export PYTHONPATH="$PWD:${PYTHONPATH:-}"  # the project is not pip-installed on the GPU machine
exec "$PY" scripts/gpu_check.py "$@"
