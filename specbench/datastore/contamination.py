"""Keeping benchmark test prompts out of retrieval datastores.

At build time every test prompt (every turn of every question of every registered task: all
Spec-Bench categories and HumanEval) is tokenised with the target tokenizer; its interior tokens (the first and last
``EDGE`` tokens dropped, since BPE merges at a text boundary depend on the neighbouring characters) are
searched in each chunk's suffix array, and every entry containing one verbatim is dropped before the
chunk is written. Prompts with fewer than ``MIN_TOKENS`` interior tokens are too short to be evidence
of contamination and are skipped. The header records what was dropped.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from specbench.datastore.suffix_array import find_all
from specbench.errors import TaskDataError
from specbench.plugins.registry import TASKS

EDGE = 2
MIN_TOKENS = 12


def test_prompts(data_dir: Path | None) -> list[str]:
    """Texts of every registered task's questions (all turns); a task whose data is missing is skipped, and so
    are the long-input tasks (built at a length from the corpora themselves: no length, no questions)."""
    out: list[str] = []
    for name in TASKS.names():
        try:
            questions = TASKS.get(name)().load(data_dir)
        except (TaskDataError, OSError):  # data not installed (or no network for the hub copy)
            continue
        out.extend(t for q in questions for t in q.turns)
    return out


def prompt_probes(prompts: list[str], tokenizer: Any) -> list[list[int]]:
    """Interior token sequences of the prompts that are long enough to check."""
    if not prompts:
        return []
    ids = tokenizer(prompts, add_special_tokens=False)["input_ids"]
    probes = [list(map(int, seq[EDGE : len(seq) - EDGE])) for seq in ids]
    return [p for p in probes if len(p) >= MIN_TOKENS]


class ContaminationFilter:
    """A ``write_datastore`` chunk hook dropping entries that contain a test prompt verbatim."""

    def __init__(self, probes: list[list[int]]) -> None:
        self.probes = probes
        self.dropped_entries = 0
        self.prompts_found = 0

    def __call__(self, tokens: np.ndarray, starts: np.ndarray, sa: np.ndarray) -> set[int]:
        drop: set[int] = set()
        for probe in self.probes:
            pos = find_all(tokens, sa, probe)
            if len(pos):
                self.prompts_found += 1
                drop.update(int(i) for i in np.searchsorted(starts, pos, side="right") - 1)
        self.dropped_entries += len(drop)
        return drop

    def summary(self) -> dict[str, int]:
        return {"probes": len(self.probes), "prompts_found": self.prompts_found, "entries_dropped": self.dropped_entries}
