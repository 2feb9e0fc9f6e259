"""A resumed run refuses an outside plugin whose source changed, as it refuses other weights or prompts: its
records would pool two versions of the method under one name.

Plugins are matched by what they register (``method bigram``), not by path: the same file moved elsewhere is the
same plugin, another file registering the same method is a change.

>>> old = [{"spec": "a.py", "sha256": "1" * 64, "registered": ["method bigram"]}]
>>> changed_plugin(old, [{"spec": "a.py", "sha256": "2" * 64, "registered": ["method bigram"]}])
'plugin a.py (method bigram): its source hashed to 111111111111 when the run began and to 222222222222 now'
>>> changed_plugin(old, old) is None
True
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from specbench.errors import ConfigError
from specbench.plugins.outside import loaded_plugins
from specbench.results.run_folder import MANIFEST_FILE, read_manifest


def changed_plugin(old: list[dict[str, Any]], now: list[dict[str, Any]]) -> str | None:
    """Why the plugins ``now`` differ from those a run recorded (``old``), or None when none changed."""
    for before in old:
        for after in now:
            shared = sorted(set(before.get("registered") or []) & set(after.get("registered") or []))
            if shared and before.get("sha256") != after.get("sha256"):
                return (f"plugin {after['spec']} ({', '.join(shared)}): its source hashed to "
                        f"{str(before.get('sha256'))[:12]} when the run began and to {str(after.get('sha256'))[:12]} now")
    return None


def check_same_plugins(run_dir: Path, now: list[dict[str, Any]] | None = None) -> None:
    """Refuse to resume ``run_dir`` when a plugin it was run with changed since (``ConfigError``, one line)."""
    if not (run_dir / MANIFEST_FILE).is_file():
        return
    why = changed_plugin(read_manifest(run_dir).get("plugins") or [], loaded_plugins() if now is None else now)
    if why is not None:
        raise ConfigError(f"{run_dir} cannot resume: {why}; pick another --run-name or delete that folder")
