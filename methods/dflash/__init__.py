"""DFlash: a block-diffusion drafter that drafts a whole block of tokens in one forward pass, conditioned on hidden
states of several target layers (method ``dflash``)."""
from . import cost, method, train_cli  # noqa: F401  (registration side effects)
