"""Tree verification stays exact on models whose layers see only a window or a chunk of the context.

transformers uses a prepared 4D mask as it is on every layer, so before ``engine/attention_layout.py`` the engine's
tree mask let a sliding-window layer see past its window: every tree method gave MISMATCH once the context passed
it (on a real model, window 512: recycling, lookahead and rest on a 689-token CNN/DM prompt), and the reference
backend's sliding cache layers (which keep only the window) failed on the first tree. Checked here, on the tiny
random models of ``windowed_models.py`` (Gemma-3-style interleaved, Mistral-style sliding, Llama-4-style chunked;
window or chunk 16):

- the layout is read as transformers' own cache reads it, and the window and chunk rules are the library's to the
  position (the off-by-one of ``q - k < w``);
- a layout no mask can make exact is refused in one line, naming it;
- the engine's AR output is plain decoding's (a cache-less forward per token), on ``fast`` and ``reference``;
- random trees (every node a position a layer may or may not see) are exact on both backends, alone and batched;
- every registered method is exact at prompts below, at and far above the window, alone and batched (B = 2), and
  really verifies drafts past the window.

A new method is picked up automatically (options to build it on a tiny model: ``tests/every_method.py``).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from every_method import every_method_options
from specbench.catalog import BASELINE
from specbench.config.method_labels import label_options
from specbench.datastore import corpora
from specbench.engine.attention_layout import (CHUNKED, FULL, SLIDING, AttentionLayout, LayoutRefused,
                                               attention_layout)
from specbench.engine.batch_loop import BatchDecoder, Request
from specbench.engine.generation import Generation
from specbench.engine.loop import Engine
from specbench.errors import ConfigError
from specbench.models.loading import load_model
from specbench.plugins.registry import CORPORA, METHODS, register_corpus
from specbench.run.guards import check_attention_layout
from specbench.run.method_env import MethodEnv
from specbench.run.methods_factory import build_drafter
from test_engine_exact import RandomDrafter
from windowed_models import FAMILIES, WINDOW, make_windowed, plain_greedy, runnable, windowed_dir

PROMPT_LENGTHS = (8, WINDOW, 3 * WINDOW)  # below, at and far above the window
MAX_NEW = 16
SEED_TEXT = "the cat sat on the mat. one two three four, one two three four. x = [1, 2, 3]; y = [1, 2, 3]; " * 2
ECHO_CORPUS = "tiny_window_echo"
_ECHO: list[str] = []  # what the datastore methods of the family being built index
if ECHO_CORPUS not in CORPORA:
    register_corpus(ECHO_CORPUS)(lambda data_dir: iter(list(_ECHO)))
    corpora.PAIR_LOADERS.setdefault(ECHO_CORPUS, lambda data_dir: (("", t) for t in list(_ECHO)))
LABELS = [m for m in METHODS.names() if m != BASELINE]


# --- the layout and its rules --------------------------------------------------------------------------------------

@pytest.mark.parametrize("family", FAMILIES)
def test_layout_is_read_as_the_library_cache_reads_it(family: str) -> None:
    """A layer is sliding or chunked for the engine exactly where transformers' cache gives it a window."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicSlidingWindowLayer

    model = make_windowed(family)
    layout = attention_layout(model.config)
    library = [isinstance(layer, DynamicSlidingWindowLayer) for layer in DynamicCache(config=model.config).layers]
    assert [k != FULL for k in layout.kinds] == library and any(library) and layout.windowed
    assert (layout.window or layout.chunk) == WINDOW
    assert layout.name == {"gemma3": "sliding-window (16) interleaved with full attention",
                           "mistral": "sliding-window (16)", "llama4": "chunked (16) interleaved with full attention"}[family]


def test_window_and_chunk_rules_are_the_library_rules() -> None:
    """Every (query, key) position pair below 3 windows: ours equals ``masking_utils``' own mask functions."""
    from transformers.masking_utils import chunked_causal_mask_function, sliding_window_causal_mask_function

    n = 3 * WINDOW
    q, k = torch.arange(n)[None], torch.arange(n)[None]
    causal = torch.ones(1, n, n, dtype=torch.bool).tril()
    layout = AttentionLayout((SLIDING, CHUNKED), window=WINDOW, chunk=WINDOW)
    rules = {SLIDING: sliding_window_causal_mask_function(WINDOW),
             CHUNKED: chunked_causal_mask_function(WINDOW, torch.zeros(1, dtype=torch.long))}
    for kind, rule in rules.items():
        want = rule(torch.tensor(0), torch.tensor(0), torch.arange(n)[:, None], torch.arange(n)[None, :])
        assert torch.equal(layout.allowed(kind, causal, q, k)[0], want), kind
    sliding = layout.allowed(SLIDING, causal, q, k)[0]
    assert sliding[WINDOW, 1] and not sliding[WINDOW, 0]  # a row sees exactly WINDOW positions, itself included


