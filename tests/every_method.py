"""Options that build every registered method on a tiny random model with a character tokenizer, shared by
``tests/test_repeat_isolation.py`` and the GPU check (``scripts/gpu_check.py``).

The datastore methods index ``CORPUS``, a few repeated sentences registered here as a corpus (at import);
trained drafters get random heads (``checkpoint=random``); sps drafts with the target itself.

>>> sorted(every_method_options("m"))[:3], every_method_options("m")["sps"]
(['crest', 'dresd', 'eagle'], {'draft_model': 'm'})
"""
from __future__ import annotations

from specbench.datastore import corpora
from specbench.plugins.registry import CORPORA, register_corpus

CORPUS = "tiny_repeat_corpus"
CORPUS_TEXTS = ["the cat sat on the mat. the cat sat on the mat.", "x = [1, 2, 3]; y = [1, 2, 3]; z = [1, 2, 3]",
                "one two three four, one two three four, one two three four."] * 4
if CORPUS not in CORPORA:
    register_corpus(CORPUS)(lambda data_dir: iter(CORPUS_TEXTS))
    corpora.PAIR_LOADERS.setdefault(CORPUS, lambda data_dir: (("", t) for t in CORPUS_TEXTS))

QUESTIONS = [{"id": "q1", "turns": ["the cat sat on the mat. the cat", "and the dog?"]},
             {"id": "q2", "turns": ["one two three four, one two"]},
             {"id": "q3", "turns": ["x = [1, 2, 3]; y = [1,"]}]
# options that build every method on the tiny model (datastores over CORPUS, untrained heads); sps drafts
# with the target itself (``every_method_options``); samd@rec: samd whose auxiliary (Token Recycling) learns
OPTIONS: dict[str, dict[str, str]] = {
    "rest": {"corpus": CORPUS}, "crest": {"corpus": CORPUS}, "samd": {"corpus": CORPUS},
    "dresd": {"corpus": CORPUS, "max_tokens": "3000", "k": "8", "nprobe": "4"},
    "redrafter": {"checkpoint": "random"}, "medusa": {"checkpoint": "random"}, "eagle": {"checkpoint": "random"},
    "hydra": {"checkpoint": "random"}, "eagle3": {"checkpoint": "random"}, "dflash": {"checkpoint": "random"},
    "ddtree": {"checkpoint": "random"}, "samd@rec": {"auxiliary": "recycling", "len_threshold": "8"},
    # llama.cpp's sizes (a 12-gram, a 61-token history first) rarely draft on the tiny models' short texts, and
    # size_n >= 2 never drafts inside a run of one token (the latest match leaves one token before the root)
    "ngram-simple": {"size_n": "1", "size_m": "8"}, "ngram-map-k": {"size_n": "1", "size_m": "4"},
    "ngram-map-k4v": {"size_n": "1", "size_m": "4"}, "ngram-mod": {"n_match": "1", "n_max": "4", "n_min": "1"},
}


def every_method_options(model_dir: str) -> dict[str, dict[str, str]]:
    """``OPTIONS`` plus sps drafting with the target at ``model_dir`` and pard with a PARD-layout copy of it
    (``pard_copy``; a copy of the options: callers may edit it)."""
    return {**{k: dict(v) for k, v in OPTIONS.items()}, "sps": {"draft_model": str(model_dir)},
            "pard": {"draft_model": pard_copy(str(model_dir))}}


def pard_copy(model_dir: str) -> str:
    """``<model_dir>-pard``: the model saved at ``model_dir`` with a mask token added (a PARD checkpoint's layout:
    its first parallel row is the target's own token), written once when ``model_dir`` holds a model."""
    from pathlib import Path

    out = Path(f"{model_dir}-pard")
    if (Path(model_dir) / "config.json").is_file() and not (out / "config.json").is_file():
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from specbench_methods.pard.adapt import add_mask_token

        model = AutoModelForCausalLM.from_pretrained(model_dir)
        add_mask_token(model)
        model.save_pretrained(out)
        if (Path(model_dir) / "tokenizer.json").is_file():
            AutoTokenizer.from_pretrained(model_dir).save_pretrained(out)
    return str(out)
