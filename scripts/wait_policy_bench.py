"""How the OpenMP wait policy and the thread count fare on a quiet machine and beside a busy process.

    python scripts/wait_policy_bench.py [--limit 2] [--max-new-tokens 64] [--burners 1] [-- RUN FLAGS...]

Runs the same small benchmark (``run_bench.py --methods ar,pld --tasks gsm8k`` by default, a fresh run
name each time, under ``results/wait-policy-<time>/``) once per variant, first on the quiet machine, then
beside ``--burners`` processes spinning a core each (started and killed by this script):

- ``default``: ``OMP_WAIT_POLICY`` removed from the environment (what the CLI does then:
  ``specbench.profiling.wait_policy.DEFAULT_OMP_WAIT_POLICY`` if set, else the OpenMP runtime's default,
  which spins a while before sleeping);
- ``passive``: ``OMP_WAIT_POLICY=PASSIVE`` (threads sleep at once); ``active``: ``ACTIVE`` (they spin);
- ``threads1``: ``--threads 1`` with the policy removed (one torch thread: nothing to wait for).

Prints wall seconds per timed generation (the records' ``wall_time_s``), the slowdown beside the burners,
the command's own seconds, and the other processes' CPU share each run's manifest measured (the quiet
runs' should be near 0, the busy runs' near ``--burners``); writes the same as ``wait_policy.json`` in the
output folder. The quiet runs pass ``--require-quiet`` (so a busy machine stops the script) unless
``--no-quiet-check`` is given. Run it on an otherwise idle machine: the figures choose the product default.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from tabulate import tabulate

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = {  # name -> (OMP_WAIT_POLICY or None to remove it, extra run flags)
    "default": (None, []),
    "passive": ("PASSIVE", []),
    "active": ("ACTIVE", []),
    "threads1": (None, ["--threads", "1"]),
}
BURNER = "while True: pass"  # one core, never sleeping: the "other job" of the issue


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--methods", default="ar,pld")
    p.add_argument("--tasks", default="gsm8k")
    p.add_argument("--limit", type=int, default=2)
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--burners", type=int, default=1, help="busy processes beside the busy runs (one core each)")
    p.add_argument("--variants", default="default,passive,threads1", help=f"comma-separated of {','.join(VARIANTS)}")
    p.add_argument("--out-dir", help="parent of the run folders (default results/wait-policy-<time>)")
    p.add_argument("--no-quiet-check", action="store_true", help="do not pass --require-quiet to the quiet runs")
    p.add_argument("extra", nargs="*", help="more run flags, after --")
    args = p.parse_args(argv)
    unknown = [v for v in args.variants.split(",") if v not in VARIANTS]
    if unknown:
        p.error(f"unknown variant(s) {','.join(unknown)}; choose from {','.join(VARIANTS)}")
    return args


def run_once(args: argparse.Namespace, variant: str, busy: bool, out: Path) -> dict:
    """One benchmark command of ``variant``; its records' seconds per generation and the manifest's figures."""
    policy, flags = VARIANTS[variant]
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if policy:
        env["OMP_WAIT_POLICY"] = policy
    name = f"{variant}-{'busy' if busy else 'quiet'}-{time.strftime('%H%M%S')}"  # a fresh run, never a resume
    cmd = [sys.executable, str(ROOT / "run_bench.py"), "--methods", args.methods, "--tasks", args.tasks,
           "--limit", str(args.limit), "--max-new-tokens", str(args.max_new_tokens), "--out-dir", str(out),
           "--run-name", name, "--no-progress", *flags, *args.extra]
    if not busy and not args.no_quiet_check:
        cmd.append("--require-quiet")
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode not in (0, 1):  # (1: a lossless MISMATCH, still timed)
        raise SystemExit(f"{name}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    walls = [json.loads(line)["wall_time_s"] for line in (out / name / "records.jsonl").read_text().splitlines() if line]
    manifest = json.loads((out / name / "manifest.json").read_text())
    during = ((manifest.get("machine_state") or {}).get("sessions") or [{}])[-1].get("during") or {}
    return {"run": name, "policy": policy or "(unset)", "threads": flags[-1] if flags else "default",
            "generations": len(walls), "s_per_generation": statistics.mean(walls), "command_s": seconds,
            "other_cpu_cores": during.get("other_cpu_cores")}


def burners(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", BURNER]) for _ in range(n)]


def main(argv: list[str]) -> None:
    args = parse_args(argv)
    out = Path(args.out_dir) if args.out_dir else ROOT / "results" / time.strftime("wait-policy-%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    variants = args.variants.split(",")
    quiet = {v: run_once(args, v, False, out) for v in variants}
    procs = burners(args.burners)
    try:
        time.sleep(1)  # let them reach full speed
        busy = {v: run_once(args, v, True, out) for v in variants}
    finally:
        for p in procs:
            p.kill()
            p.wait()
    rows = [[v, quiet[v]["policy"], quiet[v]["threads"], f"{quiet[v]['s_per_generation']:.3f}",
             f"{busy[v]['s_per_generation']:.3f}", f"{busy[v]['s_per_generation'] / quiet[v]['s_per_generation']:.1f}x",
             f"{quiet[v]['command_s']:.0f} / {busy[v]['command_s']:.0f}",
             f"{quiet[v]['other_cpu_cores']} / {busy[v]['other_cpu_cores']}"] for v in variants]
    print(tabulate(rows, headers=["variant", "OMP_WAIT_POLICY", "threads", "quiet s/gen", f"busy s/gen ({args.burners} burner)",
                                  "busy/quiet", "command s (quiet / busy)", "others' cores (quiet / busy)"],
                   tablefmt="github"))
    (out / "wait_policy.json").write_text(json.dumps({"quiet": quiet, "busy": busy, "argv": argv}, indent=2))
    print(f"\nruns and wait_policy.json: {out}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
