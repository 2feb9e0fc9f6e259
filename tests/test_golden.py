"""Lossless regression gates: golden AR outputs reproduced by EVERY registered method, and ``specbench check``.

The golden test runs on a 2-layer random Llama with a character-level tokenizer built in memory (vocab
64), so methods that need a datastore build a tiny one from the shared corpora under a temp cache. A
new method is picked up automatically; if it needs options to build on a tiny model, add them to
``TINY_OPTIONS`` (or, only if impossible, a reason to ``SKIPS``).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from conftest import make_tiny_model
from specbench.datastore import corpora
from specbench.cli import main
from specbench.results.check import check_run
from specbench.paths import default_data_dir
from specbench.engine.loop import Engine
from specbench.run.golden import Prompt, load_golden, make_golden, record_outputs, save_golden, verify_golden
from specbench.run.method_env import MethodEnv
from specbench.plugins.registry import CORPORA, METHODS, register_corpus
from every_method import pard_copy
from test_stats import write_fake_run

CHARS = " etaoinshrdlcumwfgypbvkjxqz0123456789.,:;!?'\"()[]{}=+-*/<>_#%&\n"
MAX_NEW = 40

# options that let a method build against the tiny model (small datastores, untrained heads)
# datastores index ECHO_CORPUS: the tiny model's own continuations, so retrieval drafts get accepted
ECHO_CORPUS = "tiny_golden_echo"
TINY_OPTIONS: dict[str, dict[str, str]] = {
    "rest": {"corpus": ECHO_CORPUS},
    "crest": {"corpus": ECHO_CORPUS},
    "dresd": {"corpus": ECHO_CORPUS, "max_tokens": "3000", "k": "8", "nprobe": "4"},
    "redrafter": {"checkpoint": "random"},
    "medusa": {"checkpoint": "random"},
    "eagle": {"checkpoint": "random"},
    "hydra": {"checkpoint": "random"},
    "samd": {"corpus": ECHO_CORPUS},
    "eagle3": {"checkpoint": "random"},
    "dflash": {"checkpoint": "random"},
    "ddtree": {"checkpoint": "random"},
}
SKIPS: dict[str, str] = {}

_ECHO_TEXTS: list[str] = []  # filled by the ``tiny`` fixture
if ECHO_CORPUS not in CORPORA:
    register_corpus(ECHO_CORPUS)(lambda data_dir: iter(list(_ECHO_TEXTS)))
    # dense datastores read (prompt, response) pairs
    corpora.PAIR_LOADERS.setdefault(ECHO_CORPUS, lambda data_dir: (("", t) for t in list(_ECHO_TEXTS)))

PROMPT_TEXTS = [
    "def add(a, b):\n    return a + b\n\ndef add(a, b):\n",
    "natalia sold 48 clips in april and half as many clips in may. how many clips did she sell?",
    "the cat sat on the mat. the cat sat on the mat. the cat",
    "x = [1, 2, 3]; y = [1, 2, 3]; z = [1, 2,",
]


def char_tokenizer():
    """A 64-symbol character tokenizer (lower-cased; unknown characters -> <unk>), no download."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, **{c: i + 1 for i, c in enumerate(CHARS)}}
    assert len(vocab) <= 64
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", eos_token="#")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory):
    """(model, tokenizer, golden dict, cache dir): AR outputs of the synthetic prompts on the tiny model."""
    model = make_tiny_model("llama", seed=3)
    tok = char_tokenizer()
    draft_dir = tmp_path_factory.mktemp("sps_draft")  # SpS drafts with a saved copy of the target (an oracle)
    model.save_pretrained(draft_dir)
    tok.save_pretrained(draft_dir)
    TINY_OPTIONS["sps"] = {"draft_model": str(draft_dir)}
    TINY_OPTIONS["pard"] = {"draft_model": pard_copy(str(draft_dir))}  # (the target with a mask token)
    stop = {tok.convert_tokens_to_ids("#")}
    prompts = [Prompt("synthetic", str(i), 1, tok(t, add_special_tokens=False)["input_ids"]) for i, t in enumerate(PROMPT_TEXTS)]
    # a prompt made of the model's own greedy output makes copy-based drafters accept a lot
    engine = Engine(model, stop)
    echo = engine.generate(prompts[0].prompt_ids, None, 30).output_ids
    prompts.append(Prompt("synthetic", "echo", 1, prompts[0].prompt_ids + echo + prompts[0].prompt_ids))
    entries = record_outputs(engine, MAX_NEW, prompts)
    # the echo corpus: each prompt with a longer greedy continuation than the golden one
    _ECHO_TEXTS[:] = [tok.decode(p.prompt_ids + engine.generate(p.prompt_ids, None, 2 * MAX_NEW).output_ids) for p in prompts]
    golden = make_golden(entries, {"name": "tiny-llama", "hash": "seed3", "dtype": "float32"},
                         {"tasks": ["synthetic"], "limit": len(prompts), "max_new_tokens": MAX_NEW, "methods": ["all"]}, stop)
    path = tmp_path_factory.mktemp("golden") / "golden.json"
    save_golden(golden, path)
    return model, tok, load_golden(path), tmp_path_factory.mktemp("cache")


