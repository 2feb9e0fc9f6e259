"""The DReSD datastore on disk and in memory: normalised keys, next-token values, transform, faiss index.

Directory layout (no pickle)::

    header.json           format, sizes, model/tokenizer fingerprints, build settings, file checksums
    keys.npy              float32 [N, d]  transformed (z-score -> PCA -> L2) keys
    values.npy            int32   [N, n_next]  the n_next tokens following each key's position
    transform.safetensors mean [h], std [h], components [h, d]
    index.faiss           faiss inner-product index over keys (IVF-Flat, or Flat when N is small)
"""
from __future__ import annotations

import hashlib
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from specbench.api import ContentMismatch, DatastoreError, file_sha256, parse_json, strict_json, verify_sha256
from specbench_methods.dresd.datastore.fingerprint import hidden_size, model_fingerprint, tokenizer_fingerprint
from specbench_methods.dresd.datastore.transform import DenseTransform

FORMAT = "specbench-dresd-datastore"
VERSION = 1
FILES = ("keys.npy", "values.npy", "transform.safetensors", "index.faiss")
MIN_IVF_POINTS_PER_LIST = 39  # faiss k-means warns below this many training points per centroid


def default_nlist(n: int) -> int:
    """IVF list count ``4 * sqrt(N)``; 0 (exact Flat index) when N is too small to train it."""
    nlist = int(4 * math.sqrt(n))
    return nlist if nlist >= 2 and n >= MIN_IVF_POINTS_PER_LIST * nlist else 0


def build_index(keys: np.ndarray, nlist: int | None = None) -> Any:
    """An inner-product faiss index over ``keys`` [N, d]: IVF-Flat with ``nlist`` lists, or Flat if 0."""
    import faiss

    keys = np.ascontiguousarray(keys, dtype=np.float32)
    d = keys.shape[1]
    nlist = default_nlist(len(keys)) if nlist is None else nlist
    if nlist <= 0:
        index = faiss.IndexFlatIP(d)
    else:
        quantizer = faiss.IndexFlatIP(d)
        index = faiss.IndexIVFFlat(quantizer, d, nlist, faiss.METRIC_INNER_PRODUCT)
        index.train(keys)
    index.add(keys)
    return index


