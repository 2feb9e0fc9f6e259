"""The ``--engine`` value: which engine under test a run measures (``specbench.serving`` runs it).

>>> parse_engine("llama-server"), parse_engine("openai:http://127.0.0.1:8000")
(('llama-server', None), ('openai', 'http://127.0.0.1:8000'))
>>> parse_engine("vllm")
Traceback (most recent call last):
...
specbench.errors.ConfigError: --engine must be llama-server or openai:http://HOST:PORT (a server you started), got 'vllm'
"""
from __future__ import annotations

from specbench.errors import ConfigError

LLAMA_SERVER, OPENAI = "llama-server", "openai"
ENGINES = (LLAMA_SERVER, OPENAI)


def parse_engine(engine: str) -> tuple[str, str | None]:
    """(kind, URL) of an ``--engine`` value: ``llama-server`` (started by specbench) or ``openai:http://HOST:PORT``."""
    kind, _, url = engine.partition(":")
    if kind == LLAMA_SERVER and not url:
        return kind, None
    if kind == OPENAI and url.startswith(("http://", "https://")):
        return kind, url
    raise ConfigError(f"--engine must be {LLAMA_SERVER} or {OPENAI}:http://HOST:PORT (a server you started), "
                      f"got {engine!r}")
