"""The low-entropy tier (SPEED-Bench: code, sorting): answers that copy or closely follow the input.

- ``continue``: a long stretch of standard-library source (one file, then the next ones in path order) and
  the request to continue it; the model writes more code in the same style.
- ``summary``: the same kind of stretch and the request to summarise it and list every class and function
  it defines (the names are copied from the input).
- ``sort``: a long list of random whole numbers (1 to 999999, one a line) to sort; the answer is the same
  numbers again, in order.

Each builder takes the question's generator, the fitter, the target prompt length, a name for errors and the
data dir, and returns the message; longer lengths keep more of the same material (more files, more numbers).
"""
from __future__ import annotations

import random
from pathlib import Path

from specbench_tasks._long.fit import HEAD, PromptFitter
from specbench_tasks._long.sources import stdlib_code

CHARS_PER_TOKEN = 6  # material gathered per target token: more than any source needs (code is about 3)

CONTINUE = ("Here is Python source code from the standard library, starting with the file {name}.\n\n"
            "```python\n{code}\n```\n\nContinue the code exactly from where it stops. Write only code.")
SUMMARY = ("Read this Python source code from the standard library, starting with the file {name}.\n\n"
           "```python\n{code}\n```\n\nSummarise it: one paragraph on what it does, then a bullet list naming "
           "every class and function it defines, one line each.")
SORT = ("Sort these {count} numbers in ascending order. Write the sorted numbers one per line and nothing "
        "else.\n\n{numbers}")


def code_continue(r: random.Random, fitter: PromptFitter, target: int, what: str, data_dir: Path | None) -> str:
    name, code = stdlib_code(r, CHARS_PER_TOKEN * target)
    return fitter.fit(lambda part: CONTINUE.format(name=name, code=part), code, target, HEAD, what)


def code_summary(r: random.Random, fitter: PromptFitter, target: int, what: str, data_dir: Path | None) -> str:
    name, code = stdlib_code(r, CHARS_PER_TOKEN * target)
    return fitter.fit(lambda part: SUMMARY.format(name=name, code=part), code, target, HEAD, what)


def sort_numbers(r: random.Random, fitter: PromptFitter, target: int, what: str, data_dir: Path | None) -> str:
    numbers = "\n".join(str(r.randint(1, 999_999)) for _ in range(target))  # >= 2 tokens each: plenty
    render = lambda part: SORT.format(count=part.count("\n") + 1 if part else 0, numbers=part)  # noqa: E731
    return fitter.fit(render, numbers, target, HEAD, what)


KINDS = (("continue", code_continue), ("summary", code_summary), ("sort", sort_numbers))