def test_golden_ar_matches_plain_greedy(tiny) -> None:
    """The stored AR tokens equal a no-cache argmax loop (an independent reference for the engine)."""
    model, _tok, golden, _ = tiny
    stop = set(golden["stop_ids"])
    for e in golden["entries"]:
        ids = list(e["prompt_ids"])
        out: list[int] = []
        with torch.inference_mode():
            while len(out) < MAX_NEW:
                nxt = int(model(input_ids=torch.tensor([ids])).logits[0, -1].argmax())
                out.append(nxt)
                ids.append(nxt)
                if nxt in stop:
                    break
        assert e["output_ids"] == out
    assert any(len(e["output_ids"]) == MAX_NEW for e in golden["entries"])


@pytest.mark.parametrize("method", METHODS.names())
def test_every_method_reproduces_golden(tiny, method: str) -> None:
    if method in SKIPS:
        pytest.skip(SKIPS[method])
    model, tok, golden, cache = tiny

    def env_for(task: str) -> MethodEnv:
        return MethodEnv(model, tok, "tiny-llama-seed3", torch.device("cpu"), default_data_dir(), cache, task)

    result = verify_golden(golden, model, env_for, [method], {method: TINY_OPTIONS.get(method, {})})
    assert result.ok, "\n".join(result.failures[method])
    assert result.passed[method] == len(golden["entries"])
    if method != "ar":  # the drafts must really reach verification, or the method is not tested
        assert result.drafted[method] > 0, f"{method} proposed no drafts on the tiny model; fix TINY_OPTIONS"
    print(f"{method}: {result.accepted[method]}/{result.drafted[method]} draft tokens accepted")


@pytest.mark.parametrize("method", ["eagle", "eagle3", "medusa", "hydra", "sps"])
def test_fr_spec_vocabularies_reproduce_golden(tiny, method: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each drafter with a head over the vocabulary, restricted to FR-Spec's most frequent tokens (``vocab=fr:N``,
    counted in the echo corpus): the output is AR's, and drafts still reach verification."""
    from specbench.drafting import frequency_vocab

    monkeypatch.setattr(frequency_vocab, "FR_CORPORA", (ECHO_CORPUS,))
    model, tok, golden, cache = tiny

    def env_for(task: str) -> MethodEnv:
        return MethodEnv(model, tok, "tiny-llama-seed3", torch.device("cpu"), default_data_dir(), cache, task)

    label = f"{method}@fr"
    options = {label: {**TINY_OPTIONS.get(method, {}), "vocab": "fr:24"}}
    result = verify_golden(golden, model, env_for, [label], options)
    assert result.ok, "\n".join(result.failures[label])
    assert result.passed[label] == len(golden["entries"]) and result.drafted[label] > 0


def test_verify_detects_a_corrupted_golden(tiny) -> None:
    model, tok, golden, cache = tiny
    bad = json.loads(json.dumps(golden))
    bad["entries"][1]["output_ids"][3] = (bad["entries"][1]["output_ids"][3] + 1) % 64
    env = MethodEnv(model, tok, "tiny", torch.device("cpu"), None, cache, "synthetic")
    result = verify_golden(bad, model, lambda _t: env, ["pld"])
    assert not result.ok
    assert "synthetic/1 turn 1: diverges at token 3" in result.failures["pld"][0]


# -- specbench check ---------------------------------------------------------------------------


