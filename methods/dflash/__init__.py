"""DFlash: a block-diffusion drafter that drafts a whole block of tokens in one forward pass, conditioned on hidden
states of several target layers (method ``dflash``), and DDTree's tree over that block (method ``ddtree``)."""
from . import cost, ddtree, method, train_cli  # noqa: F401  (registration side effects)
