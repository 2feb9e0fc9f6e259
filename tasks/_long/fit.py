"""Making a prompt exactly N tokens long: the length check of every long-input question.

A long question's message is fixed text around a stretch of *material* (source code, a list, documents,
a conversation). ``PromptFitter.fit`` keeps as much of the material as makes the whole prompt (the message
through the embedded model's chat template, exactly as a run encodes it) exactly ``target`` tokens, cut at
a token boundary of the material: its head, or its tail for a conversation whose end is the question. It
counts the real prompt after every cut, so BPE merges across the cut cannot fool it; where no token
boundary gives the target (the next one adds two tokens), it cuts between characters or closes the cut with
a one-token filler (a space, a full stop, a newline); a length it still cannot reach exactly, or material too
short for it, is a ``TaskDataError``.

Example: a message ``"Sort:\\n" + numbers + "\\nGo."`` for 600 tokens with the embedded model's template
(30 tokens of its own) keeps the first numbers whose tokens fill the remaining 570 minus the fixed text's.
"""
from __future__ import annotations

from typing import Any, Callable

from specbench.api import TaskDataError, encode_prompt

HEAD, TAIL = "head", "tail"
MAX_STEPS = 16
FILLERS = (" ", ".", "\n", " .", ";")  # one token each after most text: pads a cut that falls one token short
WINDOW = 8  # token cuts tried below the best one with a filler


class PromptFitter:
    """Counts and fits prompts with one tokenizer (the embedded model's for the built-in long tasks)."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    def count(self, message: str) -> int:
        """Tokens of the one-turn prompt ``message`` makes through the tokenizer's chat template."""
        return len(encode_prompt(self.tokenizer, [{"role": "user", "content": message}]))

    def fit(self, render: Callable[[str], str], material: str, target: int, keep: str = HEAD,
            what: str = "question") -> str:
        """``render(part)`` for the part of ``material`` (head or tail) whose prompt has exactly ``target`` tokens."""
        spans = self.tokenizer(material, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
        # char position of the cut keeping n tokens: a prefix ends where token n-1 ends, a suffix starts at
        # token len-n
        cuts = [0] + [e for _, e in spans] if keep == HEAD else [len(material)] + [s for s, _ in reversed(spans)]

        def part(cut: int) -> str:
            return material[:cut] if keep == HEAD else material[cut:]

        counts: dict[int, int] = {}
        n = target - self.count(render(""))
        for _ in range(MAX_STEPS):
            n = max(0, min(n, len(spans)))
            if n in counts:
                break
            counts[n] = self.count(render(part(cuts[n])))
            if counts[n] == target:
                return render(part(cuts[n]))
            n += target - counts[n]
        short = [k for k, c in counts.items() if c < target]
        best = max(short, default=0)
        if best == len(spans):
            raise TaskDataError(f"{what}: its material makes a prompt of only {counts[best]} of {target} tokens")
        # no token boundary lands on the target (a merge across the cut adds two): cut between characters, or
        # close the cut with a one-token filler, near the best cut
        lo, hi = sorted((cuts[best], cuts[min(best + 2, len(spans))]))
        tries = [part(cut) for cut in range(lo, hi + 1)]
        for k in range(best, max(best - WINDOW, 0) - 1, -1):
            tries += [part(cuts[k]) + f if keep == HEAD else f + part(cuts[k]) for f in FILLERS]
        for piece in tries:
            message = render(piece)
            if self.count(message) == target:
                return message
        raise TaskDataError(f"{what}: no cut of its material makes a prompt of exactly {target} tokens")