def test_masks_go_one_per_kind_only_where_kinds_mix() -> None:
    allowed = torch.ones(1, 2, 5, dtype=torch.bool)
    q, k = torch.tensor([[3, 4]]), torch.arange(5)[None]
    one = AttentionLayout((SLIDING, SLIDING), window=2).masks(allowed, q, k, torch.float32)
    both = AttentionLayout((SLIDING, FULL), window=2).masks(allowed, q, k, torch.float32)
    assert isinstance(one, torch.Tensor) and one.shape == (1, 1, 2, 5)
    assert set(both) == {SLIDING, FULL} and torch.equal(both[SLIDING], one) and not both[FULL].any()


def test_layouts_no_mask_makes_exact_are_refused_in_one_line() -> None:
    from transformers import GPTNeoConfig, LlamaConfig, Qwen2Config

    refused = {
        "GPT-Neo style": GPTNeoConfig(num_layers=2, attention_types=[[["global", "local"], 1]], window_size=8),
        "linear_attention layers (1 of 2)": Qwen2Config(num_hidden_layers=2,
                                                        layer_types=["full_attention", "linear_attention"]),
        "no window": type("C", (), {"num_hidden_layers": 2, "layer_types": [SLIDING, FULL], "sliding_window": None})(),
    }
    for words, cfg in refused.items():
        with pytest.raises(LayoutRefused, match=re.escape(words)) as e:
            attention_layout(cfg)
        assert "\n" not in str(e.value) and isinstance(e.value, ConfigError)  # one line, exit 2 from the CLI
    with pytest.raises(ConfigError, match="local attention"):
        check_attention_layout(type("M", (), {"config": refused["GPT-Neo style"]})())
    check_attention_layout(type("M", (), {"config": LlamaConfig(num_hidden_layers=2)})())  # full attention passes
    assert not attention_layout(LlamaConfig(num_hidden_layers=2)).windowed


# --- the engine on the tiny windowed families ----------------------------------------------------------------------

class Family:
    """One family's tiny model saved with a character tokenizer, its engines, prompts at ``PROMPT_LENGTHS`` and
    their AR outputs, and drafters built as a run builds them (two per label: a batch of two needs one per slot)."""

    def __init__(self, family: str, root: Path) -> None:
        self.dir = windowed_dir(root / f"model-{family}", family, seed=5)
        self.loaded = load_model(str(self.dir), "float32", "cpu")
        self.loaded.model = runnable(self.loaded.model)
        self.model = self.loaded.model
        self.engine = Engine(self.model, set())  # no stop: every generation runs to MAX_NEW
        seed = self.loaded.tokenizer(SEED_TEXT)["input_ids"]
        self.prompts = [seed[:n] for n in PROMPT_LENGTHS]
        self.ar = [self.engine.generate(p, None, MAX_NEW).output_ids for p in self.prompts]
        tok = self.loaded.tokenizer
        self.echo = [tok.decode(p[1:] + out) for p, out in zip(self.prompts, self.ar)]
        self.options = {m: {**o, "corpus": ECHO_CORPUS} if "corpus" in o else o
                        for m, o in every_method_options(str(self.dir)).items()}
        self.cache = root / f"cache-{family}"

    def drafters(self, label: str) -> list:
        env = MethodEnv.for_task(self.loaded, None, self.cache, "synthetic")
        _ECHO[:] = self.echo
        return [build_drafter(label, label_options(label, self.options), env)[0] for _ in range(2)]

    def alone(self, drafter, engine: Engine | None = None) -> list[Generation]:
        return [(engine or self.engine).generate(p, drafter, MAX_NEW) for p in self.prompts]

    def batched(self, drafters: list) -> list[Generation]:
        decoder = BatchDecoder(self.engine, MAX_NEW)
        return decoder.generate([Request(p) for p in self.prompts], drafters, 2, True)


