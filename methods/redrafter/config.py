"""ReDrafter hyper-parameters: the head's shape (saved with each checkpoint) and the method's options."""
from __future__ import annotations

from dataclasses import dataclass

from specbench.config import ConfigError


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


@dataclass(frozen=True)
class ReDrafterConfig:
    """Method options (``--method-opt redrafter.KEY=VALUE``).

    ``beam_length`` counts the root g0 (paper convention), so a beam proposes ``beam_length - 1``
    draft tokens. ``checkpoint``: a directory written by ``specbench train redrafter``; ``None``
    trains (once) and caches a default head; ``"random"`` uses an untrained head (tests, debugging).
    """

    checkpoint: str | None = None
    beam_width: int = 3
    beam_length: int = 4
    default_tokens: int = 20000  # size of the auto-trained default head's training set
    default_corpus: str = "sharegpt,code_alpaca,gsm8k_train"

    def validate(self) -> None:
        if self.beam_width < 1:
            raise ConfigError("redrafter: beam_width must be >= 1")
        if self.beam_length < 2:
            raise ConfigError("redrafter: beam_length must be >= 2 (it includes the root g0)")
        if self.default_tokens < 100:
            raise ConfigError("redrafter: default_tokens must be >= 100")
