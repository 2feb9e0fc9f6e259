"""The one rule for where a trained default lives (``training/checkpoints.keyed_dir``) and the one ranking of a draft
vocabulary (``training/draft_vocab.rank_by_count``): pinned to the folder names and vocabularies each method had
before they shared them, so a cached default stays found and a retrained draft scores the same tokens."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from specbench.training.checkpoints import default_dir, trained_default_dir
from specbench.training.distill_data import DEFAULT_CORPORA
from specbench.training.draft_vocab import rank_by_count
from specbench.training.windows import choose_vocab


class _Target(torch.nn.Module):
    """What the default-dir keys read of a target: its parameters' dtype and its input embedding's shape."""

    def __init__(self, dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(100, 8, dtype=dtype)

    def get_input_embeddings(self) -> torch.nn.Embedding:
        return self.emb


def _env(dtype: torch.dtype = torch.float32) -> SimpleNamespace:
    return SimpleNamespace(model=_Target(dtype), model_id="HuggingFaceTB/SmolLM2-135M-Instruct", cache_dir="/c")


# (method, recipe) -> the folder its default had before the rule was shared (computed with the code of 005028a)
PINNED = {
    ("eagle", "quick"): "/c/eagle/default-8b8d6386a0fb",
    ("eagle", "full"): "/c/eagle/full-9c4a0d998c9f",
    ("eagle", "hass"): "/c/eagle/hass-0f3d44e6de3c",  # (pinned when the recipe came, issue 48)
    ("medusa", "quick"): "/c/medusa/default-606603a627e5",
    ("hydra", "quick"): "/c/hydra/default-ccbe070ae326",
    ("eagle3", "quick"): "/c/eagle3/default-01c7323fcbd3",
    ("sps", "quick"): "/c/sps/distilled-1f0329bb51eb",
    ("sps", "full"): "/c/sps/distilled-full-cbd90f1503fd",
    ("redrafter", "quick"): "/c/redrafter/default-a6dc727fefad",
    ("redrafter", "full"): "/c/redrafter/full-fb86953f39a4",
    ("redrafter-bf16", "quick"): "/c/redrafter/default-869f4291a1e0",
}


def _folder(method: str, recipe: str) -> str:
    env = _env(torch.bfloat16 if method.endswith("-bf16") else torch.float32)
    method = method.removesuffix("-bf16")
    if method == "sps":
        from specbench.training.draft_distill import DISTILL_RECIPES as RECIPES
        from specbench_methods.sps.method import distilled_dir
        return distilled_dir(env, RECIPES[recipe], recipe).as_posix()
    if method == "redrafter":
        from specbench_methods.redrafter import ReDrafterConfig, default_checkpoint_dir
        return default_checkpoint_dir(env, ReDrafterConfig(recipe=recipe)).as_posix()
    if method == "hydra":
        from specbench_methods.hydra.train import recipe_for
        return default_dir(env, "hydra", recipe_for("prefix-mlp", recipe), recipe).as_posix()
    recipes = {"eagle": "specbench_methods.eagle.train", "medusa": "specbench_methods.medusa.train", "eagle3": "specbench_methods.eagle3.train"}
    module = __import__(recipes[method], fromlist=["RECIPES"])
    return default_dir(env, method, module.RECIPES[recipe], recipe).as_posix()


@pytest.mark.parametrize("method,recipe", sorted(PINNED))
def test_default_folders_keep_their_names(method: str, recipe: str) -> None:
    assert _folder(method, recipe) == PINNED[method, recipe]


def test_specbench_train_writes_the_default_only_for_the_default_recipe_and_corpora() -> None:
    from specbench_methods.eagle.train import RECIPES

    pick = trained_default_dir("eagle", lambda name, cfg: RECIPES.get(name))  # (as ``methods/eagle/train_cli.py``)
    env, quick = _env(), RECIPES["quick"]
    assert pick(env, "quick", quick, DEFAULT_CORPORA).as_posix() == PINNED["eagle", "quick"]
    assert pick(env, "quick", RECIPES["full"], DEFAULT_CORPORA) is None  # flags changed the recipe
    assert pick(env, "quick", quick, ("sharegpt",)) is None


def test_rank_by_count_keeps_then_counts_then_ids() -> None:
    counts = torch.tensor([2, 0, 7, 2, 5, 0])
    assert rank_by_count(counts, 6).tolist() == [2, 4, 0, 3, 1, 5]
    assert rank_by_count(counts, 3, keep={5, 9}).tolist() == [5, 2, 4]  # 9 is outside the vocabulary
    assert rank_by_count(counts, 10, seen_only=True).tolist() == [2, 4, 0, 3]
    assert rank_by_count(counts, 0).tolist() == []


def test_windows_choose_vocab_pinned() -> None:
    # labels are argmax[train_starts + 1]: ids 3 x3, 7 x2, 1 x1 (no tie at the cut), stop token 9 kept
    argmax = torch.tensor([0, 3, 0, 3, 0, 3, 0, 7, 0, 7, 0, 1])
    data = SimpleNamespace(argmax=argmax, train_starts=torch.arange(0, 12, 2))
    out = choose_vocab(data, 3, {9}, 10)
    assert out.dtype == np.int64 and out.tolist() == [3, 7, 9]
    # new with the shared ranking: 0 ties the other unseen ids and wins as the smallest (``topk`` left it open)
    assert choose_vocab(data, 4, set(), 10).tolist() == [0, 1, 3, 7]
