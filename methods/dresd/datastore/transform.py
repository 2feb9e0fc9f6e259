"""Key normalisation for dense retrieval: z-score, PCA to a few components, then L2 normalisation.

Fitted once on a sample of datastore keys and applied identically to datastore keys and queries, so
inner product search over the transformed vectors is cosine similarity in the whitened PCA space.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

STD_EPS = 1e-6


@dataclass(frozen=True, eq=False)
class DenseTransform:
    """``y = l2norm(((x - mean) / std) @ components)``.

    Stored as float32 arrays: ``mean`` [h], ``std`` [h], ``components`` [h, d] (columns sorted by
    decreasing explained variance, each with its largest-magnitude entry positive).
    """

    mean: np.ndarray  # [h]
    std: np.ndarray  # [h]
    components: np.ndarray  # [h, d]

    def __post_init__(self) -> None:
        h, d = self.components.shape
        if self.mean.shape != (h,) or self.std.shape != (h,):
            raise ValueError(f"transform shapes disagree: mean {self.mean.shape}, std {self.std.shape}, components {self.components.shape}")
        # fold the z-score into the projection: y = x @ proj - bias
        proj = (self.components / self.std[:, None]).astype(np.float32)
        bias = ((self.mean / self.std) @ self.components).astype(np.float32)
        object.__setattr__(self, "_proj", proj)
        object.__setattr__(self, "_bias", bias)

    @property
    def in_dim(self) -> int:
        return int(self.components.shape[0])

    @property
    def out_dim(self) -> int:
        return int(self.components.shape[1])

    def apply(self, x: np.ndarray) -> np.ndarray:
        """Transform keys or queries ``x`` [n, h] (or [h]) -> float32 unit vectors [n, d] (or [d])."""
        x = np.asarray(x, dtype=np.float32)
        y = x @ self._proj - self._bias  # type: ignore[attr-defined]
        norm = np.linalg.norm(y, axis=-1, keepdims=True)
        return (y / np.maximum(norm, 1e-12)).astype(np.float32)

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays to store (see ``from_arrays``)."""
        return {"mean": self.mean, "std": self.std, "components": self.components}

    @staticmethod
    def from_arrays(arrays: dict[str, np.ndarray]) -> "DenseTransform":
        return DenseTransform(
            np.asarray(arrays["mean"], np.float32), np.asarray(arrays["std"], np.float32), np.asarray(arrays["components"], np.float32)
        )


# rows converted to float64 at a time: 128 MiB at hidden 4096, whatever the sample size
FIT_CHUNK_BYTES = 1 << 27


def _chunks(keys: np.ndarray | torch.Tensor, rows: np.ndarray | None, chunk_rows: int):
    n = keys.shape[0] if rows is None else len(rows)
    for i in range(0, n, chunk_rows):
        part = keys[i : i + chunk_rows] if rows is None else keys[rows[i : i + chunk_rows]]
        yield torch.as_tensor(np.asarray(part), dtype=torch.float64)


def fit_transform(keys: np.ndarray | torch.Tensor, n_components: int = 64, rows: np.ndarray | None = None,
                  chunk_rows: int | None = None) -> DenseTransform:
    """Fit mean/std and a PCA basis on ``keys[rows]`` [n, h] (all keys when ``rows`` is None), streamed.

    The sample is never materialised: chunks of ``chunk_rows`` rows (``FIT_CHUNK_BYTES`` of float64 by
    default) are read from ``keys`` (a memory map is fine) and folded into float64 sums, so memory is
    O(h^2 + chunk) instead of n x h float64 (64 GB for 1M keys at hidden 4096). Sums are taken around
    the first chunk's mean, which keeps the one-pass covariance accurate for large-mean dimensions.

    >>> x = np.random.default_rng(0).normal(size=(500, 8)).astype(np.float32)
    >>> a, b = fit_transform(x, 4), fit_transform(x, 4, chunk_rows=7)
    >>> bool(np.allclose(a.components, b.components, atol=1e-5))
    True
    """
    n = keys.shape[0] if rows is None else len(rows)
    h = keys.shape[1]
    if n < 2:
        raise ValueError("need at least 2 keys to fit the normalisation")
    d = min(n_components, h)
    chunk_rows = chunk_rows or max(1, FIT_CHUNK_BYTES // (8 * h))
    shift = s1 = s2 = None
    for x in _chunks(keys, rows, chunk_rows):  # [c, h] float64
        if shift is None:
            shift, s1, s2 = x.mean(dim=0), torch.zeros(h, dtype=torch.float64), torch.zeros(h, h, dtype=torch.float64)
        x = x - shift
        s1 += x.sum(dim=0)
        s2 += x.T @ x
    m = s1 / n  # mean of (x - shift)
    cov_x = (s2 - n * torch.outer(m, m)) / (n - 1)  # [h, h]
    std = cov_x.diagonal().clamp_min(0).sqrt().clamp_min(STD_EPS)
    cov = cov_x / torch.outer(std, std)  # covariance of the z-scores
    evals, evecs = torch.linalg.eigh(cov)  # ascending
    comps = evecs[:, torch.argsort(evals, descending=True)[:d]]  # [h, d]
    # fix each eigenvector's sign so the basis is deterministic
    pivot = comps.abs().argmax(dim=0)
    signs = torch.sign(comps[pivot, torch.arange(d)])
    comps = comps * torch.where(signs == 0, torch.ones_like(signs), signs)
    return DenseTransform((shift + m).float().numpy(), std.float().numpy(), comps.float().numpy())
