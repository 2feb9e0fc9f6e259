"""llama.cpp through llama-cpp-python's ctypes binding (the optional extra ``specbench[llamacpp]``): imported
on first use, initialised once, its log reduced to errors; a one-line error naming the extra when missing.

Only the C API is used (``llama_cpp.llama_cpp``), never the high-level ``Llama`` class: the engine drives
batches, sequence ids and the KV cache itself.

>>> import importlib.util
>>> available() == (importlib.util.find_spec("llama_cpp") is not None)
True
"""
from __future__ import annotations

import ctypes
import importlib.metadata
import importlib.util
import sys
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

from specbench.errors import UserError

EXTRA = "specbench[llamacpp]"
INSTALL_HINT = (f"pip install '{EXTRA}' (llama-cpp-python builds llama.cpp from source, a few minutes; "
                "scripts/setup.sh with SPECBENCH_LLAMACPP=1 uses the fastest build flags)")
_ERROR_LEVEL, _CONT = 4, 5  # GGML_LOG_LEVEL_ERROR (what still reaches stderr); CONT continues the last message
_KEEP: list[Any] = []  # the log callback must outlive every call into the library
_LAST = [0]  # the level of the last message, for its continuations


class LlamaCppMissing(UserError):
    """llama-cpp-python is not installed (one line, naming the extra)."""


def available() -> bool:
    """Whether llama-cpp-python is installed (without importing it)."""
    return importlib.util.find_spec("llama_cpp") is not None


@lru_cache(maxsize=1)
def llama() -> ModuleType:
    """The initialised ``llama_cpp.llama_cpp`` module; ``LlamaCppMissing`` when the extra is not installed."""
    if not available():
        raise LlamaCppMissing(f"--backend llamacpp needs llama.cpp: {INSTALL_HINT}")
    try:
        import llama_cpp.llama_cpp as lib
    except (ImportError, OSError) as e:  # a build whose shared library does not load here
        raise LlamaCppMissing(f"llama-cpp-python is installed but does not load ({type(e).__name__}: "
                              f"{str(e).splitlines()[0] if str(e) else ''}); reinstall it: {INSTALL_HINT}") from None

    def log(level: int, text: bytes, _data: Any) -> None:
        if level != _CONT:
            _LAST[0] = level
        if _LAST[0] >= _ERROR_LEVEL and text:
            sys.stderr.write(text.decode("utf-8", "replace"))

    callback = lib.llama_log_callback(log)
    _KEEP.append(callback)
    lib.llama_log_set(callback, ctypes.c_void_p(0))
    lib.llama_backend_init()
    return lib


def library_info() -> dict[str, Any]:
    """What the manifest records about the library: binding version, the ggml it vendors (version and commit),
    llama.cpp's build (CPU features and compile options as ``llama_print_system_info`` reports them: SIMD
    levels chosen by the native build, LLAMAFILE, OPENMP, REPACK) and the most sequences a context holds."""
    lib = llama()
    return {
        "llama_cpp_python": importlib.metadata.version("llama_cpp_python"),
        **_ggml_build(),
        "system_info": lib.llama_print_system_info().decode("utf-8", "replace").strip(),
        "max_sequences": int(lib.llama_max_parallel_sequences()),
    }


def _ggml_build() -> dict[str, str]:
    """ggml's version and commit from the wheel's ``libggml-base`` (absent from older builds: nothing then)."""
    import llama_cpp

    try:
        base = ctypes.CDLL(str(Path(llama_cpp.__file__).parent / "lib" / "libggml-base.so"))
        out = {}
        for name in ("ggml_version", "ggml_commit"):
            fn = getattr(base, name)
            fn.restype = ctypes.c_char_p
            out[name] = fn().decode("utf-8", "replace")
        return out
    except (OSError, AttributeError):
        return {}
