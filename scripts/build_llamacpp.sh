#!/usr/bin/env bash
# Build llama.cpp once from llama-cpp-python's sdist (the llama.cpp source it vendors): the shared libraries its
# bindings load and llama.cpp's server (llama-server, an engine under test), in one cmake build, kept in a cache
# folder keyed by the version, these flags and this CPU (GGML_NATIVE builds for this CPU's instructions only).
# Usage: scripts/build_llamacpp.sh PYTHON VERSION   -> prints the folder (lib/ holds the libraries and the server)
set -euo pipefail
PY=$1
VERSION=$2
cache="${SPECBENCH_CACHE:-$HOME/.cache/specbench}/llama.cpp"
# Release, shared libraries (the bindings load them), this CPU only, the server and nothing else of the tools,
# no web UI (nothing downloaded), every binary finding its libraries beside it ($ORIGIN)
flags=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=ON -DLLAMA_BUILD_TESTS=OFF
       -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_USE_PREBUILT_UI=OFF
       -DLLAMA_BUILD_UI=OFF -DLLAMA_OPENSSL=OFF -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON '-DCMAKE_INSTALL_RPATH=$ORIGIN')
# ggml's AMX matrix kernels (enabled by -march=native on Sapphire Rapids and later Xeons) crash this version on
# small quantised models (a segfault in the first decode of a Q8_0 or Q4_1 GGUF, seen here; llama.cpp issue
# #20824 reports the same machine-dependent crash): on a CPU with AMX they are compiled out, and ggml uses its
# AVX-512 kernels instead (explicit -mno-* flags win over -march=native whatever their order)
if grep -qm1 '^flags.* amx_int8' /proc/cpuinfo 2>/dev/null; then
  flags+=("-DCMAKE_C_FLAGS=-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
          "-DCMAKE_CXX_FLAGS=-mno-amx-tile -mno-amx-int8 -mno-amx-bf16")
fi
cpu=$( (uname -m; grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true) | sha256sum | cut -c1-8)
key=$(printf '%s\n' "$VERSION" "${flags[*]}" | sha256sum | cut -c1-12)
out="$cache/$VERSION-$key-$cpu"
if [ ! -x "$out/lib/llama-server" ] || [ ! -f "$out/lib/libllama.so" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  echo "[setup] building llama.cpp $VERSION (libraries + llama-server) from source: about 5 minutes on 2 cores" >&2
  "$PY" -m pip download -q --no-deps --no-binary :all: "llama-cpp-python==$VERSION" -d "$work" >&2
  tar -xzf "$work"/llama_cpp_python-"$VERSION".tar.gz -C "$work"
  src="$work/llama_cpp_python-$VERSION/vendor/llama.cpp"
  cmake -S "$src" -B "$work/build" "${flags[@]}" >"$work/configure.log" 2>&1 || { tail -20 "$work/configure.log" >&2; exit 1; }
  cmake --build "$work/build" --target llama-server -j "${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" >"$work/build.log" 2>&1 \
    || { tail -20 "$work/build.log" >&2; exit 1; }
  mkdir -p "$out.tmp/lib"
  cp -a "$work/build/bin/"*.so* "$work/build/bin/llama-server" "$out.tmp/lib/"
  cp "$work"/llama_cpp_python-"$VERSION".tar.gz "$out.tmp/"
  rm -rf "$out"
  mv "$out.tmp" "$out"
fi
echo "$out"
