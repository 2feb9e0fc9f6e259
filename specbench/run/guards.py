"""Checks a run makes before it writes or times anything: the folder holds the same work (config and
model weights), every prompt plus its generation fits the model's context, and tree verification can be exact on
the model's attention layout.

>>> context_limit(type("M", (), {"config": type("C", (), {"max_position_embeddings": 2048})()})())
2048
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from specbench.engine.attention_layout import attention_layout
from specbench.engine.step import DRAFT_HEADROOM
from specbench.errors import ConfigError, UserError
from specbench.models.context import config_context
from specbench.results.run_folder import (BATCH_PROFILE_FILE, MANIFEST_FILE, PROFILE_FILE, RECORDS_FILE, check_run_file,
                                          read_manifest)
from specbench.run.lock import LOCK_FILE

NAME_MAX = 255  # bytes of one path component on the common file systems


def check_run_folder(run_dir: Path) -> None:
    """The run folder is a folder or does not exist yet, its parents are folders, its name fits the file
    system, and the files a run writes there are regular files (no link to a file elsewhere, which a resume
    would cut and append to): a one-line ``ConfigError`` before anything loads, never an OS error halfway."""
    if run_dir.is_symlink() and not run_dir.exists():
        raise ConfigError(f"{run_dir} is a dangling symbolic link; delete it or pick another --run-name")
    if run_dir.exists() and not run_dir.is_dir():
        raise ConfigError(f"{run_dir} exists and is not a folder; delete it or pick another --run-name")
    if len(run_dir.name.encode()) > NAME_MAX:
        raise ConfigError(f"run folder name is {len(run_dir.name.encode())} bytes long, more than the {NAME_MAX} a "
                          "file system allows; pick a shorter --run-name")
    for parent in run_dir.parents:
        if parent.exists() or parent.is_symlink():
            if not parent.is_dir():
                raise ConfigError(f"{parent} (in --out-dir) is not a folder")
            break
    for name in (RECORDS_FILE, MANIFEST_FILE, LOCK_FILE, PROFILE_FILE, BATCH_PROFILE_FILE):
        try:
            check_run_file(run_dir / name)
        except UserError as e:
            raise ConfigError(str(e)) from None


def check_same_config(run_dir: Path, digest: str) -> None:
    """A folder with records is resumed only under the configuration (digest) its manifest names."""
    has_records = (run_dir / RECORDS_FILE).is_file() and (run_dir / RECORDS_FILE).stat().st_size > 0
    if not (run_dir / MANIFEST_FILE).is_file():
        if has_records:
            raise ConfigError(f"{run_dir} holds records but no {MANIFEST_FILE}, so its configuration cannot be "
                              "checked; pick another --run-name or delete that folder")
        return
    if read_manifest(run_dir).get("config_digest") != digest:
        raise ConfigError(f"{run_dir} holds a run with a different configuration; pick another --run-name "
                          "or delete that folder")


def check_same_model(run_dir: Path, model_hash: str) -> None:
    """Records of a resumed run must come from the same weights as the records already there."""
    if not (run_dir / MANIFEST_FILE).is_file():
        return
    old = (read_manifest(run_dir).get("model") or {}).get("hash")
    if old is not None and old != model_hash:
        raise ConfigError(f"{run_dir} was run with model weights {old}, but the model now hashes to {model_hash}; "
                          "the weights changed: pick another --run-name or delete that folder")


def other_commit(run_dir: Path, commit: str | None) -> str | None:
    """The one-line warning a resumed run gives when the records already in ``run_dir`` were timed under other git
    commits than ``commit`` (None: the same, unknown, or nothing there yet): its tables then pool timings of two
    versions of the code, which a reader cannot see in them.

    >>> other_commit(Path("no-such-folder"), "abc") is None
    True
    """
    if commit is None or not (run_dir / MANIFEST_FILE).is_file() or not (run_dir / RECORDS_FILE).is_file():
        return None
    manifest = read_manifest(run_dir)
    earlier = [manifest.get("git_commit"), *(r.get("git_commit") for r in manifest.get("resumed", []))]
    earlier = [c for c in earlier if c]
    if not earlier or commit in earlier or (run_dir / RECORDS_FILE).stat().st_size == 0:
        return None
    return (f"{run_dir} holds records timed at git {earlier[-1][:12]}, now resumed at git {commit[:12]}: its tables "
            "will pool timings of both; pick another --run-name to time this code alone")


def check_same_prompts(run_dir: Path, template: dict[str, Any]) -> None:
    """A resumed run must build the same prompt text as its first part (a tokenizer's template can change
    under the same model id): the hash of the first question's prompt is compared."""
    if not (run_dir / MANIFEST_FILE).is_file():
        return
    old = read_manifest(run_dir).get("chat_template") or {}
    if old.get("first_prompt_sha256") not in (None, template["first_prompt_sha256"]):
        raise ConfigError(f"{run_dir} was run with other prompt text (template {old.get('name')}, first prompt "
                          f"{old.get('first_prompt_sha256')}; now {template['name']}, {template['first_prompt_sha256']}): "
                          "pick another --run-name or delete that folder")


