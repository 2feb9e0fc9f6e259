"""Building a DReSD datastore: corpus text (or the target's own answers) -> shards -> normalised index.

OOD text per corpus pair, truncated to ``max_len`` tokens, in one of two formats (``text_format``):
``chat`` (default): the prompt as a user turn through the target's chat template, ready for the reply,
followed by the response tokens, i.e. the very form of the benchmark's queries; ``qa``: the reference's
``"Question: {prompt}\\nAnswer:\\n" + response``. Either is the response alone when there is no prompt.
ID text is chat-template prompt ids + the target's greedy answer ids (see ``id_answers``).
"""
from __future__ import annotations

import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from specbench.api import ConfigError
from specbench_methods.dresd.datastore.embed import EmbedSettings, ShardStore, embed_batch, embed_corpus, next_token_values
from specbench_methods.dresd.datastore.fingerprint import model_fingerprint, tokenizer_fingerprint
from specbench_methods.dresd.datastore.store import DenseDatastore, build_index
from specbench_methods.dresd.datastore.transform import fit_transform

OOD_FORMATS = {"chat": "chat_template(user: prompt) + response", "qa": "Question: {prompt}\\nAnswer:\\n{response}"}
ID_FORMAT = "chat_template(prompt) + own greedy answer"


@dataclass(frozen=True)
class BuildSettings:
    """Datastore build settings (``--set KEY=VALUE`` on the CLI)."""

    n_components: int = 64
    n_next: int = 20
    max_len: int = 1024
    batch_tokens: int = 4096
    shard_tokens: int = 32768
    nlist: int | None = None  # None: 4*sqrt(N) (Flat when N is small); 0: exact Flat index
    sample_keys: int = 1_000_000  # keys sampled to fit mean/std/PCA
    id_answer_tokens: int = 256
    id_batch: int = 8
    keep_shards: bool = False
    seed: int = 0
    text_format: str = "chat"

    def validate(self) -> None:
        if self.text_format not in OOD_FORMATS:
            raise ConfigError(f"dresd build: text_format must be one of {', '.join(OOD_FORMATS)}, got {self.text_format!r}")
        if self.n_components < 1 or self.n_next < 2 or self.max_len < 2:
            raise ConfigError("dresd build: need n_components >= 1, n_next >= 2, max_len >= 2")
        if self.batch_tokens < 1 or self.shard_tokens < 1 or self.sample_keys < 2:
            raise ConfigError("dresd build: batch_tokens, shard_tokens must be >= 1 and sample_keys >= 2")


def format_pair(prompt: str, response: str) -> str:
    """The ``qa`` entry text of one (prompt, response) pair."""
    return f"Question: {prompt}\nAnswer:\n{response}" if prompt else response


def encode_pair(tokenizer: Any, prompt: str, response: str, text_format: str) -> list[int]:
    """Token ids of one OOD entry in ``text_format`` (``chat`` or ``qa``).

    Example (``chat``, a ChatML template): ``<|im_start|>user\\n{prompt}<|im_end|>\\n<|im_start|>assistant\\n``
    then the response's own ids, exactly what a benchmark context holds after the target wrote ``response``.
    """
    if text_format == "qa" or not prompt:
        return list(tokenizer(format_pair(prompt, response))["input_ids"])
    from specbench.api import encode_prompt

    head = encode_prompt(tokenizer, [{"role": "user", "content": prompt}])
    return head + list(tokenizer(response, add_special_tokens=False)["input_ids"])


def interleave(iterables: Sequence[Iterable[Any]]) -> Iterator[Any]:
    """Round-robin over several iterables (so a token budget samples every corpus)."""
    its = [iter(x) for x in iterables]
    while its:
        alive = []
        for it in its:
            item = next(it, None)
            if item is not None:
                yield item
                alive.append(it)
        its = alive


def finalize(hidden: np.ndarray, values: np.ndarray, header: dict[str, Any], settings: BuildSettings) -> DenseDatastore:
    """Fit the normalisation on a key sample, transform every key, and index them."""
    rng = np.random.default_rng(settings.seed)
    n = hidden.shape[0]
    rows = None if n <= settings.sample_keys else np.sort(rng.choice(n, settings.sample_keys, replace=False))
    transform = fit_transform(hidden, settings.n_components, rows)  # streamed: the sample is never copied
    keys = np.concatenate([transform.apply(hidden[i : i + 65536]) for i in range(0, n, 65536)])  # [N, d]
    index = build_index(keys, settings.nlist)
    header = dict(header)
    header["index"] = {"type": type(index).__name__, "nlist": int(getattr(index, "nlist", 0))}
    return DenseDatastore(keys, values, transform, header, index)