def test_check_passes_clean_run(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    run = write_fake_run(tmp_path / "ok", {"pld": 1.5})
    assert main(["check", str(run)]) == 0
    out = capsys.readouterr().out
    assert "pld: 24 exact, 0 tie, 0 mismatch" in out and "OK" in out


def test_check_fails_on_mismatch_with_diff(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    run = write_fake_run(tmp_path / "bad", {"pld": 1.5}, mismatch=("pld", "humaneval", "humaneval-3"))
    assert main(["check", str(run), "--ids"]) == 1
    out = capsys.readouterr().out
    assert "MISMATCH pld humaneval/humaneval-3 turn 1 repeat 0: first divergence at token 5, AR top-2 margin 0.0012" in out
    recs = [json.loads(x) for x in (run / "records.jsonl").read_text().splitlines()]
    ar = next(r for r in recs if r["method"] == "ar" and r["question_id"] == "humaneval-3")
    assert f"  ar     : {ar['output_ids'][5:13]}" in out
    assert f"  common : {ar['output_ids'][0:5]}" in out
    assert "FAIL: 1 record(s) not lossless" in out


def test_check_ties_fail_only_when_strict(tmp_path: Path) -> None:
    run = write_fake_run(tmp_path / "tie", {"pld": 1.5}, mismatch=("pld", "gsm8k", "gsm8k-0"))
    # check re-derives the class, so a tie needs a stored AR margin below the float32 threshold too
    lines = (run / "records.jsonl").read_text().replace('"lossless_class": "mismatch"', '"lossless_class": "tie"')
    lines = lines.replace('"ar_margin": 0.0012', '"ar_margin": 1e-05')
    (run / "records.jsonl").write_text(lines)
    code, out = check_run(run, decode=False)
    assert code == 0 and out[0].startswith("TIE pld gsm8k/gsm8k-0")
    assert check_run(run, strict=True, decode=False)[0] == 1


@pytest.mark.embedded
def test_golden_cli_on_embedded_model(tmp_path: Path, embedded, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "golden.json"
    assert main(["golden", "record", "--methods", "ar,pld", "--tasks", "gsm8k", "--limit", "1",
                 "--max-new-tokens", "16", "--out", str(path)]) == 0
    g = load_golden(path)
    assert g["model"]["hash"] == embedded.model_hash and len(g["entries"]) == 1
    assert g["recorded_on"]["device"] == "cpu" and g["recorded_on"]["cpu"] and "gpu" not in g["recorded_on"]
    assert len(g["entries"][0]["output_ids"]) == 16
    assert main(["golden", "verify", str(path)]) == 0
    assert "pld: 1/1 golden outputs reproduced" in capsys.readouterr().out
    g["entries"][0]["output_ids"][0] += 1
    save_golden(g, path)
    assert main(["golden", "verify", str(path), "--methods", "ar"]) == 1


def test_verify_notes_a_golden_file_made_on_another_device(tmp_path: Path) -> None:
    from specbench.run.golden import device_note

    golden = make_golden([], {"name": "x"}, {"max_new_tokens": 1}, set(), device="cpu")
    assert golden["recorded_on"]["device"] == "cpu" and device_note(golden, "cpu") is None
    golden["recorded_on"] = {"device": "cuda:1", "gpu": "Fake A100"}
    assert "cuda:1 (Fake A100)" in device_note(golden, "cpu") and device_note(golden, "cuda:0") is None


_HALF_MODELS: dict[torch.dtype, torch.nn.Module] = {}


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("method", METHODS.names())
def test_every_method_in_half_precision(tiny, method: str, dtype: str) -> None:
    """Each method on the tiny model cast to ``dtype`` (its drafter built there too: heads, datastores)
    equals the same-dtype AR output or diverges only at a near-tie of AR's own recorded margin."""
    from specbench.results.lossless import MISMATCH, classify, default_tie_threshold
    from specbench.run.methods_factory import build_drafter

    if method in SKIPS:
        pytest.skip(SKIPS[method])
    _, tok, golden, cache = tiny
    torch_dtype = getattr(torch, dtype)
    if torch_dtype not in _HALF_MODELS:  # the fixture's model, rebuilt (its linears may be packed: no copy)
        _HALF_MODELS[torch_dtype] = make_tiny_model("llama", seed=3).to(torch_dtype)
    model = _HALF_MODELS[torch_dtype]
    engine = Engine(model, set(golden["stop_ids"]))
    env = MethodEnv(model, tok, f"tiny-llama-seed3-{dtype}", torch.device("cpu"), default_data_dir(), cache, "synthetic")
    drafter, _ = build_drafter(method, TINY_OPTIONS.get(method, {}), env)
    drafted = 0
    for e in golden["entries"]:
        ar = engine.generate(e["prompt_ids"], None, MAX_NEW, record_margins=True)
        gen = engine.generate(e["prompt_ids"], drafter, MAX_NEW)
        drafted += sum(gen.draft_sizes)
        margins = ar.token_margins()
        verdict = classify(ar.output_ids, gen.output_ids, lambda pos: margins[pos], default_tie_threshold(dtype))
        assert verdict.lossless_class != MISMATCH, (method, dtype, e["question_id"], verdict)
    if method != "ar":
        assert drafted > 0, f"{method} proposed no drafts in {dtype}"
