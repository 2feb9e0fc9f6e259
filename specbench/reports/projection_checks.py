"""What a projection refuses, each as one line, and how each method's drafting is priced (``Drafting``).

- a profile of another model shape, tokenizer or dtype than the run's (its forward costs another time);
- a run without per-step records (a step's rows, context and drafting seconds are what is priced);
- a profile missing a drafter the run used (its seconds there are unknown): the message names it and the
  ``specbench profile`` command that measures it;
- a run whose model-free drafting cannot be scaled: neither its manifest nor ``--here`` gives this run's host
  figure (runs from before device profiles);
- a profile whose drafters were timed on another number of torch threads than the run's drafted on (a drafter
  model's seconds follow its threads: eagle's projection read 29% low across 1 and 2 threads);
- a sampled run (T > 0): see ``check_greedy``;
- a run with no single-sequence records of its methods (only batch sizes above one): a projection prices a
  generation's own steps, and a batch's step is one forward of every sequence's rows, which no profile times.

>>> per_step_problem(_rec([1, 2], [0, 2], [0.0]))
'draft_times_s has 1 entries for 2 steps'
>>> per_step_problem(_rec([1, 2], [0, 2], [0.0, 0.001])) is None
True
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from specbench.catalog import BASELINE
from specbench.errors import ConfigError
from specbench.profiling.draft_cost import TARGET, drafter_identity
from specbench.profiling.model_shape import run_model_shape, shape_difference
from specbench.reports.projection_costs import HOST, MODEL, NONE, Drafting, MachineCosts
from specbench.results.record import Record

PER_STEP = ("accept_lengths", "draft_sizes", "draft_times_s")


def _rec(acc: list[int], sizes: list[int], draft: list[float]) -> Record:  # (doctest helper)
    return Record("pld", "gsm8k", "GSM8K", "1", "1", "", 1, 0, 4, sum(acc), 1.0, len(acc), sum(draft), 0.0,
                  accept_lengths=acc, draft_sizes=sizes, draft_times_s=draft)


def per_step_problem(rec: Record) -> str | None:
    """What per-step field a record lacks for a projection, or None."""
    for name in PER_STEP:
        n = len(getattr(rec, name) or [])
        if n != rec.forward_passes:
            return f"{name} has {n} entries for {rec.forward_passes} steps"
    for name in ("draft_depths", "aux_sizes"):
        value = getattr(rec, name)
        if value and len(value) != rec.forward_passes:
            return f"{name} has {len(value)} entries for {rec.forward_passes} steps"
    return None


def check_per_step(run_name: str, records: list[Record]) -> None:
    """A one-line ``ConfigError`` when any record lacks per-step fields."""
    if not records:
        raise ConfigError(f"run {run_name}: no records to project")
    for r in records:
        bad = per_step_problem(r)
        if bad:
            raise ConfigError(f"run {run_name} has no per-step records to price ({r.method} on {r.unit}: {bad}); "
                              "re-run it with this version of specbench")


def check_profile_fits(run_name: str, manifest: dict[str, Any], profile: dict[str, Any], where: str) -> None:
    """A one-line ``ConfigError`` when the profile at ``where`` is of another model shape, tokenizer or dtype."""
    shape = run_model_shape(manifest, run_name)
    diff = shape_difference(shape, profile["model"]["shape"])
    if diff:
        raise ConfigError(f"profile {where} is of another model than run {run_name} ({diff}): measure a profile of "
                          f"the run's model on that machine (specbench profile --model MODEL)")
    run_dtype, prof_dtype = (manifest.get("model") or {}).get("dtype"), profile.get("dtype")
    if run_dtype != prof_dtype:
        raise ConfigError(f"profile {where} is in {prof_dtype}, run {run_name} in {run_dtype}: measure it with "
                          f"specbench profile --dtype {run_dtype}")


def check_greedy(run_name: str, manifest: dict[str, Any]) -> None:
    """A one-line ``ConfigError`` for a sampled run. Refused rather than marked: the projection says its figures
    are the run's steps priced on another machine, exact in accepted tokens because greedy drafts and acceptances
    do not depend on the machine; a sampled run's acceptances are one draw of its random stream (which another
    backend or precision would draw differently), so its projected cells would carry a precision they lack, and a
    mark beside each would be read past. A greedy run of the same methods projects exactly."""
    from specbench.engine.sampling_config import manifest_sampling

    sampling = manifest_sampling(manifest)
    if not sampling.greedy:
        raise ConfigError(f"run {run_name} sampled ({sampling.label()}): a projection prices greedy drafts' recorded "
                          "steps, which do not depend on the machine; project a greedy run (--temperature 0)")


def check_single_sequence(run_name: str, records: list[Record], batched: list[Record]) -> None:
    """A one-line ``ConfigError`` when the run's methods have no batch-size-1 records but batched ones."""
    if any(r.method != BASELINE for r in records) or not batched:
        return
    sizes = ", ".join(str(b) for b in sorted({r.unit.batch for r in batched}))
    raise ConfigError(f"run {run_name} decoded its methods only at batch size {sizes}: a projection prices "
                      "single-sequence steps (a batch's step is no profile's forward); run them with --batch-size 1 "
                      "beside the others")


