"""The engines under test (``--engine``) and the speculation settings each offers, as method labels.

A method row of an engine run is ``engine:SETTING`` (``engine:ngram``, ``engine:draft``; a second variant of one
setting is ``engine:ngram@short``), the baseline row ``engine:off``: the same engine with speculation off, which
every engine run adds itself. Options come as for any method (``--method-opt engine:ngram.KEY=VALUE``).

**llama-server**: a setting is a ``--spec-type`` at llama.cpp's own defaults; every option ``KEY=VALUE`` becomes
the server flag ``--KEY VALUE`` (``--method-opt engine:ngram.spec-ngram-simple-size-n=3``; an empty value gives
the flag alone), checked by the server itself as it starts. ``model`` names the draft model (a ``.gguf`` file;
``sps``, the default of ``engine:draft``: the SpS distilled draft written as a GGUF, ``draft_gguf.py``) and
``flags`` adds raw flags (``--method-opt "engine:draft.flags=--spec-draft-p-min 0.5"``).

**openai:URL**: the user starts one server per setting; ``URL`` is the one without speculation and each setting
names its own with ``url`` (``--method-opt engine:eagle3.url=http://127.0.0.1:8001``); any setting name goes.

>>> setting_flags("llama-server", "engine:ngram@n3", {"spec-ngram-simple-size-n": "3"})
['--spec-type', 'ngram-simple', '--spec-ngram-simple-size-n', '3']
>>> setting_flags("llama-server", "engine:off", {})
['--spec-type', 'none']
>>> setting_flags("llama-server", "engine:magic", {})  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
specbench.errors.UnknownNameError: unknown llama-server setting 'magic' (engine:magic); known: off, ngram, ...
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any

from specbench.catalog import ENGINE_BASELINE, ENGINE_PREFIX
from specbench.config.engine_choice import LLAMA_SERVER, OPENAI, parse_engine
from specbench.config.method_labels import BUDGET_KEY, label_options
from specbench.errors import ConfigError, UnknownNameError

MODEL_KEY, FLAGS_KEY, URL_KEY = "model", "flags", "url"
SPS_DRAFT = "sps"


@dataclass(frozen=True)
class LlamaSetting:
    """One llama-server speculation setting: its ``--spec-type``, and whether it needs a draft model file."""

    spec_type: str
    summary: str
    needs_model: bool = False
    default_model: str | None = None


LLAMA_SETTINGS = {
    "off": LlamaSetting("none", "speculation off: the baseline every engine row is timed against"),
    "ngram": LlamaSetting("ngram-simple", "n-gram lookup in the context (prompt lookup, like pld), its defaults"),
    "ngram-simple": LlamaSetting("ngram-simple", "the same as ngram"),
    "ngram-map-k": LlamaSetting("ngram-map-k", "n-gram keys whose continuation repeated"),
    "ngram-map-k4v": LlamaSetting("ngram-map-k4v", "n-gram keys with up to four continuations counted"),
    "ngram-mod": LlamaSetting("ngram-mod", "rolling n-gram hashes in one pool shared by all requests"),
    "ngram-cache": LlamaSetting("ngram-cache", "n-gram statistics of the context (llama.cpp's lookup decoding)"),
    "draft": LlamaSetting("draft-simple", "a draft model (model=PATH.gguf; default sps: the SpS distilled draft)",
                          needs_model=True, default_model=SPS_DRAFT),
    "eagle3": LlamaSetting("draft-eagle3", "an EAGLE-3 head converted to GGUF (model=PATH.gguf)", needs_model=True),
    "mtp": LlamaSetting("draft-mtp", "the model's own multi-token-prediction layers (a model that has them)"),
    "dflash": LlamaSetting("draft-dflash", "a DFlash block-diffusion draft (model=PATH.gguf)", needs_model=True),
    "dspark": LlamaSetting("draft-dspark", "a DSpark draft (model=PATH.gguf)", needs_model=True),
}
_KEY = re.compile(r"[a-z0-9][a-z0-9-]*")


def setting_name(label: str) -> str:
    """``engine:ngram@short`` -> ``ngram``."""
    return label[len(ENGINE_PREFIX):].partition("@")[0]


def check_label(kind: str, label: str, options: dict[str, str]) -> None:
    """A one-line error for an unknown setting, a bad option name, or a missing ``url`` / ``model``."""
    name = setting_name(label)
    if not name:
        raise ConfigError(f"{label}: an engine row names a setting, e.g. {ENGINE_PREFIX}ngram")
    if kind == OPENAI:
        if label != ENGINE_BASELINE and not options.get(URL_KEY):
            raise ConfigError(f"{label}: --engine {OPENAI} reaches each setting's own server: "
                              f"--method-opt {label}.{URL_KEY}=http://HOST:PORT")
        return
    setting = LLAMA_SETTINGS.get(name)
    if setting is None:
        raise UnknownNameError(f"unknown {LLAMA_SERVER} setting {name!r} ({label}); known: {', '.join(LLAMA_SETTINGS)}")
    for key in options:
        if key not in (MODEL_KEY, FLAGS_KEY) and not _KEY.fullmatch(key):
            raise ConfigError(f"--method-opt {label}.{key}: a {LLAMA_SERVER} option is a flag name such as "
                              "spec-draft-n-max (lower case, digits, '-')")
    if setting.needs_model and not (options.get(MODEL_KEY) or setting.default_model):
        raise ConfigError(f"{label} needs a draft model: --method-opt {label}.{MODEL_KEY}=PATH.gguf")


def draft_model(label: str, options: dict[str, str]) -> str | None:
    """The draft model a llama-server setting runs (``model``, else its default), or None."""
    setting = LLAMA_SETTINGS[setting_name(label)]
    return options.get(MODEL_KEY) or setting.default_model if setting.needs_model or MODEL_KEY in options else None


def setting_flags(kind: str, label: str, options: dict[str, str]) -> list[str]:
    """The llama-server flags of ``label`` with ``options`` (the draft model's ``-md`` is added by the session)."""
    check_label(kind, label, options)
    flags = ["--spec-type", LLAMA_SETTINGS[setting_name(label)].spec_type]
    for key, value in options.items():
        if key == FLAGS_KEY:
            flags += shlex.split(str(value))
        elif key != MODEL_KEY:
            flags += [f"--{key}"] + ([str(value)] if str(value) != "" else [])
    return flags


def engine_labels(config: Any, given: list[str]) -> list[str]:
    """The engine rows of a run (``RunConfig`` ``config``): ``engine:off`` first, then ``given`` in order, each
    checked with its options (``budget`` is refused: an engine decides its own draft lengths)."""
    if config.engine is None:
        return []
    kind, _ = parse_engine(config.engine)
    labels = [ENGINE_BASELINE] + [m for m in dict.fromkeys(given) if m != ENGINE_BASELINE]
    for label in labels:
        options = label_options(label, config.method_options)
        if BUDGET_KEY in options:
            raise ConfigError(f"{label}: an engine decides its own draft lengths (no budget option; its own flags "
                              "set them, e.g. --method-opt engine:draft.spec-draft-n-max=8)")
        check_label(kind, label, {k: str(v) for k, v in options.items()})
    return labels