def context_limit(model: Any) -> int | None:
    """The model's maximum sequence length from its config, or None when it names none."""
    return config_context(getattr(model, "config", None))


def fitted_length(requested: int, limit: int | None, max_new_tokens: int) -> int:
    """The prompt length a long-input task builds for ``requested`` tokens: ``requested``, or when that and its
    generation do not fit the model's context ``limit``, the longest prompt that does (``check_context``'s rule).

    >>> fitted_length(4096, 8192, 128), fitted_length(8192, 8192, 128), fitted_length(8192, None, 128)
    (4096, 7936, 8192)
    """
    if limit is None:
        return requested
    return min(requested, limit - max_new_tokens - DRAFT_HEADROOM)


def check_context(model: Any, prompt_tokens: int, max_new_tokens: int, where: str = "", what: str = "prompt") -> None:
    """Prompt + max_new_tokens + the engine's draft headroom must fit the model's context (``what``: how the
    message names the prompt, e.g. a later turn's lower bound, ``later_turns_fit``)."""
    limit = context_limit(model)
    need = prompt_tokens + max_new_tokens + DRAFT_HEADROOM
    if limit is not None and need > limit:
        raise ConfigError(f"{where + ': ' if where else ''}{what} ({prompt_tokens} tokens) + --max-new-tokens "
                          f"({max_new_tokens}) + draft headroom ({DRAFT_HEADROOM}) = {need} exceeds the model's "
                          f"context of {limit} tokens; lower --max-new-tokens or --limit the questions")


def later_turns_fit(model: Any, encode: Callable[[int], int], turns: int, max_new_tokens: int, where: str) -> None:
    """Each later turn of a question can fit the model's context, judged before any generation from the user
    turns alone: ``encode(k)`` is the length of turn ``k``'s prompt (1-based) with every earlier answer empty, a
    lower bound of the prompt that turn will have (the answers only add to it). A turn past the context even so
    can never run, however its earlier answers come out: a one-line ``ConfigError`` at the start of the run,
    not one after every earlier turn was timed (and a resume that stops there again).

    >>> m = type("M", (), {"config": type("C", (), {"max_position_embeddings": 8192})()})()
    >>> later_turns_fit(m, lambda k: 2900 * k, 3, 64, "q/81")
    Traceback (most recent call last):
    ...
    specbench.errors.ConfigError: q/81 turn 3: its prompt without the earlier answers (8700 tokens) + --max-new-tokens (64) + draft headroom (128) = 8892 exceeds the model's context of 8192 tokens; lower --max-new-tokens or --limit the questions
    """
    for turn in range(2, turns + 1):
        check_context(model, encode(turn), max_new_tokens, f"{where} turn {turn}",
                      what="its prompt without the earlier answers")


def check_attention_layout(model: Any) -> None:
    """A one-line ``ConfigError`` naming the model's attention layout when tree verification cannot be exact on it
    (``engine.attention_layout``: recurrent or linear attention layers, GPT-Neo's local attention), on every backend,
    before anything is written or timed; full, sliding-window, interleaved and chunked layouts pass."""
    attention_layout(getattr(model, "config", None))
