"""``budget=auto`` rows in a projection: what can be projected of them, and what cannot.

Auto chose each step's draft (or no draft) from the measured machine's costs; on another machine it would have
chosen differently, and those choices (and the tokens they would have accepted) are not in the records. So an
auto row is not projected as it ran: the projection prices instead the **best fixed budget in hindsight**
from auto's recorded drafts, a fixed depth K that one would have chosen knowing that machine's costs:

- each step that drafted keeps its draft cut to depth K (a chain's first K nodes; a tree's nodes scaled by
  ``K / depth``) and accepts ``min(accepted, K)``;
- a step auto skipped stays a plain step (what it would have accepted drafting is unknown), and a draft deeper
  than auto drafted is unknown, so K never exceeds the depth a step recorded;
- the generation's decode steps are scaled to emit the tokens it emitted: steps x (tokens / tokens at K).

K runs over 1 .. the deepest recorded draft; the best by projected Overall speedup is kept, and its cells say
so (``hindsight_label``).

>>> hindsight_label(3)
'best fixed budget in hindsight (budget=3) from the recorded drafts'
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from specbench.reports.projection import Price, decode_steps, pooled, priced_depths
from specbench.reports.projection_costs import Drafting, MachineCosts, drafting_seconds
from specbench.results.record import Record

AUTO_NOTE = ("{label} ran with budget=auto, which chose each step's draft from the measured machine's costs; on "
             "another machine it would choose differently, which its records cannot show. Its projected cells "
             "are the best fixed budget in hindsight from its recorded drafts instead (steps it skipped priced "
             "as plain steps, drafts deeper than it drafted unknown), labelled so.")


def hindsight_label(k: int) -> str:
    return f"best fixed budget in hindsight (budget={k}) from the recorded drafts"


def cut_seconds(rec: Record, onto: MachineCosts, drafting: Drafting, k: int) -> float:
    """The generation's seconds on ``onto`` with every recorded draft cut to depth ``k`` (module docstring)."""
    s = decode_steps(rec)
    prefill = float(onto.prefill(rec.prompt_tokens))
    if not len(s.rows):
        return prefill
    aux = s.rows - 1 - s.sizes
    cut = np.minimum(s.depths, k)
    share = np.where(s.depths > 0, cut / np.maximum(s.depths, 1), 0.0)
    sizes = np.ceil(s.sizes * share)
    emitted = np.minimum(s.emitted - 1, cut) + 1
    priced = np.minimum(priced_depths(s, drafting), k)
    step_s = onto.target(1 + sizes + aux, s.context) + drafting_seconds(drafting, s.drafting_s, priced, s.context)
    return prefill + float(np.sum(step_s)) * float(np.sum(s.emitted)) / float(np.sum(emitted))


def best_fixed_budget(method_recs: list[Record], ar_recs: list[Record], onto: MachineCosts, drafting: Drafting,
                      ar_price: Price) -> tuple[int, float] | None:
    """(K, projected Overall speedup) of the best cut depth; None without paired units or drafts."""
    deepest = max((max(r.draft_depths or r.draft_sizes or [0]) for r in method_recs), default=0)
    best: tuple[int, float] | None = None
    for k in range(1, int(deepest) + 1):
        pm = pooled(method_recs, ar_recs, cut_price(onto, drafting, k), ar_price)
        if pm is not None and (best is None or pm[0] > best[1]):
            best = (k, pm[0])
    return best


def cut_price(onto: MachineCosts, drafting: Drafting, k: int) -> Price:
    return lambda r: cut_seconds(r, onto, drafting, k)


def auto_labels(labels: Iterable[str], configs: dict[str, dict]) -> list[str]:
    """The labels among ``labels`` that ran with ``budget=auto`` (the manifest's ``method_configs``)."""
    from specbench.budget.names import AUTO

    return [m for m in labels if str((configs.get(m) or {}).get("budget")) == AUTO]
