# Two set-up-free entry points: `make bench` (main job on the embedded model) and `make test`.
PY := .venv/bin/python

.PHONY: setup bench test bench-ar

setup:
	@bash scripts/setup.sh

bench: setup
	$(PY) run_bench.py --methods ar,pld --tasks all --limit 2 --max-new-tokens 64

test:
	@SPECBENCH_BROWSER=1 SPECBENCH_LLAMACPP=1 bash scripts/setup.sh
	$(PY) -m pytest -q -n auto --maxprocesses=4

# engine AR vs transformers' own greedy generate (a benchmark, not a test)
bench-ar: setup
	$(PY) -m pytest tests/benchmarks/bench_ar_vs_generate.py --benchmark-enable --benchmark-only -q -s
