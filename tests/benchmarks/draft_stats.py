"""Per (run, method, task): tau, draft tree size and accepted draft tokens per step without the bonus.

Script: ``python tests/benchmarks/draft_stats.py RUN_DIR [RUN_DIR ...]`` reads each run's
``records.jsonl`` and prints one row per (run, method, task) and one "all" row per (run, method):

- ``tau``: tokens emitted / forward passes, prefill included (as ``specbench report``);
- ``nodes/step``: mean draft tree nodes over decode passes that had a draft; ``drafted``: share of
  decode passes with a draft;
- ``acc/step``: accepted draft tokens per decode pass, the bonus token not counted (the DReSD paper's
  "accepted length"); ``= (tau * passes - passes) / decode passes``;
- ``lossless``: the records' lossless classes (``MISMATCH`` is a lost generation).

Example row: ``rest_cut  rest  humaneval  tau 1.52  nodes/step 21.3  drafted 0.91  acc/step 0.53  exact 5``.
"""
from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path


def summarize(recs: list[dict]) -> dict:
    """The row's figures from raw record dicts (``accept_lengths``/``draft_sizes`` include the prefill)."""
    tokens = sum(r["new_tokens"] for r in recs)
    passes = sum(len(r["accept_lengths"]) for r in recs)
    acc = [a for r in recs for a in r["accept_lengths"][1:]]
    sizes = [s for r in recs for s in (r.get("draft_sizes") or [0] * len(r["accept_lengths"]))[1:]]
    drafted = [s for s in sizes if s > 0]
    return {
        "n": len(recs),
        "tau": tokens / passes if passes else float("nan"),
        "nodes_per_step": sum(drafted) / len(drafted) if drafted else 0.0,
        "drafted": len(drafted) / len(sizes) if sizes else 0.0,
        "acc_per_step": sum(a - 1 for a in acc) / len(acc) if acc else 0.0,
        "lossless": dict(Counter(str(r.get("lossless_class")) for r in recs)),
    }


def main(argv: list[str]) -> int:
    for run in argv:
        groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
        with (Path(run) / "records.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                r = json.loads(line)
                if r["method"] != "ar":
                    groups[(r["method"], r["task"])].append(r)
                    groups[(r["method"], "all")].append(r)
        for (method, task), recs in sorted(groups.items()):
            s = summarize(recs)
            print(f"{Path(run).name:24s} {method:10s} {task:10s} n {s['n']:3d}  tau {s['tau']:.3f}  "
                  f"nodes/step {s['nodes_per_step']:5.1f}  drafted {s['drafted']:.2f}  "
                  f"acc/step {s['acc_per_step']:.3f}  {s['lossless']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
