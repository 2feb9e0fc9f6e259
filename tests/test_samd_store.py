"""The static automaton's store: built from registered (prompt, response) corpora with the vocabulary appended,
benchmark prompts dropped, cached once, every file's hash checked on load, the CLI builder."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from specbench_methods.samd.store import (FILES, HEADER, build_static_sam, cached_static_sam, load_static_sam,
                                vocabulary_sequences)
from specbench.datastore import corpora
from specbench.errors import DatastoreError
from specbench.paths import default_data_dir
from specbench.plugins.registry import CORPORA, register_corpus
from test_golden import char_tokenizer

CORPUS = "tiny_samd_pairs"
SECRET = ("Compose an engaging travel blog post about a recent trip to Hawaii, highlighting cultural experiences "
          "and must-see attractions.")  # an MT-Bench prompt, verbatim
PAIRS = [("what is 2+2?", "2+2 = 4."), ("", "def add(a, b):\n    return a + b"), ("copy this", "intro: " + SECRET + " ok"),
         ("and this", "the cat sat on the mat.")]
if CORPUS not in CORPORA:
    register_corpus(CORPUS)(lambda data_dir: (t for pair in PAIRS for t in pair if t))
    corpora.PAIR_LOADERS.setdefault(CORPUS, lambda data_dir: iter(PAIRS))


def test_vocabulary_sequences_close_every_id_with_eos() -> None:
    assert vocabulary_sequences(4, 2).tolist() == [0, 2, 1, 2, 2, 3, 2]
    assert vocabulary_sequences(3, None).tolist() == [0, 1, 2]


def test_build_drops_benchmark_prompts_and_loads_verified(tmp_path: Path) -> None:
    data_dir = default_data_dir()
    if not (data_dir / "spec_bench").is_dir() and not any(data_dir.glob("*")):
        pytest.skip("shared data dir not available")
    tok = char_tokenizer()
    eos = tok.eos_token_id
    header = build_static_sam((CORPUS,), tmp_path / "s", tok, "char", data_dir)
    assert header["contamination_check"]["prompts_found"] == 1 and header["contamination_check"]["entries_dropped"] == 1
    sam = load_static_sam(tmp_path / "s", tok)
    kept = [f"{p}\n{r}" if p else r for p, r in PAIRS if SECRET not in r]
    expected = [t for text in kept for t in tok(text)["input_ids"] + [eos]] + vocabulary_sequences(len(tok), eos).tolist()
    assert sam.tokens.tolist() == expected and header["n_sequences"] == 3
    assert sam.contains(tok("the cat sat")["input_ids"]) and not sam.contains(tok("travel blog")["input_ids"])
    assert sorted(header["sha256"]) == sorted(FILES) and header["n_states"] == sam.n_states


def test_cache_builds_once_and_every_file_is_hash_checked(tmp_path: Path) -> None:
    tok = char_tokenizer()
    sam = cached_static_sam(tmp_path, (CORPUS,), tok, "char", default_data_dir(), max_tokens=40)
    path = Path(sam.path)
    assert path.is_relative_to(tmp_path / "datastores" / "samd") and path.name.endswith("-max40-v1")
    assert len(sam.tokens) == 40 + len(vocabulary_sequences(len(tok), tok.eos_token_id))
    mtime = (path / HEADER).stat().st_mtime
    assert cached_static_sam(tmp_path, (CORPUS,), tok, "char", None, 40).n_states == sam.n_states
    assert (path / HEADER).stat().st_mtime == mtime
    for name in FILES:  # one flipped byte in any file is caught
        data = bytearray((path / name).read_bytes())
        data[-1] ^= 1
        (path / name).write_bytes(bytes(data))
        with pytest.raises(DatastoreError, match=f"{name}: content does not match"):
            load_static_sam(path, tok)
        data[-1] ^= 1
        (path / name).write_bytes(bytes(data))
    load_static_sam(path, tok)
    (path / FILES[3]).write_bytes((path / FILES[3]).read_bytes()[:-4])
    with pytest.raises(DatastoreError, match="wrong size"):
        load_static_sam(path, tok)


def test_another_tokenizer_is_refused(tmp_path: Path) -> None:
    from transformers import PreTrainedTokenizerFast

    tok = char_tokenizer()
    build_static_sam((CORPUS,), tmp_path / "s", tok, "char", None, 30, check_test_prompts=False)
    other = PreTrainedTokenizerFast(tokenizer_object=tok.backend_tokenizer, unk_token="<unk>", eos_token="#")
    other.add_tokens(["<extra>"])
    with pytest.raises(DatastoreError, match="built with another tokenizer"):
        load_static_sam(tmp_path / "s", other)
    with pytest.raises(DatastoreError, match="no readable header.json"):
        load_static_sam(tmp_path / "missing", tok)


def test_datastore_build_cli(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from specbench.cli import main
    from tiny_model_dir import save_tiny_model

    model = save_tiny_model(tmp_path / "m")
    assert main(["datastore", "build", "--kind", "samd", "--corpus", CORPUS, "--out", str(tmp_path / "s"),
                 "--model", str(model), "--set", "check_test_prompts=false"]) == 0
    assert "samd static automaton" in capsys.readouterr().out
    assert (tmp_path / "s" / HEADER).is_file() and not np.load(tmp_path / "s" / "tokens.npy").size == 0
    assert main(["datastore", "build", "--kind", "samd", "--corpus", CORPUS, "--out", str(tmp_path / "t"),
                 "--model", str(model), "--set", "chunk=3"]) == 2