def datastore_from_sequences(model: Any, seqs: list[list[int]], eos_id: int, settings: BuildSettings = BuildSettings(),
                             tokenizer: Any | None = None, **header: Any) -> DenseDatastore:
    """An in-memory datastore from token sequences (small builds and tests; no shards)."""
    hidden = np.concatenate([embed_batch(model, [s[: settings.max_len]])[0] for s in seqs])
    values = np.concatenate([next_token_values(s[: settings.max_len], settings.n_next, eos_id) for s in seqs])
    return finalize(hidden, values, _header(model, tokenizer, eos_id, settings, **header), settings)


def _header(model: Any, tokenizer: Any | None, eos_id: int, settings: BuildSettings, **extra: Any) -> dict[str, Any]:
    return {
        "vocab_size": int(model.get_output_embeddings().weight.shape[0]),
        "eos_id": int(eos_id),
        "model_fingerprint": model_fingerprint(model),
        "tokenizer_fingerprint": tokenizer_fingerprint(tokenizer),
        "settings": asdict(settings),
        **extra,
    }


def eos_of(tokenizer: Any) -> int:
    eos = tokenizer.eos_token_id
    if eos is None:
        raise ConfigError("the tokenizer has no EOS token (needed to pad datastore values)")
    return int(eos)


def build_datastore(
    model: Any,
    tokenizer: Any,
    corpora: Sequence[str],
    out: str | Path,
    max_tokens: int | None,
    in_distribution: bool = False,
    data_dir: Path | None = None,
    settings: BuildSettings = BuildSettings(),
    model_id: str = "",
    stop_ids: set[int] | None = None,
    progress: bool = True,
) -> DenseDatastore:
    """Build (or resume, or just load if complete) the datastore in ``out``."""
    from specbench.api import iter_pairs

    out = Path(out)
    if (out / "header.json").is_file():
        print(f"[specbench] {out} already holds a finished datastore; delete it to rebuild", file=sys.stderr)
        return DenseDatastore.load(out)
    t0 = time.time()
    eos_id = eos_of(tokenizer)
    try:
        pairs = [iter_pairs(name, data_dir) for name in corpora]
    except KeyError as e:
        raise ConfigError(str(e.args[0])) from None
    if in_distribution:
        from specbench_methods.dresd.datastore.id_answers import generate_answers, read_answers

        answers = out / "id_answers.jsonl"
        prompts = interleave([(p for p, _ in it if p) for it in pairs])
        generate_answers(model, tokenizer, prompts, answers, stop_ids or {eos_id}, max_tokens,
                         settings.id_answer_tokens, batch_size=settings.id_batch, progress=progress)
        items: Iterable[Any] = read_answers(answers)
        encode = list
    else:
        items = interleave(pairs)
        encode = lambda pair: encode_pair(tokenizer, pair[0], pair[1], settings.text_format)  # noqa: E731
    embed = EmbedSettings(settings.n_next, settings.max_len, settings.batch_tokens, settings.shard_tokens)
    shard_settings = {"corpora": list(corpora), "id": in_distribution, "n_next": settings.n_next,
                      **({} if in_distribution or settings.text_format == "qa" else {"text_format": settings.text_format}),
                      "max_len": settings.max_len, "model_fingerprint": model_fingerprint(model)}
    store = ShardStore(out, shard_settings)
    n = embed_corpus(model, items, encode, store, eos_id, max_tokens, embed, progress)
    if progress:
        print(f"[specbench] fitting normalisation + index on {n} entries", file=sys.stderr)
    hidden, values = store.load_all()
    header = _header(model, tokenizer, eos_id, settings, model_id=model_id, corpora=list(corpora), id=in_distribution,
                     text_format=ID_FORMAT if in_distribution else OOD_FORMATS[settings.text_format], max_tokens=max_tokens,
                     items_used=store.items_done)
    ds = finalize(hidden, values, header, settings)
    ds.header["build_seconds"] = round(time.time() - t0, 1)
    ds.save(out)
    if not settings.keep_shards:
        shutil.rmtree(store.dir, ignore_errors=True)
    return DenseDatastore.load(out, verify=False)
