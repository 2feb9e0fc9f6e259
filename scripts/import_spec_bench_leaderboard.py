"""Regenerate ``specbench/interop/published/spec_bench.json`` from Spec-Bench's ``Leaderboard.md``.

Usage: ``python scripts/import_spec_bench_leaderboard.py LEADERBOARD_MD COMMIT > specbench/interop/published/spec_bench.json``
(LEADERBOARD_MD: the file at that commit of hemingkx/Spec-Bench). Each ``## Leaderboard on GPU`` section and
each ``### model`` table under it becomes one table named ``spec-bench:<gpu>-<model>``; cells are kept as
published (numbers as written, bold marks dropped).
"""
from __future__ import annotations

import json
import re
import sys

# Spec-Bench's column headers -> specbench's subtask labels (its six categories are six specbench tasks)
COLUMNS = {"Multi-turn Conversation": "MT-Bench", "Translation": "WMT", "Summa-rization": "CNN/DM",
           "Question Answering": "NQ", "Mathematical Reasoning": "GSM8K", "Retrieval-aug. Generation": "NQ-RAG"}
# published row names -> the specbench method label that runs the same method (None: not in specbench yet)
METHODS = {"SAMD[EAGLE2]": "samd", "EAGLE2": "eagle", "EAGLE": "eagle@static", "EAGLE3": "eagle3", "Hydra": "hydra",
           "SpS": "sps", "PLD": "pld", "Medusa": "medusa", "Recycling": "recycling", "REST": "rest",
           "Lookahead": "lookahead"}
GPUS = {"3090": "rtx3090", "A100": "a100"}


def _cell(text: str) -> str:
    return text.replace("*", "").strip()


def parse(markdown: str) -> dict[str, dict]:
    tables: dict[str, dict] = {}
    gpu = env = None
    model = "vicuna-7b"
    header: list[str] = []
    notes: list[str] = []
    for line in markdown.splitlines():
        if m := re.match(r"## Leaderboard on (\S+)", line):
            gpu, notes, model = GPUS[m.group(1)], [], "vicuna-7b"
        elif line.startswith("- ") and gpu:
            notes.append(line[2:].strip())
            if m2 := re.search(r"Vicuna-(\d+)B", line):
                model = f"vicuna-{m2.group(1).lower()}b"
        elif m := re.match(r"### Vicuna-(\d+)B", line):
            model = f"vicuna-{m.group(1)}b"
        elif line.startswith("| Models"):
            header = [_cell(c) for c in line.strip().strip("|").split("|")]
        elif line.startswith("| [") and gpu:
            cells = [_cell(c) for c in line.strip().strip("|").split("|")]
            name = re.match(r"\[(.+?)\]\(", cells[0]).group(1)  # "[SAMD[EAGLE2]](url)" -> "SAMD[EAGLE2]"
            row = dict(zip(header, cells))
            table = tables.setdefault(f"spec-bench:{gpu}-{model}", {"gpu": gpu, "model": f"lmsys/{model}-v1.3",
                                                                     "notes": list(notes), "rows": []})
            table["rows"].append({
                "published_name": name, "method": METHODS.get(name),
                "speedup": {COLUMNS[h]: row[h] for h in COLUMNS},
                "overall": row["Overall"], "mean_accepted_tokens": row["#Mean Accepted Tokens"]})
    return tables


def main() -> int:
    path, commit = sys.argv[1], sys.argv[2]
    with open(path, encoding="utf-8") as f:
        tables = parse(f.read())
    out = {"schema_version": 1,
           "source": {"repository": "hemingkx/Spec-Bench", "file": "Leaderboard.md", "commit": commit},
           "metric_notes": "speedup: mean over 3 runs vs vanilla autoregressive decoding on the same GPU; "
                           "mean accepted tokens per decoding step (1.00 for AR), over all six subtasks",
           "tables": tables}
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
