"""The tiny world ``check-method`` runs a method in: random 2-layer models of four families over a 64-symbol
character tokenizer, repetitive prompts, and an echo corpus a datastore method can index (no download, seconds).

Each family's model is built from a seed, so a check passes or fails the same way on every machine. The prompts
repeat themselves (copying drafters find matches) and the last one is an *echo*: a prompt, the model's own greedy
answer, the prompt again, so drafts copied from the context or retrieved from the echo corpus are accepted.

>>> tok = char_tokenizer()
>>> ids = tok("ab a", add_special_tokens=False)["input_ids"]; ids, tok.decode(ids)
([4, 21, 1, 4], 'ab a')
>>> tiny_model("gpt2").config.vocab_size
64
"""
from __future__ import annotations

from typing import Any, Iterator

import torch

from specbench.datastore import corpora
from specbench.plugins.registry import CORPORA, register_corpus

FAMILIES = ("llama", "qwen2", "gpt2", "gpt-neox")
VOCAB = 64
CHARS = " etaoinshrdlcumwfgypbvkjxqz0123456789.,:;!?'\"()[]{}=+-*/<>_#%&\n"
ECHO_CORPUS = "check-method-echo"  # the corpus a datastore method is built on: ``corpus=check-method-echo``
PROMPT_TEXTS = (
    "the cat sat on the mat. the cat sat on the mat. the cat",
    "x = [1, 2, 3]; y = [1, 2, 3]; z = [1, 2,",
    "def add(a, b):\n    return a + b\n\ndef add(a, b):\n",
)
_ECHO_TEXTS: list[str] = []  # the echo corpus of the family whose drafters are being built (``TinyWorld.use``)



def _echo_texts(data_dir: object = None) -> Iterator[str]:
    """check-method's tiny echo texts (each prompt with the tiny target's greedy answer), for datastore methods"""
    return iter(list(_ECHO_TEXTS))


if ECHO_CORPUS not in CORPORA._entries:  # (registered once, without running the plugin discovery at import)
    register_corpus(ECHO_CORPUS)(_echo_texts)
    corpora.PAIR_LOADERS.setdefault(ECHO_CORPUS, lambda data_dir: (("", t) for t in _echo_texts()))


def char_tokenizer() -> Any:
    """A 64-symbol character tokenizer (lower-cased; unknown characters -> ``<unk>`` = 0), no download."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, **{c: i + 1 for i, c in enumerate(CHARS)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", eos_token="#")


def tiny_model(family: str, seed: int = 0) -> torch.nn.Module:
    """A randomly initialised 2-layer causal LM of ``family`` (one of ``FAMILIES``), fp32, in eval mode."""
    from transformers import AutoConfig, AutoModelForCausalLM

    none = dict(bos_token_id=None, eos_token_id=None, pad_token_id=None)
    if family == "gpt2":
        fields = dict(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=1024, **none)
    else:
        fields = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, max_position_embeddings=1024, **none)
        if family != "gpt-neox":
            fields["num_key_value_heads"] = 2
    torch.manual_seed(seed)
    return AutoModelForCausalLM.from_config(AutoConfig.for_model(family.replace("-", "_"), **fields)).eval()


def use_echo_corpus(texts: list[str]) -> None:
    """What ``ECHO_CORPUS`` holds from now on (a family's echo texts; each family builds in its own cache)."""
    _ECHO_TEXTS[:] = texts
