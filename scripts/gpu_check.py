"""One prepared check of a GPU install (``scripts/gpu_check.sh`` installs the carried wheels, then runs this):

1. environment: torch, CUDA, GPU, the project's commit, the packages the check needs;
2. exactness: every registered method on tiny random llama, qwen2, gpt2 and neox models through the real
   ``Runner`` in float32 (TF32 off), bfloat16 and float16: 0 MISMATCH (ties counted per method and dtype);
3. cli: ``run_bench.py`` end to end on a small random Llama at batch sizes 1 and 4, ``--budget both``;
4. cost profile: T(n)/T(1), n = 1..64, after 1k and 8k tokens on a Llama-7B-shaped bfloat16 model,
   written as ``profile.json``;
5. device profile: the embedded model's shape (SmolLM2-135M, random weights) and its drafters' models, float32
   and bfloat16, written as ``device-profile-embedded.json`` (float32) and ``device-profile-embedded-bfloat16.json``:
   ``specbench project RUN --onto`` prices a CPU run of the embedded model with it (``gpucheck/embedded_profile.py``);
6. first visit: AR's decode step the first time it meets a prompt's lengths against the second time (a
   kernel that builds per shape would slow the method timed first, AR, alone);
7. the ``compiled`` backend (``gpucheck/compiled_step.py``): the 7B shape's T(n) compiled against eager and the
   bandwidth floor, the same CLI run on ``fast`` and ``compiled`` (speedups, ranking), every method exact through
   it in three dtypes; ``--only compiled`` runs the environment and these alone (one 8-minute device call),
   ``--only eager`` every step but these;
8. ``summary.md`` and ``summary.json`` in ``--out`` (default ``$OUT``, else a new temporary folder).

Exits 1 when a step finds a MISMATCH or crashes (a crashed step is recorded and the next one runs), else 0.
``--device cpu`` is the smoke mode CI runs (tiny sizes, about a minute on 2 cores).

Example: ``python scripts/gpu_check.py --device cpu --out /tmp/check`` writes ``/tmp/check/summary.md``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _p in (ROOT, ROOT / "tests", ROOT / "scripts"):  # the project is not installed on the GPU machine
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from gpucheck.summary import exit_status, run_step, write_summary  # noqa: E402

# Sizes and time budgets per mode. Measured on an H200 (torch 2.11, 16 cores; issue 46's session): an exactness
# cell (every method, one family and dtype, 2 records of 24 tokens) takes 20-25 s, since a tiny model's
# forward there is bound by Python and kernel launches, so the 12 cells need about 250 s (at 180 s, 10 of
# them ran); the CLI step took 50-70 s, the 7B-shaped profile 45 s, the first-visit step a few seconds. With
# the wheels' install the check took about 7 minutes before the embedded device profile was added; that step's
# budget (not yet measured on a GPU: a 135M model's forward there is bound by kernel launches, 10-20 ms) adds at
# most 150 s, under 12 minutes in all when every budget is used up. A step past its budget stops and says so. CPU
# smoke mode times the embedded shape on a few forwards only (seconds on 2 cores) and each drafter at depth 1; its
# exactness step took 61 s with 21 methods beside the test suite on 2 cores, so its budget is 150 s.
# The compiled steps (``--only compiled``) on CUDA: 180 + 120 + 90 s at most, about 7 minutes with the wheels'
# install, so one 8-minute device call runs them; a 7B shape compiles in tens of seconds per row bucket, so
# T(n) stops at its budget rather than overrun. CPU smoke mode: its exactness budget lets the float32 cell alone run.
MODES: dict[str, dict[str, Any]] = {
    "cuda": {"families": ("llama", "qwen2", "gpt2", "neox"), "dtypes": ("float32", "bfloat16", "float16"),
             "exact_tokens": 24, "exact_limit": 2, "exact_budget_s": 270,
             "cli_hidden": 256, "cli_tokens": 32, "cli_limit": 8, "cli_dtype": "float16", "cli_budget_s": 100,
             "profile_budget_s": 120, "visit_hidden": 256, "visit_tokens": 24, "visit_dtype": "float16",
             "device_dtypes": ("float32", "bfloat16"), "device_contexts": (128, 512, 1024),
             "device_sizes": (1, 2, 4, 8, 16, 32, 64, 128), "device_repeats": 5, "device_drafters": "all",
             "device_depths": None, "device_budget_s": 150,
             "compiled_t_budget_s": 180, "compiled_cli_budget_s": 120, "compiled_exact_budget_s": 90},
    "cpu": {"families": ("llama", "qwen2", "gpt2", "neox"), "dtypes": ("float32", "bfloat16", "float16"),
            "exact_tokens": 12, "exact_limit": 1, "exact_budget_s": 150,
            "cli_hidden": 64, "cli_tokens": 12, "cli_limit": 4, "cli_dtype": "float32", "cli_budget_s": 90,
            "profile_budget_s": 30, "visit_hidden": 64, "visit_tokens": 12, "visit_dtype": "float32",
            "device_dtypes": ("float32",), "device_contexts": (16,), "device_sizes": (1, 2), "device_repeats": 1,
            "device_drafters": "all", "device_depths": (1,), "device_budget_s": 60,
            "compiled_t_budget_s": 60, "compiled_cli_budget_s": 150, "compiled_exact_budget_s": 1},
}
NEEDED = ("pydivsufsort", "faiss", "matplotlib", "transformers", "safetensors", "tokenizers", "yaml", "tabulate")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Check a GPU install: exactness, the CLI, the cost profile.")
    p.add_argument("--device", default="cuda", help="cuda (the full check) or cpu (smoke mode, tiny sizes)")
    p.add_argument("--out", default=None, help="folder of summary.md, summary.json, "
                   "profile.json, device-profile-embedded*.json "
                   "(default $OUT, else a new temporary folder)")
    p.add_argument("--only", choices=("all", "compiled", "eager"), default="all",
                   help="compiled: the environment and the compiled backend's steps alone (about 7 minutes on an "
                        "H200: one device call); eager: every step but those; all (default): both, about 18")
    args = p.parse_args(argv)
    if args.device.split(":")[0] not in MODES:
        p.error(f"--device must be cuda[:N] or cpu, got {args.device!r}")
    return args


def commit() -> str:
    """The project's commit: git's, else ``$SPECBENCH_COMMIT`` (a copied working tree has no ``.git``), else
    the first line of a ``COMMIT`` file at the root, else ``unknown``."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        f = ROOT / "COMMIT"
        return os.environ.get("SPECBENCH_COMMIT") or (f.read_text().split("\n")[0].strip() if f.is_file() else "unknown")