@dataclass(eq=False)
class DenseDatastore:
    """Keys, values, transform and header of a DReSD datastore, with lazily built search indexes."""

    keys: np.ndarray  # [N, d] float32, unit norm
    values: np.ndarray  # [N, n_next] int32
    transform: DenseTransform
    header: dict[str, Any]
    index: Any = None  # approximate (IVF) or exact index, as stored
    _flat: Any = field(default=None, repr=False)

    def __len__(self) -> int:
        return int(self.keys.shape[0])

    @property
    def digest(self) -> str:
        """Short content hash (from the file checksums in the header)."""
        files = self.header.get("files") or {}
        return hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()[:16]

    def ensure_index(self) -> Any:
        if self.index is None:
            self.index = build_index(self.keys, self.header.get("index", {}).get("nlist"))
        return self.index

    def flat_index(self) -> Any:
        """An exact inner-product index over the same keys (built on first use)."""
        import faiss

        if self._flat is None:
            if self.index is not None and isinstance(self.index, faiss.IndexFlat):
                self._flat = self.index
            else:
                self._flat = build_index(self.keys, 0)
        return self._flat

    def search(self, queries: np.ndarray, k: int, nprobe: int = 32, exact: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` inner products of transformed ``queries`` [m, d] -> (scores [m, k], ids [m, k]); ids -1 = none."""
        index = self.flat_index() if exact else self.ensure_index()
        if hasattr(index, "nprobe"):
            index.nprobe = nprobe
        q = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        return index.search(q, min(k, len(self)))

    # ---- compatibility -------------------------------------------------------------------------------

    def check_compatible(self, model: Any, tokenizer: Any | None = None) -> None:
        """Raise ``DatastoreError`` if the datastore was built for another hidden size or tokenizer."""
        where = self.header.get("path", "datastore")
        h = hidden_size(model)
        if self.transform.in_dim != h:
            raise DatastoreError(
                f"{where}: built for hidden size {self.transform.in_dim} but the target model has {h}; rebuild it for this model"
            )
        vocab = int(model.get_output_embeddings().weight.shape[0])
        if int(self.header.get("vocab_size", vocab)) != vocab:
            raise DatastoreError(f"{where}: built for vocabulary size {self.header.get('vocab_size')} but the target has {vocab}")
        want = self.header.get("tokenizer_fingerprint")
        got = tokenizer_fingerprint(tokenizer) if tokenizer is not None else None
        if want is not None and got is not None and want != got:
            raise DatastoreError(f"{where}: built with a different tokenizer (fingerprint {want}, target's {got}); rebuild it")
        if self.header.get("model_fingerprint") not in (None, model_fingerprint(model)):
            # same shapes and tokenizer but other weights (or another dtype): usable, but keys drift
            print(f"[specbench] warning: {where} was built from different model weights or dtype; acceptance may suffer",
                  file=sys.stderr)

    # ---- persistence ---------------------------------------------------------------------------------

    def save(self, out: str | Path) -> Path:
        """Write the datastore to directory ``out`` (files first, header with checksums last)."""
        from safetensors.numpy import save_file

        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        import faiss

        np.save(out / "keys.npy", np.ascontiguousarray(self.keys, dtype=np.float32))
        np.save(out / "values.npy", np.ascontiguousarray(self.values, dtype=np.int32))
        save_file({k: np.ascontiguousarray(v) for k, v in self.transform.arrays().items()}, str(out / "transform.safetensors"))
        faiss.write_index(self.ensure_index(), str(out / "index.faiss"))
        header = dict(self.header)
        header.update(format=FORMAT, version=VERSION, n_entries=len(self), key_dim=int(self.keys.shape[1]),
                      n_next=int(self.values.shape[1]), hidden_size=self.transform.in_dim)
        header["files"] = {name: {"sha256": file_sha256(out / name), "bytes": (out / name).stat().st_size} for name in FILES}
        header.pop("path", None)
        tmp = out / "header.json.tmp"
        tmp.write_text(strict_json(header, indent=2, sort_keys=True), encoding="utf-8")
        tmp.replace(out / "header.json")
        self.header = header
        return out

    @staticmethod
    def load(path: str | Path, verify: bool = True) -> "DenseDatastore":
        """Read a datastore directory; ``DatastoreError`` with the reason if it is missing or corrupt."""
        import faiss
        from safetensors.numpy import load_file

        path = Path(path)
        head_path = path / "header.json"
        if not head_path.is_file():
            raise DatastoreError(f"{path}: not a DReSD datastore (no header.json); build one with `specbench datastore build --kind dresd`")
        try:
            header = parse_json(head_path.read_text(encoding="utf-8"))
        except ValueError as e:  # (malformed, not UTF-8, nested too deeply)
            raise DatastoreError(f"{head_path}: corrupt header ({e})") from None
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise DatastoreError(f"{head_path}: not a DReSD datastore header")
        if header.get("version") != VERSION:
            raise DatastoreError(f"{path}: datastore format version {header.get('version')} (this specbench reads {VERSION}); rebuild it")
        files = header.get("files") or {}
        for name in FILES:
            f = path / name
            if not f.is_file():
                raise DatastoreError(f"{path}: missing {name}; the datastore is incomplete, rebuild it")
            meta = files.get(name) or {}
            try:
                if meta.get("bytes") != f.stat().st_size:
                    raise ContentMismatch(f"{f.stat().st_size} bytes, header.json says {meta.get('bytes')}")
                if verify:
                    verify_sha256(f, str(meta.get("sha256") or ""), "its checksum in header.json")
            except ContentMismatch:
                raise DatastoreError(f"{path}: {name} does not match its checksum in header.json (corrupt or modified); "
                                     "rebuild it") from None
        try:
            keys = np.load(path / "keys.npy", allow_pickle=False)
            values = np.load(path / "values.npy", allow_pickle=False)
            transform = DenseTransform.from_arrays(load_file(str(path / "transform.safetensors")))
            index = faiss.read_index(str(path / "index.faiss"))
        except (ValueError, OSError, KeyError, RuntimeError) as e:
            raise DatastoreError(f"{path}: cannot read datastore files ({str(e).splitlines()[0]})") from None
        n = header.get("n_entries")
        if keys.ndim != 2 or values.ndim != 2 or keys.shape[0] != n or values.shape[0] != n or index.ntotal != n:
            raise DatastoreError(f"{path}: inconsistent sizes (header {n}, keys {keys.shape}, values {values.shape}, index {index.ntotal})")
        if values.size and (int(values.min()) < -1 or int(values.max()) >= int(header.get("vocab_size", 2**31))):
            raise DatastoreError(f"{path}: values.npy holds token ids outside the vocabulary; rebuild it")
        if keys.shape[1] != transform.out_dim:
            raise DatastoreError(f"{path}: key width {keys.shape[1]} differs from the transform's {transform.out_dim}")
        header["path"] = str(path)
        return DenseDatastore(keys, values, transform, header, index)
