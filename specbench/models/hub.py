"""Drafter checkpoints by folder or by Hugging Face hub id (``ORG/NAME[@REVISION]``).

A published drafter (``yuhuili/EAGLE-Vicuna-7B-v1.3``, ``FasterDecoding/medusa-vicuna-7b-v1.3``, ...) is
fetched through the hub cache (``HF_HUB_CACHE``; ``HF_HUB_OFFLINE=1`` uses only what is cached), and the
manifest records which repository, which commit and which bytes ran: each weight file is checked
against its cache blob's name (the hub's sha256 of the file), as the target's weights are.

Example: ``resolve_checkpoint("FasterDecoding/medusa-vicuna-7b-v1.3@main", "medusa.checkpoint")`` ->
``ResolvedCheckpoint(path=<snapshot folder>, repo="FasterDecoding/medusa-vicuna-7b-v1.3",
revision="<40-hex commit>")``; an existing folder is returned as it is.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specbench.errors import ConfigError
from specbench.files.content_hash import ContentMismatch, combined_sha256, stream_sha256, verify_sha256

HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+(@[\w./-]+)?")
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
BLOB = "its Hugging Face cache blob name (the hub's sha256 of the file)"


@dataclass(frozen=True)
class ResolvedCheckpoint:
    """Where a checkpoint lies, and for a hub id which repository and commit it came from."""

    path: Path
    repo: str | None = None
    revision: str | None = None
    weights_sha256: dict[str, str] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        """The manifest entry (``artifacts.<method>.<task>.checkpoint_source``)."""
        out: dict[str, Any] = {"path": str(self.path)}
        if self.repo:
            out.update(repo=self.repo, revision=self.revision)
        if self.weights_sha256:
            out["sha256"] = combined_sha256(self.weights_sha256)
            out["files"] = self.weights_sha256
        return out


def is_hub_id(spec: str) -> bool:
    """``ORG/NAME`` or ``ORG/NAME@REVISION`` that is not an existing path.

    >>> is_hub_id("yuhuili/EAGLE-Vicuna-7B-v1.3"), is_hub_id("a/b@v1.0"), is_hub_id("default"), is_hub_id("/x/y")
    (True, True, False, False)
    """
    return bool(HUB_ID.fullmatch(spec)) and not Path(spec).exists()


def resolve_checkpoint(spec: str, what: str) -> ResolvedCheckpoint:
    """A folder as it is; a hub id fetched (or found in the cache) and its weight files verified.

    ``what`` names the option in errors, e.g. ``eagle.checkpoint``. One-line ``ConfigError`` for an unknown
    repository or revision, no network with nothing cached, or a damaged download.
    """
    if not is_hub_id(spec):
        path = Path(spec).expanduser()
        if not path.is_dir():
            raise ConfigError(f"{what}={spec}: not a folder and not a hub id (ORG/NAME[@REVISION])")
        return ResolvedCheckpoint(path)
    repo, _, revision = spec.partition("@")
    snapshot = Path(_download(repo, revision or None, what))
    return ResolvedCheckpoint(snapshot, repo, snapshot.name, _verify(snapshot, what))


def _download(repo: str, revision: str | None, what: str) -> str:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError, RepositoryNotFoundError, RevisionNotFoundError

    try:
        return snapshot_download(repo, revision=revision)
    except RepositoryNotFoundError:
        raise ConfigError(f"{what}: unknown repository {repo!r} on the Hugging Face Hub (or it is gated)") from None
    except RevisionNotFoundError:
        raise ConfigError(f"{what}: {repo} has no revision {revision!r}") from None
    except LocalEntryNotFoundError:
        raise ConfigError(f"{what}: {repo} is not in the Hugging Face cache and the hub cannot be reached "
                          "(HF_HUB_OFFLINE, no network); download it once online or pass a local folder") from None
    except Exception as e:  # connection errors come from several HTTP libraries
        raise ConfigError(f"{what}: cannot fetch {repo} from the Hugging Face Hub ({type(e).__name__}: "
                          f"{str(e).splitlines()[0] if str(e) else ''})") from None


def _verify(snapshot: Path, what: str) -> dict[str, str]:
    """sha256 of each weight file of a hub snapshot, checked against its blob's name where the hub gives one
    (files stored with Git LFS; small files in plain git are named by their git hash and only recorded)."""
    out: dict[str, str] = {}
    for f in sorted(p for p in snapshot.rglob("*") if p.suffix in WEIGHT_SUFFIXES and p.is_file()):
        blob = f.resolve()
        name = str(f.relative_to(snapshot))
        if re.fullmatch(r"[0-9a-f]{64}", blob.name):
            try:
                out[name] = verify_sha256(f, blob.name, BLOB)
            except ContentMismatch as e:
                raise ConfigError(f"{what}: damaged download: {e}; delete {blob} and run again") from None
        else:
            out[name] = stream_sha256(f)
    return out
