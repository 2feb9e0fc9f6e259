"""The high-entropy tier (SPEED-Bench: open conversation): long ShareGPT conversations to answer.

``chat``: a transcript (``User:`` / ``Assistant:`` lines) of a ShareGPT conversation cut after its last user
turn, preceded by earlier whole conversations (the next ones in the pool) so that it fills the length, and
the request to write the assistant's reply. The transcript keeps its *end*: the conversation to answer is
the same at every length, a longer length reads further back.
"""
from __future__ import annotations

import random
from pathlib import Path

from specbench_tasks._long.fit import TAIL, PromptFitter
from specbench_tasks._long.sources import Turn, sharegpt_pool

CHARS_PER_TOKEN = 8
ROLE = {"human": "User", "gpt": "Assistant"}
CHAT = ("Below is a transcript of conversations between a user and an AI assistant.\n\n{transcript}\n\n"
        "Write the assistant's reply to the user's last message.")


def transcript(turns: tuple[Turn, ...]) -> str:
    return "\n\n".join(f"{ROLE[role]}: {text}" for role, text in turns)


def chat(r: random.Random, fitter: PromptFitter, target: int, what: str, data_dir: Path | None) -> str:
    pool = sharegpt_pool()[0::2]  # the mixed tier's haystacks read the other half
    start = r.randrange(len(pool))
    last = pool[start]
    last = last[: max(i for i, (role, _) in enumerate(last) if role == "human") + 1]  # end on the user's turn
    blocks = [transcript(last)]
    for conv in pool[start + 1:] + pool[:start]:
        if sum(map(len, blocks)) >= CHARS_PER_TOKEN * target:
            break
        blocks.insert(0, transcript(conv))
    return fitter.fit(lambda part: CHAT.format(transcript=part), "\n\n".join(blocks), target, TAIL, what)


KINDS = (("chat", chat),)
