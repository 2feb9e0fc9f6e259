"""What the content checks cost: the embedded model's weights and REST datastores, each loaded 5 times.

    python scripts/measure_verification.py [REST_DATASTORE_DIR ...]

Without arguments it measures the embedded model and every REST datastore already cached under
``$SPECBENCH_CACHE/datastores/rest`` (build one with ``specbench datastore build --kind rest --corpus
python_stdlib,code_alpaca --out DIR``). Prints the median seconds per check and the throughput.
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Callable

from specbench.datastore.suffix_array import TokenDatastore
from specbench.datastore.token_files import HEADER, dir_bytes
from specbench.files.content_hash import LEDGER
from specbench.models.embedded import WEIGHTS, embedded_model_dir, verify_embedded
from specbench.paths import cache_dir

REPEATS = 5


def timed(fn: Callable[[], object]) -> list[float]:
    out = []
    for _ in range(REPEATS):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def main(stores: list[str]) -> None:
    path = embedded_model_dir()
    size = (path / WEIGHTS).stat().st_size
    t = timed(lambda: verify_embedded(path))
    print(f"embedded model weights, {size / 1e6:.1f} MB: median {statistics.median(t):.3f} s per check "
          f"(min {min(t):.3f}, max {max(t):.3f}; the first read may come from disk) = "
          f"{size / statistics.median(t) / 1e9:.2f} GB/s")
    if not stores:
        stores = [str(h.parent) for h in sorted((cache_dir() / "datastores" / "rest").glob(f"*/*/{HEADER}"))]
    for store in stores:
        LEDGER.clear()
        t = timed(lambda: TokenDatastore.load(store))
        hashed = sum(c.bytes for c in LEDGER) / REPEATS
        per_load = len(LEDGER) // REPEATS  # (each load checks the same files, in order)
        seconds = [sum(c.seconds for c in LEDGER[i * per_load:(i + 1) * per_load]) for i in range(REPEATS)]
        print(f"REST datastore {Path(store).name}, {dir_bytes(Path(store)) / 1e6:.1f} MB ({hashed / 1e6:.1f} MB "
              f"hashed): load median {statistics.median(t):.3f} s, of which the check "
              f"{statistics.median(seconds):.3f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
