"""Reading a drafter checkpoint's files, with one-line errors naming the file or folder and what is wrong.

A checkpoint folder is user input, often downloaded: its ``config.json`` may not be JSON, its safetensors
header may be garbage, its ``.bin`` / ``.pt`` may pickle code that ``torch.load(weights_only=True)``
refuses, its tensors may carry names the module does not have. Every checkpoint loader reads through
``read_config`` and ``read_tensors`` and interprets what they return inside ``checkpoint_errors``, so
whatever goes wrong ends as one ``ConfigError`` (the CLI prints it as one line), never a traceback.

>>> import tempfile
>>> folder = Path(tempfile.mkdtemp()); _ = (folder / "config.json").write_text("{not json")
>>> read_config(folder, "medusa", "a Medusa checkpoint")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
specbench.errors.ConfigError: medusa: .../config.json is not valid JSON (Expecting property name ...: line 1 column 2)
>>> with checkpoint_errors("medusa", folder):  # doctest: +ELLIPSIS
...     int("b")  # a weight named "a.b" where the loader expects "{head}.{block}...."
Traceback (most recent call last):
...
specbench.errors.ConfigError: medusa: ... is corrupt or not a checkpoint this loader can use (ValueError: invalid literal for int() with base 10: 'b')
"""
from __future__ import annotations

import contextlib
import json
import pickle
import re
from pathlib import Path
from typing import Any, Iterator

from specbench.errors import USER_ERRORS, ConfigError

# the part of torch's long "Weights only load failed" message that says what was refused
_REFUSED = re.compile(r"(Unsupported global: GLOBAL \S+|unsupported GLOBAL \S+|Unsupported operand \d+)")


def first_line(e: BaseException) -> str:
    """``"Type: first line of the message"`` of an exception (its name alone when it has no message)."""
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0]}" if lines else type(e).__name__


def read_config(folder: Path, what: str, kind: str, name: str = "config.json") -> dict[str, Any]:
    """The JSON object in ``folder / name``; ``kind`` says what the folder should be, for the missing-file error
    (``"a Medusa checkpoint"``). One-line ``ConfigError`` prefixed ``"<what>: "`` for anything else."""
    file = folder / name
    if not file.is_file():
        raise ConfigError(f"{what}: {folder} has no {name} (not {kind})")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ConfigError(f"{what}: {file} is not valid JSON ({e.msg}: line {e.lineno} column {e.colno})") from None
    except RecursionError:  # ([ nested 100,000 deep; the stack is unwound by now)
        raise ConfigError(f"{what}: {file} is JSON nested too deeply to read") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{what}: cannot read {file} ({first_line(e)})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{what}: {file} is not a JSON object (a {type(data).__name__})")
    return data


def read_tensors(file: Path, what: str) -> dict[str, Any]:
    """The tensors of a weight file by name: ``*.safetensors``, or a ``.bin`` / ``.pt`` read only through
    ``torch.load(weights_only=True)``, so no pickled code runs. One-line ``ConfigError`` when it cannot be
    read, when torch refuses the pickle, or when it holds something other than a mapping of names to tensors."""
    import torch

    try:
        if file.suffix == ".safetensors":
            from safetensors.torch import load_file

            state = load_file(str(file))
        else:
            state = torch.load(str(file), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        found = _REFUSED.search(str(e))
        raise ConfigError(f"{what}: {file} was refused by torch.load(weights_only=True) "
                          f"({found.group(1) if found else first_line(e)}): not a plain tensor file, and pickled code never "
                          "runs here; only weight files load (safetensors, or a .bin of plain tensors)") from None
    except Exception as e:  # safetensors, zip and torch errors of a damaged file have many types
        raise ConfigError(f"{what}: {file} is corrupt or not a weight file ({first_line(e)})") from None
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                              for k, v in state.items()):
        raise ConfigError(f"{what}: {file} is not a mapping of names to tensors (it holds a {type(state).__name__})")
    return state


@contextlib.contextmanager
def checkpoint_errors(what: str, folder: Path, fix: str = "", error: type[ConfigError] = ConfigError) -> Iterator[None]:
    """Turn whatever a loader raises while it interprets ``folder``'s files (a missing key, a wrong type, a
    tensor name it cannot parse, a shape ``load_state_dict`` refuses) into one ``error`` (a ``ConfigError``
    class) naming the folder; ``fix`` is appended: what the user can do about it. One-line user errors pass
    through, those of ``read_config`` / ``read_tensors`` as ``error``."""
    try:
        yield
    except ConfigError as e:
        if isinstance(e, error):
            raise
        raise error(str(e)) from None
    except USER_ERRORS:
        raise
    except Exception as e:  # anything else a damaged or foreign checkpoint provokes in its loader
        raise error(f"{what}: {folder} is corrupt or not a checkpoint this loader can use ({first_line(e)})"
                    + (f"; {fix}" if fix else "")) from None
