"""DReSD hyper-parameters (``--method-opt dresd.KEY=VALUE``)."""
from __future__ import annotations

from dataclasses import dataclass

from specbench.api import ConfigError

# the corpus whose domain matches each task (used when no datastore path is given)
TASK_CORPUS = {"humaneval": "code_alpaca", "gsm8k": "gsm8k_train", "mt_bench": "sharegpt"}
DEFAULT_CORPUS = "sharegpt"


@dataclass(frozen=True)
class DReSDConfig:
    """Paper defaults: D=10 drafts of L=10 tokens from k=50 neighbours; IVF nprobe 32.

    ``datastore``: a datastore directory (``{corpus}`` is replaced by the task's corpus); when unset,
    a datastore of ``max_tokens`` tokens of ``corpus`` (default: the task's corpus) is built once and
    cached under the specbench cache. ``id``: index the target's own answers instead of the corpus's.
    ``text_format`` of the default OOD build: ``chat`` (prompt through the target's chat template, as the
    benchmark's queries are) or ``qa`` (the reference's ``Question: ...\nAnswer:\n``).
    """

    num_drafts: int = 10  # D
    draft_len: int = 10  # L
    k: int = 50
    nprobe: int = 32
    exact: bool = False
    datastore: str | None = None
    corpus: str | None = None
    id: bool = False
    max_tokens: int = 20000
    text_format: str = "chat"

    def validate(self) -> None:
        if self.text_format not in ("chat", "qa"):
            raise ConfigError(f"dresd: text_format must be chat or qa, got {self.text_format!r}")
        if self.num_drafts < 1 or self.draft_len < 1:
            raise ConfigError("dresd: num_drafts and draft_len must be >= 1")
        if self.k < 1 or self.nprobe < 1:
            raise ConfigError("dresd: k and nprobe must be >= 1")
        if self.max_tokens < 2:
            raise ConfigError("dresd: max_tokens must be >= 2")

    def corpus_for(self, task: str | None) -> str:
        return self.corpus or TASK_CORPUS.get(task or "", DEFAULT_CORPUS)
