"""Drafter checkpoints by hub id, offline: a hub cache built in the test (the hub's own layout), each
weight file checked against its blob name; one-line errors for what a user gets wrong."""
from __future__ import annotations

import pytest

from conftest import make_tiny_model
from hub_fixtures import medusa_reference_checkpoint, publish
from specbench.errors import ConfigError
from specbench.models.hub import is_hub_id, resolve_checkpoint


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """An offline hub cache holding ``FasterDecoding/medusa-tiny``; returns (cache, commit)."""
    import huggingface_hub.constants as C

    cache = tmp_path / "hub"
    commit = publish(cache, "FasterDecoding/medusa-tiny", medusa_reference_checkpoint(make_tiny_model("llama"), tmp_path / "m"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(C, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(C, "HF_HUB_OFFLINE", True)
    return cache, commit


def test_hub_id_resolves_to_its_snapshot_with_revision_and_hashes(hub) -> None:
    cache, commit = hub
    for spec in ("FasterDecoding/medusa-tiny", f"FasterDecoding/medusa-tiny@{commit}", "FasterDecoding/medusa-tiny@main"):
        got = resolve_checkpoint(spec, "medusa.checkpoint")
        assert got.path.name == commit and got.revision == commit and got.repo == "FasterDecoding/medusa-tiny"
        assert (got.path / "medusa_lm_head.safetensors").is_file()
        record = got.record()
        assert record["revision"] == commit and len(record["sha256"]) == 64
        assert list(record["files"]) == ["medusa_lm_head.safetensors"]


def test_a_damaged_blob_is_refused(hub) -> None:
    cache, _ = hub
    blob = next(p for p in (cache / "models--FasterDecoding--medusa-tiny" / "blobs").iterdir() if p.stat().st_size > 1000)
    data = bytearray(blob.read_bytes())
    data[len(data) // 2] ^= 1
    blob.write_bytes(bytes(data))
    with pytest.raises(ConfigError, match="damaged download"):
        resolve_checkpoint("FasterDecoding/medusa-tiny", "medusa.checkpoint")


def test_one_line_errors(hub, tmp_path) -> None:
    with pytest.raises(ConfigError, match="not in the Hugging Face cache and the hub cannot be reached"):
        resolve_checkpoint("FasterDecoding/never-downloaded", "medusa.checkpoint")
    with pytest.raises(ConfigError, match="not a folder and not a hub id"):
        resolve_checkpoint("no such folder", "eagle.checkpoint")
    assert resolve_checkpoint(str(tmp_path), "eagle.checkpoint").repo is None  # a folder stays a folder
    assert is_hub_id("org/name@v1") and not is_hub_id(str(tmp_path))