def environment(device: str) -> tuple[str, dict[str, Any]]:
    """torch, CUDA, the GPU and the commit; ``failed`` when the device or a needed package is missing."""
    import importlib.util

    import torch

    figures: dict[str, Any] = {"torch": torch.__version__, "cuda": torch.version.cuda, "commit": commit(),
                               "python": sys.version.split()[0]}
    missing = [m for m in NEEDED if importlib.util.find_spec(m) is None]
    figures["missing_packages"] = missing
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            return "failed", {**figures, "error": "torch sees no CUDA device"}
        figures["gpu"] = torch.cuda.get_device_name(torch.device(device))
    print("[gpu-check] " + ", ".join(f"{k}={v}" for k, v in figures.items()), flush=True)
    return ("failed" if missing else "passed"), {**figures, **({"error": f"missing: {missing}"} if missing else {})}


def exactness(work: Path, device: str, mode: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Every method x family x dtype cell (dtype-major: float32 first), until the step's budget runs out."""
    from gpucheck.exactness import all_methods, run_cell

    deadline = time.monotonic() + mode["exact_budget_s"]
    cells, stopped = [], None
    for dtype in mode["dtypes"]:
        for family in mode["families"]:
            if time.monotonic() > deadline:
                stopped = f"stopped at {family} {dtype}: past its {mode['exact_budget_s']} s budget"
                break
            cells.append(run_cell(work, family, dtype, device, all_methods(), mode["exact_tokens"], mode["exact_limit"]))
        if stopped:
            break
    mismatches = sum(c["MISMATCH"] for cell in cells for c in cell["methods"].values())
    missing = [f"{c['family']} {c['dtype']}: {m}" for c in cells for m in c["missing"]]
    figures: dict[str, Any] = {"cells": cells, "mismatches": mismatches,
                               "ties": sum(c["tie"] for cell in cells for c in cell["methods"].values())}
    if mismatches or missing:
        return "failed", {**figures, "error": f"{mismatches} MISMATCH records" + (f"; no records: {missing}" if missing else "")}
    return ("stopped", {**figures, "error": stopped}) if stopped else ("passed", figures)


def cli(work: Path, device: str, mode: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """``run_bench.py`` end to end; ``failed`` on a non-zero exit, a MISMATCH or a missing file or timer."""
    from gpucheck.cli_run import EXPECTED_FILES, run_cli

    got = run_cli(work, device, mode["cli_dtype"], mode["cli_hidden"], mode["cli_tokens"], mode["cli_limit"],
                  mode["cli_budget_s"])
    if got["exit"] is None:
        return "stopped", got
    complete = (got["exit"] == 0 and not got["mismatch"] and got["batch_sizes"] == [1, 4] and got["ttft_s"]
                and got["peak_memory_mb"] and list(got["files"]) == sorted(EXPECTED_FILES))
    if not complete and not got.get("error"):
        got["error"] = "the run's records, files or timers are incomplete"
    return ("passed" if complete else "failed"), got


def cost_profile(out: Path, device: str, mode: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """T(n)/T(1) written as ``out/profile.json``."""
    from gpucheck.profile_curve import measure_profile

    got = measure_profile(out / "profile.json", device, device == "cpu", time.monotonic() + mode["profile_budget_s"])
    return ("stopped", {**got, "error": got["stopped"]}) if got["stopped"] else ("passed", got)


def device_profile(out: Path, work: Path, device: str, mode: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The embedded shape's device profiles in ``out``; ``failed`` when a drafter asked for is not in them."""
    from gpucheck.embedded_profile import EmbeddedRequest, measure_embedded_profiles

    req = EmbeddedRequest(mode["device_dtypes"], mode["device_contexts"], mode["device_sizes"], mode["device_repeats"],
                          mode["device_drafters"], mode["device_depths"])
    got = measure_embedded_profiles(out, device, req, time.monotonic() + mode["device_budget_s"], work / "cache")
    if got["missing_drafters"]:
        return "failed", {**got, "error": f"drafters not profiled: {', '.join(got['missing_drafters'])}"}
    return ("stopped", {**got, "error": got["stopped"]}) if got["stopped"] else ("passed", got)


def first_visit(work: Path, device: str, mode: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """AR's first visit of a prompt's lengths against its second: ``failed`` past ``first_visit.LIMIT``."""
    from gpucheck.first_visit import LIMIT, measure_visits

    got = measure_visits(work, device, mode["visit_dtype"], mode["visit_hidden"], mode["visit_tokens"])
    if got["worst_step_ratio"] > LIMIT:
        got["error"] = (f"a first visit's decode step is {got['worst_step_ratio']}x the second's: the method timed "
                        "first on a question (AR) pays a per-shape cost the others do not")
        return "failed", got
    return "passed", got


def compiled_t(out: Path, device: str, mode: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The 7B shape's T(n) compiled and eager, against the bandwidth floor (``gpucheck/compiled_step.py``)."""
    from gpucheck.compiled_step import t_of_n

    got = t_of_n(device, device == "cpu", time.monotonic() + mode["compiled_t_budget_s"])
    (out / "compiled-t-of-n.json").write_text(json.dumps(got, indent=1))
    return ("stopped" if got.get("error") else "passed"), got


def compiled_cli(work: Path, device: str, mode: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The same CLI run on ``fast`` and ``compiled``; ``failed`` on a non-zero exit or a MISMATCH."""
    from gpucheck.compiled_step import cli_both

    got = cli_both(work, device, device == "cpu", mode["compiled_cli_budget_s"])
    runs = [got[b] for b in ("fast", "compiled")]
    if any(r.get("exit") is None for r in runs):
        return "stopped", {**got, "error": "a run stopped at the step's time limit"}
    bad = [b for b in ("fast", "compiled") if got[b]["exit"] != 0 or got[b]["mismatch"]]
    return ("failed", {**got, "error": f"failed or MISMATCH on: {', '.join(bad)}"}) if bad else ("passed", got)


def compiled_exact(work: Path, device: str, mode: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Every method through ``--backend compiled`` on tiny Llamas per dtype: 0 MISMATCH."""
    from gpucheck.compiled_step import exact_compiled
    from gpucheck.exactness import all_methods

    got = exact_compiled(work, device, all_methods(), time.monotonic() + mode["compiled_exact_budget_s"],
                         device == "cpu")
    mismatches = sum(c["MISMATCH"] for cell in got["cells"] for c in cell["methods"].values())
    got["mismatches"] = mismatches
    if mismatches:
        return "failed", {**got, "error": f"{mismatches} MISMATCH records"}
    return ("stopped", {**got, "error": got["stopped"]}) if got["stopped"] else ("passed", got)


def main(argv: list[str] | None = None) -> int:
    """Run the steps in order, write the summary, return the exit status."""
    args = parse_args(argv)
    mode = MODES[args.device.split(":")[0]]
    out = Path(args.out or os.environ.get("OUT") or tempfile.mkdtemp(prefix="gpu-check-"))
    work = Path(tempfile.mkdtemp(prefix="gpu-check-work-"))  # models, runs, caches: not brought back
    cache_before = os.environ.get("SPECBENCH_CACHE")
    os.environ["SPECBENCH_CACHE"] = str(work / "cache")  # datastores and profiles of the check stay in it
    start = time.monotonic()
    try:
        out.mkdir(parents=True, exist_ok=True)
        steps = [run_step("environment", lambda: environment(args.device))]
        if args.only in ("all", "eager"):
            steps += [run_step("exactness", lambda: exactness(work, args.device, mode)),
                      run_step("cli", lambda: cli(work, args.device, mode)),
                      run_step("cost profile", lambda: cost_profile(out, args.device, mode)),
                      run_step("device profile", lambda: device_profile(out, work, args.device, mode)),
                      run_step("first visit", lambda: first_visit(work, args.device, mode))]
        if args.only in ("all", "compiled"):
            steps += [run_step("compiled T(n)", lambda: compiled_t(out, args.device, mode)),
                      run_step("compiled cli", lambda: compiled_cli(work, args.device, mode)),
                      run_step("compiled exactness", lambda: compiled_exact(work, args.device, mode))]
    finally:
        if cache_before is None:
            os.environ.pop("SPECBENCH_CACHE", None)
        else:
            os.environ["SPECBENCH_CACHE"] = cache_before
        shutil.rmtree(work, ignore_errors=True)
    header = {"device": args.device, "mode": "full" if args.device != "cpu" else "cpu smoke (tiny sizes)",
              "seconds": round(time.monotonic() - start, 1), **{k: v for k, v in mode.items() if not k.endswith("_s")}}
    md = write_summary(out, header, steps)
    print(md.read_text())
    print(f"[gpu-check] summary: {md}; exit {exit_status(steps)}", flush=True)
    return exit_status(steps)


if __name__ == "__main__":
    sys.exit(main())
