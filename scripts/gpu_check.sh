#!/usr/bin/env bash
# Check a GPU install in one command (no network): install the wheels carried in .whl/ (made here by
# scripts/gpu_wheels.sh) into /tmp/site, then run scripts/gpu_check.py with these arguments, e.g.
#   bash scripts/gpu_check.sh --device cuda --out "$OUT"
# It exits non-zero when a method's output differs from AR's (a MISMATCH) or a step crashes.
# The Python it runs: $PYTHON when set, else the project's .venv/bin/python when present (make setup), else
# python3. One without torch is refused in one line (exit 2) before anything runs: every step would crash.
set -uo pipefail
cd "$(dirname "$0")/.."
if [[ -n "${PYTHON:-}" ]]; then
  PY="$PYTHON"; WHICH="PYTHON=$PYTHON"
elif [[ -x .venv/bin/python ]]; then
  PY=.venv/bin/python; WHICH="the project's .venv/bin/python (PYTHON unset)"
else
  PY=python3; WHICH="python3 (PYTHON unset, no .venv)"
fi
if ! command -v "$PY" > /dev/null 2>&1; then
  echo "gpu_check: $WHICH is not a program here; set PYTHON to a python with torch" >&2; exit 2
fi
if ! "$PY" -c "import torch" > /dev/null 2>&1; then
  echo "gpu_check: $WHICH cannot import torch; set PYTHON to a python with torch (or run make setup for .venv)" >&2
  exit 2
fi
if compgen -G ".whl/*.whl" > /dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "gpu_check: installing the wheels of .whl/ failed" >&2; exit 2; }
  export PYTHONPATH="/tmp/site:${PYTHONPATH:-}"
fi
export PYTHONPATH="$PWD:${PYTHONPATH:-}"  # the project is not pip-installed on the GPU machine
exec "$PY" scripts/gpu_check.py "$@"
