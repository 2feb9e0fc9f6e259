"""The dtypes a target (or a drafter's own copy) can run in, by the names the CLI and configs use.

>>> DTYPES["bfloat16"], DTYPE_NAMES
(torch.bfloat16, ('float32', 'float16', 'bfloat16'))
"""
from __future__ import annotations

import torch

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
DTYPE_NAMES = tuple(DTYPES)
