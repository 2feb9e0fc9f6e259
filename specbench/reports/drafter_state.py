"""What drafters said of themselves (records' ``drafter_state``, ``BaseDrafter.report``) at the end of each subtask.

A drafter whose state evolves over a run (SWIFT's layer set and its search) reports it after every generation;
the report shows the last one per method and subtask, in the records' order, so a reader sees where the run left
it: SWIFT's ``skip`` is the set to pass back as ``swift.skip=...`` to time it without searching.

>>> from types import SimpleNamespace as R
>>> recs = [R(method="swift", subtask="GSM8K", drafter_state={"skip": "attn:1/mlp:", "matchness": 0.2}),
...         R(method="swift", subtask="GSM8K", drafter_state={"skip": "attn:2/mlp:", "matchness": 0.4}),
...         R(method="pld", subtask="GSM8K", drafter_state=None)]
>>> t = drafter_state_table(recs)
>>> t.headers, t.rows
(['method', 'subtask', 'generations', 'skip', 'matchness'], [['swift', 'GSM8K', '2', 'attn:2/mlp:', '0.4']])
"""
from __future__ import annotations

import json
from typing import Any, Sequence

from specbench.reports.table import Table

TITLE = "Drafter state at the end of each subtask (the last generation's `drafter_state`)"


def _text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value).lower() if isinstance(value, bool) else str(value)


def drafter_state_table(records: Sequence[Any]) -> Table | None:
    """One row per (method, subtask) with a reported state: its last state's fields; None when no drafter reported."""
    last: dict[tuple[str, str], dict[str, Any]] = {}
    counts: dict[tuple[str, str], int] = {}
    for r in records:
        if r.drafter_state:
            key = (r.method, r.subtask)
            last[key] = r.drafter_state
            counts[key] = counts.get(key, 0) + 1
    if not last:
        return None
    fields = list(dict.fromkeys(k for state in last.values() for k in state))
    rows = [[m, s, str(counts[(m, s)]), *(_text(state.get(f)) for f in fields)] for (m, s), state in last.items()]
    keys: list[list[float | str | None]] = [[m, s, counts[(m, s)], *([None] * len(fields))] for (m, s) in last]
    return Table(TITLE, ["method", "subtask", "generations", *fields], rows, keys)
