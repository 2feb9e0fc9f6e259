"""Proof that the server answering on a port is the one specbench started, not a stranger that bound the port
first (then specbench's own server fails to bind and exits, while the stranger answers ``/health`` and would be
measured in its place).

Two proofs, each as far as the platform and the server allow:

- ``listens``: the port's listening socket belongs to the process specbench started, or to one it started (a
  wrapper script's child), as psutil reads the process's sockets;
- ``mismatches``: what the server says of itself (llama.cpp's ``/props`` and ``/slots``) against what its command
  line asked (``asked_of``): the model file, the context per slot (at least what was asked: llama.cpp rounds it up
  to a multiple of 256), the number of slots, and whether its slots speculate. A field the server does not report,
  or a setting the command line leaves to the server, is not compared.

>>> asked = asked_of(["llama-server", "-m", "m.gguf", "-c", "2048", "-np", "2", "--spec-type", "none"])
>>> asked
Asked(model='m.gguf', ctx_per_slot=1024, slots=2, speculative=False)
>>> mismatches(asked, {"model_path": "m.gguf", "total_slots": 2, "default_generation_settings": {"n_ctx": 1024}},
...            [{"speculative": False}, {"speculative": False}])
[]
>>> mismatches(asked, {"model_path": "x.gguf", "total_slots": 1, "default_generation_settings": {"n_ctx": 512}},
...            [{"speculative": True}])
['model x.gguf, asked m.gguf', 'context 512 tokens per slot, asked 1024', '1 slot(s), asked 2', 'slots that speculate, asked none']
>>> mismatches(asked, {}, None)  # (a server that reports none of it: nothing to compare)
[]
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import psutil

# llama.cpp's flags for what is compared, short and long (the last one given wins, as in llama.cpp)
MODEL_FLAGS, CTX_FLAGS, SLOT_FLAGS = ("-m", "--model"), ("-c", "--ctx-size"), ("-np", "--parallel")
SPEC_FLAGS, DRAFT_FLAGS = ("--spec-type",), ("-md", "--model-draft")


@dataclass(frozen=True)
class Asked:
    """What a server's command line asked of it; None: left to the server (not compared)."""

    model: str | None
    ctx_per_slot: int | None
    slots: int | None
    speculative: bool | None


def _last(argv: list[str], names: tuple[str, ...]) -> str | None:
    values = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a in names]
    return values[-1] if values else None


def _int(text: str | None) -> int | None:
    try:
        value = int(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and value > 0 else None  # (0 or -1: the server's own choice)


def asked_of(argv: list[str]) -> Asked:
    """What ``argv`` (a llama-server command line) asks: see the module docstring."""
    slots, ctx = _int(_last(argv, SLOT_FLAGS)), _int(_last(argv, CTX_FLAGS))
    spec, draft = _last(argv, SPEC_FLAGS), _last(argv, DRAFT_FLAGS)
    speculative = None
    if spec is not None and (draft is None or spec != "none"):  # (a draft with speculation off: not compared)
        speculative = spec != "none"
    per_slot = None if ctx is None else ctx // (slots or 1)
    return Asked(_last(argv, MODEL_FLAGS), per_slot, slots, speculative)


def _same_file(a: str, b: str) -> bool:
    return a == b or os.path.realpath(a) == os.path.realpath(b)


def mismatches(asked: Asked, props: dict[str, Any], slots: list[Any] | None) -> list[str]:
    """How ``props`` (``/props``) and ``slots`` (``/slots``, None where it does not answer) differ from ``asked``,
    one phrase each; ``[]`` when nothing reported differs."""
    out = []
    model = props.get("model_path")
    if asked.model is not None and isinstance(model, str) and not _same_file(model, asked.model):
        out.append(f"model {model}, asked {asked.model}")
    settings = props.get("default_generation_settings")
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    if asked.ctx_per_slot is not None and isinstance(n_ctx, int) and n_ctx < asked.ctx_per_slot:
        out.append(f"context {n_ctx} tokens per slot, asked {asked.ctx_per_slot}")
    total = props.get("total_slots")
    if asked.slots is not None and isinstance(total, int) and total != asked.slots:
        out.append(f"{total} slot(s), asked {asked.slots}")
    flags = [s.get("speculative") for s in slots or [] if isinstance(s, dict)]
    served = {f for f in flags if isinstance(f, bool)}
    if asked.speculative is not None and served and served != {asked.speculative}:
        out.append("slots that speculate, asked none" if asked.speculative is False
                   else "slots that do not speculate, asked speculation")
    return out


def listens(pid: int, port: int) -> bool | None:
    """Whether process ``pid``, or a process it started, listens on TCP ``port``; None where its sockets cannot be
    read (then only ``mismatches`` proves the server its own)."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:
        return None
    for proc in procs:
        try:
            conns = proc.net_connections(kind="inet")
        except psutil.NoSuchProcess:
            continue
        except psutil.Error:
            return None
        if any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port for c in conns):
            return True
    return False
