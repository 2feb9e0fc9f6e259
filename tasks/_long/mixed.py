"""The mixed tier (SPEED-Bench: needle in a haystack, exams): long context that matters only in part.

- ``needle``: ShareGPT assistant answers, one after another, form a long document; one sentence giving an
  access code (made-up words and a number, seeded) sits at a seeded depth between two paragraphs, and the
  question at the end asks for it.
- ``exam``: GSM8K worked solutions (problem, working, answer) as study material, then three multiple-choice
  questions on other GSM8K problems (the right answer and three near misses, shuffled) to answer after it.

The needle, its depth (as a share of the document) and the exam questions do not depend on the length;
a longer length only adds haystack or study material.
"""
from __future__ import annotations

import random
from pathlib import Path

from specbench_tasks._long.fit import HEAD, PromptFitter
from specbench_tasks._long.sources import gsm8k_problems, sharegpt_pool

CHARS_PER_TOKEN = 8  # material gathered per target token (English is about 4.5)
EXAM_QUESTIONS = 3
EXAM_POOL = 1000  # exam questions come from GSM8K train's last problems, study material from the others
ADJECTIVES = ("amber", "cobalt", "crimson", "silver", "olive", "scarlet", "ivory", "copper", "violet", "jade")
NOUNS = ("falcon", "harbour", "lantern", "meadow", "glacier", "orchard", "beacon", "canyon", "compass", "quarry")
WORDS = ("maple", "tundra", "pelican", "saffron", "granite", "walnut", "zephyr", "basalt", "juniper", "marble")

NEEDLE = "The access code for the {adj} {noun} archive is {code}."
HAYSTACK = ("Below is a long document made of several texts. One sentence in it gives an access code.\n\n"
            "<document>\n{document}\n</document>\n\nWhat is the access code for the {adj} {noun} archive? "
            "Quote the sentence that gives it, then say in one sentence what the text around it is about.")
EXAM = ("Study these worked solutions of maths word problems.\n\n{examples}\n\nNow take the exam below. For "
        "each question, give the letter of the correct option and one line of working.\n\n{exam}")


def needle(r: random.Random, fitter: PromptFitter, target: int, what: str, data_dir: Path | None) -> str:
    adj, noun = r.choice(ADJECTIVES), r.choice(NOUNS)
    fact = NEEDLE.format(adj=adj, noun=noun, code=f"{r.choice(WORDS)}-{r.randint(1000, 9999)}")
    depth = r.uniform(0.1, 0.9)
    pool = sharegpt_pool()[1::2]  # every other conversation: the high tier reads the rest
    start = r.randrange(len(pool))
    paragraphs: list[str] = []
    for conv in pool[start:] + pool[:start]:
        paragraphs += [text for role, text in conv if role == "gpt"]
        if sum(map(len, paragraphs)) >= CHARS_PER_TOKEN * target:
            break
    haystack = "\n\n".join(paragraphs)

    def render(part: str) -> str:
        at = part.find("\n\n", int(depth * len(part)))  # the paragraph break at or after the needle's depth
        at = len(part) if at < 0 else at
        return HAYSTACK.format(document=f"{part[:at]}\n\n{fact}{part[at:]}", adj=adj, noun=noun)

    return fitter.fit(render, haystack, target, HEAD, what)


def _options(r: random.Random, answer: int) -> list[int]:
    """Four options: the answer and three distinct non-negative near misses, shuffled."""
    misses: set[int] = set()
    while len(misses) < 3:
        guess = r.choice((answer + r.randint(1, 9), answer - r.randint(1, 9), answer * 2, answer // 2, answer + 10))
        if guess != answer and guess >= 0:
            misses.add(guess)
    options = [answer, *sorted(misses)]
    r.shuffle(options)
    return options


def exam(r: random.Random, fitter: PromptFitter, target: int, what: str, data_dir: Path | None) -> str:
    problems = gsm8k_problems(data_dir)
    study, held_out = problems[:-EXAM_POOL], problems[-EXAM_POOL:]
    lines = []
    for k, (question, _work, answer) in enumerate(r.sample(held_out, EXAM_QUESTIONS), 1):
        options = _options(r, answer)
        letters = "\n".join(f"({'ABCD'[j]}) {o}" for j, o in enumerate(options))
        lines.append(f"Question {k}. {question}\n{letters}")
    start = r.randrange(len(study))
    examples: list[str] = []
    for question, work, answer in study[start:] + study[:start]:
        examples.append(f"Problem: {question}\nSolution: {work}\nAnswer: {answer}")
        if sum(map(len, examples)) >= CHARS_PER_TOKEN * target:
            break
    render = lambda part: EXAM.format(examples=part, exam="\n\n".join(lines))  # noqa: E731
    return fitter.fit(render, "\n\n".join(examples), target, HEAD, what)


KINDS = (("needle", needle), ("exam", exam))
