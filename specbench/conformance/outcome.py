"""One property's verdict, as ``check-method`` prints it: ``PASS name: why``, ``FAIL ...`` or ``SKIP ...``.

>>> print(Outcome(FAIL, "exact-greedy", "gpt2 prompt 2 diverges at token 5"))
FAIL exact-greedy: gpt2 prompt 2 diverges at token 5
>>> passed("exact-batched", "4 prompts at width 2").ok, skipped("sampled", "greedy only").ok
(True, True)
"""
from __future__ import annotations

from dataclasses import dataclass

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"


@dataclass(frozen=True)
class Outcome:
    """A property's status (``PASS``, ``FAIL`` or ``SKIP``: the method declares it does not apply, or there was
    too little to judge), its name and why, in one line."""

    status: str
    name: str
    why: str

    @property
    def ok(self) -> bool:
        """Whether it lets the check pass (a skip does)."""
        return self.status != FAIL

    def __str__(self) -> str:
        return f"{self.status} {self.name}: {' '.join(self.why.split())}"


def passed(name: str, why: str) -> Outcome:
    return Outcome(PASS, name, why)


def failed(name: str, why: str) -> Outcome:
    return Outcome(FAIL, name, why)


def skipped(name: str, why: str) -> Outcome:
    return Outcome(SKIP, name, why)

