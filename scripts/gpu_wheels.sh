#!/usr/bin/env bash
# Download, into .whl/ (ignored by git), the wheels scripts/gpu_check.sh installs on a GPU machine without
# network: the packages the check imports that such a machine's image lacks, for CPython 3.12 on
# manylinux x86_64. The image has torch, transformers, safetensors, tokenizers, numpy, scipy, tabulate,
# pyyaml, pytest, tqdm, jinja2, psutil, scikit-learn, packaging and matplotlib with its dependencies (the
# device's package list, read 2026-11-17); it lacks pydivsufsort (samd's automaton) and faiss-cpu (dresd's
# index), whose own needs (numpy, packaging, wheel) it has. Versions are this project's tested ones.
# Usage: bash scripts/gpu_wheels.sh   (about 21 MB; carry .whl to the machine)
set -euo pipefail
cd "$(dirname "$0")/.."
PACKAGES=(pydivsufsort==0.0.20 faiss-cpu==1.15.1)
mkdir -p .whl
for p in "${PACKAGES[@]}"; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl "$p"
done
du -sh .whl
