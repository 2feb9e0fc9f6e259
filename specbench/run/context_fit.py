"""Whether a run's prompts fit the model's context: judged up front for everything knowable before any generation,
and noted in the manifest when a later turn is found past it at run time.

Up front (``check_up_front``, after the model loads and before any build, warm-up or timing): every turn-1 prompt,
and every later turn's prompt from its user turns alone (``guards.later_turns_fit``: the earlier answers only add
to it). A question that fails is refused in one line: the run does not start (nothing is skipped silently).

At run time a later turn, now with the AR baseline's answers, may still not fit (``checked_fit``): the run stops on
the same one-line error, and the manifest notes the unit and why (``UNRUNNABLE``). Greedy answers (and sampled ones,
from their seeds) come out the same on every resume, so a resume would stop there again: ``check`` says so instead
of suggesting one.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Callable

from specbench.errors import ConfigError
from specbench.files.jsonfile import write_json_atomic
from specbench.results.record import Unit
from specbench.results.run_folder import MANIFEST_FILE, UNRUNNABLE, read_manifest
from specbench.run.guards import check_context, later_turns_fit

TURN_ALLOWANCE = 64  # tokens a turn's chat-template markup may add around its text (only sizes the cost profile)


def bare_prompt_len(encode: Callable[[list[dict[str, Any]]], list[int]], task: Any, question: Any, turn: int) -> int:
    """Tokens of turn ``turn``'s prompt (1-based) with every earlier answer empty: its lower bound."""
    return len(encode(task.messages(question, turn - 1, [""] * (turn - 1))))


def check_up_front(plan: Any, model: Any, tokenizer: Any, encode: Callable[[list[dict[str, Any]]], list[int]],
                   prompt_for: Callable[[Unit, Any], list[int]]) -> int:
    """Refuse (one ``ConfigError`` line) a turn-1 prompt past the model's context, or a later turn that would be
    past it whatever the earlier answers; return the longest context the run will reach (prompt, later turns and
    every answer: the cost profile's)."""
    max_new, longest = plan.config.max_new_tokens, 0
    for task, qs in plan.questions.items():
        for q in qs:
            prompt, where = prompt_for(Unit(task, q.question_id, 1), q), f"{task}/{q.question_id}"
            check_context(model, len(prompt), max_new, where)
            later_turns_fit(model, functools.partial(bare_prompt_len, encode, plan.tasks[task], q), len(q.turns),
                            max_new, where)
            later = sum(len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in q.turns[1:])
            longest = max(longest, len(prompt) + later + (max_new + TURN_ALLOWANCE) * len(q.turns))
    return longest


def checked_fit(run_dir: Path, model: Any, prompt_tokens: int, max_new_tokens: int, where: str) -> None:
    """``check_context`` at run time; a prompt past the context is noted in the manifest before the error goes on."""
    try:
        check_context(model, prompt_tokens, max_new_tokens, where)
    except ConfigError as e:
        note_unrunnable(run_dir, where, str(e))
        raise


def note_unrunnable(run_dir: Path, where: str, reason: str) -> None:
    """Write ``{"unit": where, "reason": reason}`` as the manifest's ``UNRUNNABLE`` (a resumed run's manifest drops it:
    ``write_run_manifest``), so ``check`` does not suggest a resume that stops at the same place."""
    if (run_dir / MANIFEST_FILE).is_file():
        manifest = read_manifest(run_dir)
        manifest[UNRUNNABLE] = {"unit": where, "reason": reason}
        write_json_atomic(run_dir / MANIFEST_FILE, manifest, indent=2)
