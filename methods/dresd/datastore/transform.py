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


def fit_transform(sample: np.ndarray | torch.Tensor, n_components: int = 64) -> DenseTransform:
    """Fit mean/std and a PCA basis on ``sample`` [n, h] (computed in float64 with torch ``eigh``)."""
    x = torch.as_tensor(np.asarray(sample), dtype=torch.float64)  # [n, h]
    n, h = x.shape
    if n < 2:
        raise ValueError("need at least 2 keys to fit the normalisation")
    d = min(n_components, h)
    mean = x.mean(dim=0)
    std = x.std(dim=0).clamp_min(STD_EPS)
    z = (x - mean) / std  # [n, h]
    cov = z.T @ z / (n - 1)  # [h, h]
    evals, evecs = torch.linalg.eigh(cov)  # ascending
    comps = evecs[:, torch.argsort(evals, descending=True)[:d]]  # [h, d]
    # fix each eigenvector's sign so the basis is deterministic
    pivot = comps.abs().argmax(dim=0)
    signs = torch.sign(comps[pivot, torch.arange(d)])
    comps = comps * torch.where(signs == 0, torch.ones_like(signs), signs)
    return DenseTransform(mean.float().numpy(), std.float().numpy(), comps.float().numpy())
