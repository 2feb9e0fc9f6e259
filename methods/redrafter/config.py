"""ReDrafter hyper-parameters: the head's shape (saved with each checkpoint) and the method's options."""
from __future__ import annotations

from dataclasses import dataclass

from specbench.api import DTYPES, ConfigError, check_recipe


@dataclass(frozen=True)
class HeadConfig:
    """Shape of the recurrent draft head; written into the checkpoint's ``config.json``.

    ``proj_dim = 0`` keeps the reference layout (ResNet blocks on the 2h-wide features); the default
    for CPU projects ``[context; s_i]`` (2h) down to ``proj_dim`` = h first.
    """

    hidden_size: int  # h: the target's hidden size (context width and recurrent state width)
    embed_dim: int  # width of the target's input embedding e(.)
    vocab_size: int  # V
    proj_dim: int = 0  # 0 = no projection (features stay 2h wide)
    num_blocks: int = 1  # R ResNet blocks x + SiLU(Linear(x))

    def validate(self) -> None:
        if min(self.hidden_size, self.embed_dim, self.vocab_size) < 1:
            raise ConfigError("redrafter head: sizes must be positive")
        if self.proj_dim < 0 or self.num_blocks < 0:
            raise ConfigError("redrafter head: proj_dim and num_blocks must be >= 0")

    @property
    def feature_dim(self) -> int:
        return self.proj_dim or 2 * self.hidden_size


# Training recipes of the auto-trained default head: name -> (corpus positions read, epochs).
# "quick" fits a few minutes on 2 CPU cores; "paper" is the reference's 2 epochs on a larger slice; "full"
# 15x quick's positions, its epochs sized to about an hour (``train.TRAIN_S_PER_POSITION``).
RECIPES: dict[str, tuple[int, int]] = {"quick": (20000, 1), "paper": (100000, 2), "full": (300000, 2)}


@dataclass(frozen=True)
class ReDrafterConfig:
    """Method options (``--method-opt redrafter.KEY=VALUE`` or ``method_options: {redrafter: {...}}`` in YAML).

    ``beam_length`` counts the root g0 (paper convention), so a beam proposes ``beam_length - 1``
    draft tokens. ``checkpoint``: a directory written by ``specbench train redrafter``; ``None``
    trains (once) and caches a default head; ``"random"`` uses an untrained head (tests, debugging).

    The head's shape (``proj``, ``num_blocks``) and training (``n_predict``, ``recipe``,
    ``default_tokens``, ``default_corpus``) apply to the default and random heads; a given
    ``checkpoint`` brings its own. ``top_k``, ``draft_vocab`` and ``dtype`` apply to every head (they shape
the drafting copy, never the checkpoint; ``draft_vocab=0 dtype=float32`` scores exactly as before). The reference architecture:
    ``proj=false num_blocks=2 n_predict=5 top_k=50`` (and ``recipe=paper`` for its training).

    >>> ReDrafterConfig(recipe="paper").train_budget()
    (100000, 2)
    """

    checkpoint: str | None = None
    beam_width: int = 3
    beam_length: int = 4
    top_k: int = 0  # beam scoring keeps each beam's k best logits before the softmax; 0 = off (reference: 50)
    proj: bool = True  # project [context; state] 2h -> h; False keeps the 2h width (reference)
    num_blocks: int = 1  # ResNet blocks (reference: 2)
    n_predict: int = 3  # positions the default head is trained to predict (reference: 5)
    recipe: str = "quick"  # default head's training budget, a key of RECIPES
    default_tokens: int | None = None  # overrides the recipe's number of collected positions
    default_corpus: str = "sharegpt,code_alpaca,gsm8k_train"
    draft_vocab: int = 8192  # beam search scores this many most frequent target ids (vocab.py); 0 = all V
    dtype: str = "auto"  # the drafting copy's weights: auto = bfloat16 on a oneDNN CPU, else the target's

    def validate(self) -> None:
        if self.beam_width < 1:
            raise ConfigError("redrafter: beam_width must be >= 1")
        if self.beam_length < 2:
            raise ConfigError("redrafter: beam_length must be >= 2 (it includes the root g0)")
        if self.default_tokens is not None and self.default_tokens < 100:
            raise ConfigError("redrafter: default_tokens must be >= 100")
        if self.top_k < 0 or self.num_blocks < 0 or self.n_predict < 1:
            raise ConfigError("redrafter: need top_k >= 0, num_blocks >= 0, n_predict >= 1")
        if self.draft_vocab < 0 or 0 < self.draft_vocab < self.beam_width:
            raise ConfigError(f"redrafter: draft_vocab must be 0 (whole vocabulary) or >= beam_width, got {self.draft_vocab}")
        if self.dtype != "auto" and self.dtype not in DTYPES:
            raise ConfigError(f"redrafter: dtype must be auto or one of {', '.join(DTYPES)}, got {self.dtype!r}")
        check_recipe("redrafter", self.recipe, RECIPES)

    def train_budget(self) -> tuple[int, int]:
        """(positions collected, epochs) for the default head: the recipe's, tokens overridable."""
        tokens, epochs = RECIPES[self.recipe]
        return (self.default_tokens or tokens), epochs
