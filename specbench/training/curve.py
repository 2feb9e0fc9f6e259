"""``specbench train METHOD --curve 20k,100k,300k,1m``: held-out accuracy against training positions.

Each size trains the method's recipe (``--recipe``, flags on top) on the feature store's first N positions;
every size is evaluated on one held-out set: the held-out sequences of the store's first ``HELDOUT_SPAN``
positions, capped at ``HELDOUT_CAP`` positions (``FeatureOptions.heldout_span``), so the rows compare, also
across invocations: the set does not depend on the sizes asked, so ``--curve 20k,100k`` now and ``--curve
300k,1m`` later give one table. The drafters go to
``<features root>/curves/<method>-<recipe>-<N>/``; the table is printed as markdown and written as
``curve-<method>-<recipe>.json`` next to the store. A size already in that json (same recipe) is not
trained again, so an interrupted curve resumes.

The size equal to the recipe's own (300k for ``full``) *is* that recipe's training, so when the recipe is
unchanged its drafter is also copied to the recipe's cache folder (``adopt``): ``--curve 20k,100k,300k
--recipe full`` leaves the drafter ``--method-opt eagle.recipe=full`` reads, without training 300k twice.
(It trains on exactly the sequences a plain ``--recipe full`` trains on: ``feature_view.select`` holds every
20th sequence out either way; only the held-out set it is scored on is the curve's.)

Example row: ``| 20,000 | 0.338 | 96 |`` (positions, held-out top-1, training seconds).
"""
from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any, Sequence

from specbench.files.jsonfile import strict_json

HELDOUT_CAP = 10_000  # held-out positions the curve evaluates on (whole sequences, so a few more)
# positions whose held-out sequences the curve draws from: every 20th sequence is held out, so 200k
# positions hold ~10k held-out ones; the store collects this span however small the sizes asked
HELDOUT_SPAN = 200_000


def fmt_metric(value: Any) -> str:
    """``0.3381`` -> ``0.338``; a list (per head / depth) -> ``0.204 / 0.107``.

    >>> fmt_metric([0.2044, 0.1072]), fmt_metric(0.33812), fmt_metric(None)
    ('0.204 / 0.107', '0.338', '-')
    """
    if value is None:
        return "-"
    if isinstance(value, (list, tuple)):
        return " / ".join(f"{float(v):.3f}" for v in value)
    return f"{float(value):.3f}"


def markdown(method: str, recipe: str, metric: str, rows: list[dict[str, Any]]) -> str:
    head = (f"| positions | held-out {metric} ({method}, {recipe} recipe) | held-out examples | train s |\n"
            "| --- | --- | --- | --- |\n")
    return head + "".join(f"| {r['positions']:,} | {fmt_metric(r['top1'])} | {r.get('heldout_examples', '-')} | "
                          f"{r.get('train_s', '-')} |\n" for r in rows)


def run_curve(spec: Any, loaded: Any, corpora: Sequence[str], data_dir: Path | None, recipe: str, cfg: Any,
              sizes: Sequence[int], features: Any, adopt: Path | None = None) -> list[dict[str, Any]]:
    """Train ``cfg`` at each of ``sizes`` positions (``spec``: the method's ``TrainerSpec``); returns the rows.
    ``adopt``: the recipe's cache folder, filled with the drafter of size ``cfg.tokens`` (see the module's text)."""
    from specbench.training.feature_store import FeatureStore, default_root

    root = Path(features.root or default_root())
    max_seq_len, layers = spec.store_shape(loaded.model, cfg)
    store = FeatureStore.open(loaded.model, loaded.tokenizer, corpora, data_dir, model_id=loaded.model_id,
                              max_seq_len=max_seq_len, layers=layers, teacher_dtype=features.teacher_dtype, root=root)
    span = dataclasses.replace(features, root=root, heldout_span=HELDOUT_SPAN, heldout_cap=HELDOUT_CAP)
    table = store.path / f"curve-{spec.name}-{recipe}.json"
    head = {"method": spec.name, "recipe": recipe, "metric": spec.metric, "train": _plain(cfg),
            "heldout_span": HELDOUT_SPAN, "heldout_cap": HELDOUT_CAP}
    old = json.loads(table.read_text(encoding="utf-8")) if table.is_file() else {}
    same = all(old.get(k) == v for k, v in head.items())  # rows of another recipe or span do not compare
    rows: dict[int, dict[str, Any]] = {int(r["positions"]): r for r in old.get("rows", [])} if same else {}
    for n in sorted(sizes):
        if n in rows:
            continue
        out = root / "curves" / f"{spec.name}-{recipe}-{n}"
        metrics = spec.train(loaded.model, loaded.tokenizer, corpora, data_dir, out, dataclasses.replace(cfg, tokens=n),
                             loaded.model_id, features=span, recipe=f"{recipe}@{n}")
        rows[n] = {"positions": n, "top1": metrics.get(spec.metric),
                   "heldout_examples": metrics.get("heldout_examples", metrics.get("heldout_labels")),
                   "train_s": metrics.get("train_s"), "checkpoint": str(out)}
        table.write_text(strict_json({**head, "rows": [rows[k] for k in sorted(rows)]}, indent=1), encoding="utf-8")
    if adopt is not None and cfg.tokens in rows and cfg.tokens in sizes:
        _adopt(Path(rows[cfg.tokens]["checkpoint"]), adopt)
    done = [rows[k] for k in sorted(rows) if k in sizes]
    print(markdown(spec.name, recipe, spec.metric, done))
    print(f"written to {table}")
    return done


def _adopt(source: Path, target: Path) -> None:
    """Copy the curve's drafter ``source`` into the recipe's folder ``target`` unless one is there already
    (a folder half-filled by an interrupted ``--recipe`` training is replaced: the copy is whole)."""
    if target.is_dir() and (target / "config.json").is_file() and not (target / "train_state.json").exists():
        print(f"the recipe's folder holds a drafter already, kept: {target}")
        return
    if not source.is_dir():
        print(f"the curve's drafter is gone ({source}); the recipe's folder is left as it is")
        return
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(source, partial)
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)  # whole or absent: a method never reads a half-copied drafter
    print(f"the recipe's drafter, adopted from this curve: {target}")


def _plain(cfg: Any) -> dict[str, Any]:
    """The recipe without its size (the curve varies ``tokens``)."""
    return {k: v for k, v in dataclasses.asdict(cfg).items() if k != "tokens"}