@pytest.fixture(scope="module")
def families(tmp_path_factory: pytest.TempPathFactory):
    """family -> ``Family``, built on first use."""
    root = tmp_path_factory.mktemp("windowed")
    built: dict[str, Family] = {}

    def get(family: str) -> Family:
        if family not in built:
            built[family] = Family(family, root)
        return built[family]

    return get


def verified_past_window(gens: list[Generation], prompt_lengths: tuple[int, ...] = PROMPT_LENGTHS) -> int:
    """Draft tokens verified at contexts longer than the window (where an unwindowed mask goes wrong)."""
    total = 0
    for g, plen in zip(gens, prompt_lengths):
        context = plen
        for size, emitted in zip(g.draft_sizes, g.accept_lengths):
            total += size if context > WINDOW else 0
            context += emitted
    return total


@pytest.mark.parametrize("family", FAMILIES)
def test_ar_is_plain_decoding_past_the_window(families, family: str) -> None:
    """The engine's AR (the library's own masks on ``fast``'s cache and on the reference's full-length one) is
    decoding with no cache at all, at every prompt length; a batch of two plain decodes (the engine's masks) too."""
    fam = families(family)
    truth = [plain_greedy(fam.model, p, MAX_NEW) for p in fam.prompts]
    assert fam.ar == truth
    assert [g.output_ids for g in fam.alone(None, Engine(fam.model, set(), "reference"))] == truth
    assert [g.output_ids for g in fam.batched([None, None])] == truth


@pytest.mark.parametrize("backend", ["fast", "reference"])
@pytest.mark.parametrize("family", FAMILIES)
def test_random_trees_are_exact(families, family: str, backend: str) -> None:
    """Random trees of up to 12 nodes (siblings, deep branches, nodes at positions a window cuts): alone on both
    backends, and batched."""
    fam = families(family)
    engine = Engine(fam.model, set(), backend)
    vocab = fam.model.config.vocab_size
    gens = [engine.generate(p, RandomDrafter(i, vocab), MAX_NEW) for i, p in enumerate(fam.prompts)]
    assert [g.output_ids for g in gens] == fam.ar, f"{family} on {backend}"
    assert verified_past_window(gens)
    batched = BatchDecoder(engine, MAX_NEW).generate([Request(p) for p in fam.prompts],
                                                     [RandomDrafter(7, vocab), RandomDrafter(8, vocab)], 2, True)
    assert [g.output_ids for g in batched] == fam.ar, f"{family} on {backend}, batched"


CELLS = [(f, m) for f in FAMILIES for m in LABELS]
# drafters with no option to make them draft on a tiny model's answer: ngram-cache counts the prompt's n-grams and
# those inside each step's accepted tokens only (llama.cpp's chunks), so an answer unlike its prompt drafts nothing
PROMPT_NGRAMS_ONLY = {"ngram-cache"}


@pytest.mark.parametrize("family,label", CELLS)
def test_every_method_is_exact_past_the_window(families, family: str, label: str) -> None:
    fam = families(family)
    first, second = fam.drafters(label)
    gens = fam.alone(first)
    assert [g.output_ids for g in gens] == fam.ar, f"{label} on {family} alone"
    batched = fam.batched([first, second])
    assert [g.output_ids for g in batched] == fam.ar, f"{label} on {family} at width 2"
    if label in PROMPT_NGRAMS_ONLY and not any(sum(g.draft_sizes) for g in gens + batched):
        pytest.skip(f"{label} drafted nothing on {family}: its answer's tokens are not in the prompt, and it learns "
                    "no n-gram from a step that accepted nothing (llama.cpp's)")
    assert verified_past_window(gens) + verified_past_window(batched), \
        f"{label} on {family}: no draft verified past the window"


def test_reference_backend_keeps_every_position(families) -> None:
    """The reference backend's cache keeps the whole context on a sliding layer (transformers' own sliding layer
    keeps its last ``WINDOW - 1`` positions, which the engine's column trims cannot address)."""
    fam = families("gemma3")
    engine = Engine(fam.model, set(), "reference")
    cache = engine.backend.new_cache(fam.model, 64)
    prompt = fam.prompts[-1]
    engine.target.run(torch.tensor([prompt]), cache, 0)
    assert [layer.keys.shape[-2] for layer in cache.layers] == [len(prompt)] * fam.model.config.num_hidden_layers
