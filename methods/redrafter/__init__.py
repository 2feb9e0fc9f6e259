"""``redrafter``: Recurrent Drafter (Apple, 2024): an RNN draft head on the target's last hidden state,
beam search, and dynamic tree attention over the deduplicated beams. See ``methods/redrafter/README.md``.
"""
from specbench_methods.redrafter import cost, method, train_cli  # noqa: F401  (registration side effects)
from specbench_methods.redrafter.config import HeadConfig, ReDrafterConfig
from specbench_methods.redrafter.drafter import ReDrafter
from specbench_methods.redrafter.method import build_redrafter, default_checkpoint_dir, default_train_config

__all__ = ["HeadConfig", "ReDrafterConfig", "ReDrafter", "build_redrafter", "default_checkpoint_dir", "default_train_config"]
