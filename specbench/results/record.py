"""The result record: one generation of one method on one unit of work, and its JSON form.

A ``Unit`` is the unit of work every part of specbench pairs on: (task, question, turn, repeat, batch),
turns 1-based, repeats 0-based, ``batch`` the batch size it was decoded at (1 unless ``--batch-size``). A ``Record`` is what the runner writes per (method, unit); ``stats``,
``check``, ``merge`` and the tests read the same type back.

Fields (``SCHEMA_VERSION`` 10):
- identity: ``method, task, subtask, task_version, question_id, category, turn, repeat``
- work: ``prompt_tokens, new_tokens, output_ids``
- timing: ``wall_time_s`` (whole generation incl. prefill, tokenisation excluded), ``draft_time_s``,
  ``verify_time_s``
- per forward pass (prefill included, same length): ``accept_lengths`` (tokens emitted: accepted draft
  tokens + 1; AR is all ones; sum == new_tokens), ``draft_sizes`` (tree nodes), ``draft_times_s``;
  ``forward_passes`` == len(accept_lengths); since schema 4 also ``draft_depths`` (longest root-to-leaf
  path of the draft; == size for a chain), ``verify_times_s`` (target forward + accept + trim) and
  ``step_times_s`` (the whole step; the prefill's entry is the time to first token), and ``aux_sizes``
  (auxiliary rows verified next to the draft, e.g. lookahead's Jacobi window; all 0 for other methods)
- ``prefill_time_s`` (schema 4): time to first token, from the start of the generation (== step_times_s[0])
- lossless check vs the AR record of the same question/turn/repeat 0: ``lossless`` (bool, null for AR),
  ``lossless_class`` (see ``specbench.results.lossless``, null for AR), ``first_divergence``, ``ar_margin``
- AR records only: ``token_margins`` (per output token, the relative top-2 margin of the logits that chose
  it: the lossless check's tie test reads these, see ``specbench.engine.margins``)
- sampling (schema 5): ``sampling`` (``{"temperature", "top_p", "top_k", "seed"}`` of the run; null = greedy)
  and ``target_logprob`` (temperature > 0 only: mean log-probability per emitted token under the target's
  processed sampling distribution, the distributional sanity statistic; such records have no token check)
- ``config_digest`` (schema 6): the digest of the configuration that produced it (the manifest's), so readers
  refuse records of another run mixed into a file (``specbench.results.validation``); null before schema 6
- ``context_length`` (schema 7): the input length (tokens) a long-input task was asked for (``long_low@2k``:
  2048; ``prompt_tokens`` is what the prompt has, less when the length was cut to fit the model); null for
  tasks without one
- batching (schema 7; null = batch size 1): ``batch_size``; ``batch_wall_time_s`` (the whole batch's wall
  time: ``wall_time_s`` is its equal share, so pooled time over a batch's records is the batch's time and
  pooled tokens over time its throughput); ``admitted_s`` / ``finished_s``, seconds from the batch's start
  to the sequence's admission (0 unless it refilled a finished one's slot) and to its last token
- ``budget=auto`` (schema 8; null for other methods): ``drafted_steps`` / ``skipped_steps``, the decode steps
  that drafted and that the budget ran plain without calling the drafter (``budget/draft_or_skip.py``), and
  ``predicted_s`` / ``predicted_ar_s``, the budget's calibrated price of the decode steps (each priced before its
  step ran; at batch size above 1 the sequence's share) and of the same tokens as plain steps
- ``drafter_state`` (schema 9; null for drafters that report nothing): what the drafter said of itself at the
  generation's end (``BaseDrafter.report``), e.g. SWIFT's layer set and search ``{"skip": "attn:3,4/mlp:5",
  "skipped": 3, "matchness": 0.36, "search_iterations": 77, "searching": true, "stopped": null}``
- ``cpu_time_s`` (schema 10; null for an engine's rows, whose work another process does): the CPU seconds this
  process spent over the same span as ``wall_time_s`` (``time.process_time``: every thread of the process; a
  batched record's equal share of its batch's), so a reader can tell a generation that was stopped or starved
  (a stopped process accumulates none) from one that computed (``specbench.results.stalls``)
- memory: ``peak_memory_bytes`` and ``peak_memory_kind`` (``specbench.profiling.memory``: CUDA max allocated, or the
  CPU peak RSS), reset before each generation

Schema 2 -> 3 added only the optional AR margins and peak memory (null when absent); 3 -> 4 only the
optional per-pass depths and verify / step times and the prefill time (null when absent: reports show
``-`` for the latency and per-position figures of such records); 4 -> 5 only the optional sampling fields
(null when absent: greedy); 5 -> 6 only the optional ``config_digest`` (null when absent: not checked); 6 -> 7
only the optional ``context_length`` (null when absent: a task without an input length) and the batching
fields (null when absent: batch size 1); 7 -> 8 only the optional ``budget=auto`` fields (null when absent); 8 -> 9
only the optional ``drafter_state`` (null when absent); 9 -> 10 only the optional ``cpu_time_s`` (null when absent:
the CPU-time stall test does not apply).

Schema 1 (before the typed record) allowed an integer ``question_id`` and left ``repeat``,
``forward_passes``, the time sums and ``subtask`` optional; ``from_json`` fills them as the readers of
schema 1 did, so old runs report identically.

>>> rec = Record.from_json({"schema_version": 1, "method": "ar", "task": "gsm8k", "question_id": 7,
...     "turn": 1, "prompt_tokens": 3, "new_tokens": 2, "wall_time_s": 0.5, "accept_lengths": [1, 1],
...     "draft_sizes": [0, 0], "output_ids": [5, 6]})
>>> rec.unit, rec.subtask, rec.forward_passes
(Unit(task='gsm8k', question_id='7', turn=1, repeat=0, batch=1), 'GSM8K', 2)
>>> rec.to_json()["schema_version"], rec.prefill_time_s, rec.context_length
(10, None, None)
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Sequence

from specbench.catalog import task_label

SCHEMA_VERSION = 10
READABLE_VERSIONS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10)  # 2 to 9 read as is: every field they lack is optional


@dataclass(frozen=True, order=True)
class Unit:
    """One unit of work: a question's turn (1-based) in one repeat (0-based), decoded at a batch size.

    >>> str(Unit("mt_bench", "81", 2, 1)), str(Unit("gsm8k", "3", 1, 0, batch=4))
    ('mt_bench/81 turn 2 repeat 1', 'gsm8k/3 turn 1 repeat 0 batch 4')
    >>> Unit("gsm8k", "3", 1, 2, batch=4).reference()
    Unit(task='gsm8k', question_id='3', turn=1, repeat=0, batch=1)
    """

    task: str
    question_id: str
    turn: int
    repeat: int = 0
    batch: int = 1

    def __str__(self) -> str:
        return f"{self.task}/{self.question_id} turn {self.turn} repeat {self.repeat}" + (
            f" batch {self.batch}" if self.batch != 1 else "")

    def reference(self) -> "Unit":
        """The unit whose AR output is the lossless reference (and the prompt of later turns): repeat 0 at
        batch size 1 (a batched run always decodes AR alone too)."""
        return dataclasses.replace(self, repeat=0, batch=1)


def accepted_tokens(accept_lengths: Sequence[int]) -> int:
    """Draft tokens accepted: every pass emits one token of its own (``[1, 3, 1]`` -> 2)."""
    return sum(a - 1 for a in accept_lengths)


def drafted_tokens(draft_sizes: Sequence[int]) -> int:
    """Draft tokens proposed (the prefill drafts nothing, so its 0 counts for nothing)."""
    return sum(draft_sizes)


@dataclass
class Record:
    """One generation of ``method`` on one ``Unit``, with its timing and lossless verdict."""

    method: str
    task: str
    subtask: str
    task_version: str
    question_id: str
    category: str
    turn: int
    repeat: int
    prompt_tokens: int
    new_tokens: int
    wall_time_s: float
    forward_passes: int
    draft_time_s: float
    verify_time_s: float
    accept_lengths: list[int] = field(default_factory=list)
    draft_sizes: list[int] = field(default_factory=list)
    draft_times_s: list[float] = field(default_factory=list)
    output_ids: list[int] = field(default_factory=list)
    lossless: bool | None = None
    lossless_class: str | None = None
    first_divergence: int | None = None
    ar_margin: float | None = None
    token_margins: list[float] | None = None
    peak_memory_bytes: int | None = None
    peak_memory_kind: str | None = None
    prefill_time_s: float | None = None
    verify_times_s: list[float] | None = None
    step_times_s: list[float] | None = None
    draft_depths: list[int] | None = None
    aux_sizes: list[int] | None = None
    sampling: dict[str, Any] | None = None
    target_logprob: float | None = None
    config_digest: str | None = None
    context_length: int | None = None
    batch_size: int | None = None
    batch_wall_time_s: float | None = None
    admitted_s: float | None = None
    finished_s: float | None = None
    drafted_steps: int | None = None
    skipped_steps: int | None = None
    predicted_s: float | None = None
    predicted_ar_s: float | None = None
    drafter_state: dict[str, Any] | None = None
    cpu_time_s: float | None = None

    @property
    def unit(self) -> Unit:
        return Unit(self.task, self.question_id, self.turn, self.repeat, self.batch_size or 1)

    @property
    def key(self) -> tuple[str, Unit]:
        """Identity of the record: a resumed run skips keys already present, a merge refuses duplicates."""
        return self.method, self.unit

    @property
    def accepted(self) -> int:
        return accepted_tokens(self.accept_lengths)

    @property
    def drafted(self) -> int:
        return drafted_tokens(self.draft_sizes)

    @property
    def decode_passes(self) -> int:
        """Forward passes after the prefill."""
        return max(len(self.accept_lengths) - 1, 0)

    @classmethod
    def from_generation(cls, gen: Any, *, method: str, unit: Unit, subtask: str, task_version: str, category: str,
                        prompt_tokens: int, wall_time_s: float, memory: tuple[str | None, int | None],
                        sampling: dict[str, Any] | None, config_digest: str | None,
                        context_length: int | None = None, batch_wall_time_s: float | None = None) -> "Record":
        """The record of one ``engine.generation.Generation`` (its lossless verdict is added by the runner).

        Per-pass times are rounded to 0.1 us; ``target_logprob`` is the mean per emitted token when the
        generation sampled; ``aux_sizes`` is kept only when a pass verified auxiliary rows; the batching
        fields only when ``unit.batch`` is above 1; ``cpu_time_s`` is the generation's (the runner's CPU seconds over
        ``wall_time_s``'s span; None where another process did the work).
        """
        batched = unit.batch != 1
        times = (lambda t: None if t is None else round(t, 7)) if batched else (lambda t: None)
        rounded = lambda times: [round(t, 7) for t in times]  # noqa: E731
        logprobs = gen.token_logprobs
        return cls(
            method=method, task=unit.task, subtask=subtask, task_version=task_version, question_id=unit.question_id,
            category=category, turn=unit.turn, repeat=unit.repeat, prompt_tokens=prompt_tokens,
            new_tokens=len(gen.output_ids), wall_time_s=wall_time_s, forward_passes=gen.forward_passes,
            draft_time_s=sum(gen.draft_times_s), verify_time_s=sum(gen.verify_times_s),
            accept_lengths=gen.accept_lengths, draft_sizes=gen.draft_sizes, draft_times_s=rounded(gen.draft_times_s),
            output_ids=gen.output_ids, token_margins=gen.token_margins(), peak_memory_bytes=memory[1],
            peak_memory_kind=memory[0], prefill_time_s=round(gen.step_times_s[0], 7),
            verify_times_s=rounded(gen.verify_times_s), step_times_s=rounded(gen.step_times_s),
            draft_depths=gen.draft_depths, aux_sizes=gen.aux_sizes if any(gen.aux_sizes) else None, sampling=sampling,
            target_logprob=round(sum(logprobs) / len(logprobs), 7) if logprobs else None, config_digest=config_digest,
            context_length=context_length,
            batch_size=unit.batch if batched else None, batch_wall_time_s=batch_wall_time_s if batched else None,
            admitted_s=times(gen.admitted_s), finished_s=times(gen.finished_s),
            drafted_steps=gen.drafted_steps, skipped_steps=gen.skipped_steps,
            predicted_s=None if gen.predicted_s is None else round(gen.predicted_s, 7),
            predicted_ar_s=None if gen.predicted_ar_s is None else round(gen.predicted_ar_s, 7),
            drafter_state=gen.drafter_state, cpu_time_s=None if gen.cpu_time_s is None else round(gen.cpu_time_s, 7),
        )

    def to_json(self) -> dict[str, Any]:
        return {"schema_version": SCHEMA_VERSION, **dataclasses.asdict(self)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Record":
        """A record from its JSON object, migrating schema 1; a newer or unknown schema raises ValueError."""
        version = data.get("schema_version")
        if version == 1:
            data = migrate_v1(data)
        elif version not in READABLE_VERSIONS:
            raise ValueError(f"record schema_version {version!r} is not one of {', '.join(map(str, READABLE_VERSIONS))}")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names - {"schema_version"})
        if unknown:
            raise ValueError(f"record has unknown field(s): {', '.join(unknown)}")
        return cls(**{k: v for k, v in data.items() if k in names})


def migrate_v1(data: dict[str, Any]) -> dict[str, Any]:
    """Schema 1 -> 2: the defaults schema-1 readers applied, made explicit; fields of no schema dropped."""
    names = {f.name for f in dataclasses.fields(Record)}
    out = {k: v for k, v in data.items() if k in names}
    accept = out.get("accept_lengths") or []
    out.update(
        question_id=str(out["question_id"]),
        turn=int(out["turn"]),
        repeat=int(out.get("repeat") or 0),
        subtask=out.get("subtask") or task_label(out["task"]),
        task_version=str(out.get("task_version") or "1"),
        category=out.get("category") or "",
        forward_passes=out.get("forward_passes", len(accept)) or 0,
        draft_time_s=out.get("draft_time_s") or 0.0,
        verify_time_s=out.get("verify_time_s") or 0.0,
        accept_lengths=accept,
        draft_sizes=out.get("draft_sizes") or [],
        draft_times_s=out.get("draft_times_s") or [],
        output_ids=out.get("output_ids") or [],
    )
    return out