def _threads(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def drafter_threads(manifest: dict[str, Any]) -> int | None:
    """The torch threads a run's drafters ran on: its ``drafter_threads``, else its hardware's ``torch_threads``
    (taken as the manifest was written, after the backend set them); None when neither is recorded."""
    return _threads(manifest.get("drafter_threads")) or _threads((manifest.get("hardware") or {}).get("torch_threads"))


def check_drafter_threads(manifest: dict[str, Any], profile: dict[str, Any], where: str, label: str) -> None:
    """A one-line ``ConfigError`` when the profile timed its drafters on other torch threads than the run drafted on
    (a profile holds one count: nothing to price the run's at)."""
    mine = drafter_threads(manifest)
    theirs = drafter_threads({"drafter_threads": profile.get("drafter_threads"), "hardware": profile.get("machine")})
    if mine and theirs and mine != theirs:
        raise ConfigError(f"profile {where} timed its drafters on {theirs} torch threads, run "
                          f"{manifest.get('run_name', '?')} drafted {label} on {mine}: measure the profile with "
                          f"`specbench profile --threads {mine}` (or run with --threads {theirs})")


def _measure_hint(label: str, config: dict[str, Any], profile: dict[str, Any]) -> str:
    """The ``specbench profile`` command that adds ``label``'s drafter to a profile of that machine."""
    from specbench.config.method_labels import split_label

    method = split_label(label)[0]
    backend = (profile.get("backend") or {})
    threads = f" --threads {backend['threads']}" if backend.get("threads") else ""
    opts = "".join(f" --method-opt {method}.{k}={v}" for k, v in sorted(config.items()) if k != "budget")
    return (f"specbench profile --model {profile['model'].get('id', 'MODEL')} --backends {backend.get('name', '?')}"
            f" --dtype {profile.get('dtype')}{threads} --drafters {method}{opts}")


def drafting_for(label: str, manifest: dict[str, Any], onto: MachineCosts, profile: dict[str, Any],
                 here: "HereCosts", where: str) -> Drafting:
    """How ``label``'s drafting is priced on ``onto`` (a one-line ``ConfigError`` when it cannot be)."""
    if label == BASELINE:
        return Drafting(NONE)
    config = (manifest.get("method_configs") or {}).get(label) or {}
    ident = drafter_identity(label, config)
    if ident is None:
        if here.host_s is None:
            raise ConfigError(f"run {manifest.get('run_name', '?')} records no host figure for model-free drafting "
                              f"({label}); pass --here PROFILE, a device profile of the machine it ran on")
        return Drafting(HOST, host_ratio=onto.host_s / here.host_s)
    if ident.kind == TARGET:
        if here.costs is None:
            raise ConfigError(f"{label} drafts with the target itself: pass --here PROFILE, a device profile of the "
                              "machine the run ran on, to price its drafting on another")
        mine, theirs = here.costs.target, onto.target
        return Drafting(ident.kind, target_ratio=lambda c: theirs(1, c) / mine(1, c))
    check_drafter_threads(manifest, profile, where, label)
    entry = onto.drafters.get(ident.key)
    if entry is None or not entry.get("steps"):
        raise ConfigError(f"profile {where} lacks the drafter {label} used ({ident.key}, shape {ident.shape}): "
                          f"measure it on that machine with `{_measure_hint(label, config, profile)}`")
    budget = config.get("budget")
    cap = budget if isinstance(budget, int) and not isinstance(budget, bool) else None
    room = (manifest.get("config") or {}).get("max_new_tokens")
    asked = isinstance(room, int) and str(budget) != "auto"  # (auto's hint is not recorded: the drafted depth)
    return Drafting(MODEL, steps=entry["steps"], max_new_tokens=room if asked else None, depth_limit=cap)


@dataclass(frozen=True)
class HereCosts:
    """The run's own machine, as far as a projection needs it: its host figure and, from ``--here``, its costs."""

    host_s: float | None
    costs: MachineCosts | None = None

    @classmethod
    def of_run(cls, manifest: dict[str, Any], here: MachineCosts | None) -> "HereCosts":
        """``--here``'s profile when given, else the host figure the run's manifest recorded (None before it)."""
        if here is not None:
            return cls(here.host_s, here)
        value = manifest.get("host_s")
        return cls(float(value) if isinstance(value, (int, float)) and value > 0 else None)
