"""``suffix.warm=N``: the global index pre-filled with the target's answers to N questions no run times.

The reference's simulator (ArcticInference ``suffix_decoding/simulator.py``, ``process_task``) starts its
global cache full: before the evaluated requests it adds the responses of ``--num-train`` other examples
of the same dataset (or of ``--train-dataset``), so its first evaluated request already drafts from
earlier responses. Here the earlier responses are the target's own greedy answers to the first N
questions of the task's **dev** split (``specbench.prompts.task``: the last ceil(10%) of its questions),
which a run on the eval split never times. A run that times the dev split (``--split dev`` or ``all``, as
``--preset spec-bench`` does) is refused, so no question is ever drafted from its own answer.

The answers are generated when the drafter is built (outside any timing): greedy, up to ``warm_tokens``
new tokens or a stop token; each turn of a multi-turn question is prompted with the earlier turns' warm
answers (as the runner prompts with AR's), through the tokenizer's own chat template (``encode_prompt``;
a run's ``--chat-template`` is not handed to methods).

Example: MT-Bench's 80 questions have a dev split of 8; ``--method-opt suffix.warm=8`` puts their 16
answers (two turns each) into the index before the first eval question.
"""
from __future__ import annotations

import weakref
from typing import Any

import torch

from specbench.api import (DEFAULT_SPLIT, ConfigError, MethodEnv, Question, Task, TaskDataError, encode_prompt,
                           make_task, stop_token_ids)

# model -> (task, split, N, tokens) -> (question ids, answers): batched runs build a drafter per slot
_MEMO: "weakref.WeakKeyDictionary[Any, dict[tuple[Any, ...], tuple[list[str], list[list[int]]]]]" = weakref.WeakKeyDictionary()


def warm_questions(questions: list[Question], task: Task, split: str, n: int) -> list[Question]:
    """The first ``n`` questions of ``task``'s dev split (all of it when it has fewer), for a run timing ``split``."""
    if split != DEFAULT_SPLIT:
        raise ConfigError(f"suffix.warm pre-fills from the task's dev split, which --split {split} times; "
                          f"run --split {DEFAULT_SPLIT} (or leave suffix.warm at 0)")
    try:
        return task.split(questions, "dev")[:n]
    except TaskDataError as e:
        raise ConfigError(f"suffix.warm: {e}") from None


def greedy_answer(model: torch.nn.Module, prompt: list[int], max_new_tokens: int, stops: set[int]) -> list[int]:
    """The target's greedy continuation of ``prompt``: at most ``max_new_tokens``, ending at a stop token."""
    device = next(model.parameters()).device
    ids, past, out = torch.tensor([prompt], device=device), None, []
    with torch.inference_mode():
        for _ in range(max_new_tokens):
            step = model(input_ids=ids, past_key_values=past, use_cache=True)
            past, token = step.past_key_values, int(step.logits[0, -1].argmax())
            out.append(token)
            if token in stops:
                break
            ids = torch.tensor([[token]], device=device)
    return out


def warm_answers(env: MethodEnv, n: int, max_new_tokens: int) -> tuple[list[str], list[list[int]]]:
    """(the dev questions used, their answers in order: every turn of each) for ``env``'s task."""
    if env.task is None:
        raise ConfigError("suffix.warm needs the task the drafter is built for")
    memo, key = _MEMO.setdefault(env.model, {}), (env.task, env.split, n, max_new_tokens)
    if key not in memo:
        task = make_task(env.task)
        questions = warm_questions(task.load(env.data_dir), task, env.split, n)
        stops = stop_token_ids(env.tokenizer, env.model)
        answers: list[list[int]] = []
        for q in questions:
            texts: list[str] = []
            for turn in range(len(q.turns)):
                prompt = encode_prompt(env.tokenizer, task.messages(q, turn, texts))
                answers.append(greedy_answer(env.model, prompt, max_new_tokens, stops))
                texts.append(env.tokenizer.decode(answers[-1], skip_special_tokens=True))
        memo[key] = ([q.question_id for q in questions], answers)
    return memo[key]
