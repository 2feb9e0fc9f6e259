"""``specbench profile``: this machine's forward latency T(n) for n = 1, 2, 4, ..., 128 new tokens after a long KV cache.

Each backend is measured side by side (default: ``fast`` and ``reference``; ``--backends fast,llamacpp`` puts
llama.cpp beside the engine's own), with the bandwidth floor
(weight bytes per forward / measured memory read bandwidth) so a user sees how close a backend gets.
Writes ``profile.json`` (+ ``profile.md`` and ``profile.png``) into ``--out``; pass the json to
``specbench leaderboard --profile`` to see predicted next to measured speedups. Also writes one device profile per
backend (``device-profile-<backend>.json``, ``specbench/profiling/device_profile.py``): T(n) after each of
``--contexts``, the prefill, each drafter model of ``--drafters`` and the host figure, the file that
``specbench project RUN --onto`` prices a run with on this machine (docs/projection.md).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from specbench.config.argtypes import out_folder, positive_int
from specbench.errors import ConfigError
from specbench.models.dtypes import DTYPE_NAMES
from specbench.engine.backends.registry import backend_names, backend_spec
from specbench.profiling.device_profile import save_device_profile
from specbench.profiling.machine_state import MACHINE_STATE, machine_note


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(sorted({int(x) for x in text.split(",") if x.strip()}))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not sizes or sizes[0] < 1:
        raise argparse.ArgumentTypeError("sizes must be positive")
    return sizes


def _backends(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(x.strip() for x in text.split(",") if x.strip()))
    bad = [n for n in names if n not in backend_names()]
    if not names or bad:
        raise argparse.ArgumentTypeError(f"expected backends among {', '.join(backend_names())}, got {text!r}")
    return names


def profile_command(args: argparse.Namespace) -> int:
    """Measure (inside a ``MachineSession``: the machine sampled as runs sample it), then write every file with the
    machine's state in it; under load a warning, with ``--require-quiet`` a refusal before the model loads."""
    from specbench.config.run_flags import parse_method_opts
    from specbench.profiling.profile_sense import noise_problem
    from specbench.run.device_measure import drafter_names
    from specbench.run.machine_session import MachineSession, require_quiet

    if 1 not in args.sizes:
        raise ConfigError("--sizes must include 1 (T(1) is the autoregressive cost)")
    # (checked before the model loads: a typo refused after minutes of measuring left three files behind)
    drafting = (drafter_names(args.drafters), parse_method_opts(args.method_opt))
    if args.require_quiet:
        require_quiet(args.threads)
    with MachineSession(Path(args.out), args.threads) as machine:
        lm, prof, parts, devices = _measure(args, drafting)
    state = {"sessions": [machine.record]}  # (the shape of a manifest's machine_state: one session)
    _write_profile(args, lm, {**prof, MACHINE_STATE: state}, parts)
    out = Path(args.out)
    for key, device in devices.items():
        path = out / f"device-profile-{key}.json"
        save_device_profile({**device, MACHINE_STATE: state}, path)
        print(f"wrote {path} (device profile: {len(device['drafters'])} drafter models, "
              f"{len(device['target']['latency_by_context_s'])} contexts)")
        noisy = noise_problem(device)
        if noisy:  # (read back, every cell projected onto it says so: said here first)
            print(f"warning: {path} is noisier than a measurement ({noisy}); measure it again on a quiet machine",
                  file=sys.stderr)
    return 0


def _measure(args: argparse.Namespace, drafting: tuple[tuple[str, ...], dict]) -> tuple[Any, dict, Any, dict]:
    """(the loaded model, the cost profile, the first backend's breakdown, each backend's device profile)."""
    from specbench.engine.backends.registry import load_model_for
    from specbench.engine.backends.torch_backends import backend_for
    from specbench.models.loading import ModelLoadError
    from specbench.profiling.breakdown import measure_breakdown
    from specbench.profiling.fingerprint import hardware_fingerprint
    from specbench.profiling.measure import measure_forward_curve, measure_read_bandwidth, weight_bytes_per_forward
    from specbench.profiling.profile import make_profile

    engines = [b for b in args.backends if not backend_spec(b).torch_forward]  # (each runs a file of its own)
    if engines and len(args.backends) > 1 and args.dtype != "float32":
        raise ConfigError(f"--dtype {args.dtype} with {engines[0]} beside other backends: compare them in float32 "
                          "(the other backends run the transformers copy llama.cpp's GGUF was made from)")
    try:
        lm = load_model_for(engines[0] if engines else "auto", args.model, args.dtype, args.device, args.threads)
    except ModelLoadError as e:
        raise ConfigError(str(e)) from None
    chosen = {b: backend_for(b, lm, args.threads) for b in args.backends}
    curves = {b: measure_forward_curve(lm.model, args.context, args.sizes, args.repeats, backend=chosen[b])
              for b in args.backends}
    parts = measure_breakdown(lm.model, args.context, backend=args.backends[0])
    read_bps = measure_read_bandwidth(lm.device)
    # a quantised GGUF reads its own bytes (tensors dominate the file), not the float32 transformers copy's
    own_file = lm.gguf is not None and lm.dtype not in DTYPE_NAMES
    weight_bytes = lm.gguf.path.stat().st_size if own_file else weight_bytes_per_forward(lm.model)
    floor = {"weight_bytes": weight_bytes, "read_bytes_per_s": read_bps, "floor_s": weight_bytes / read_bps}
    prof = make_profile(curves[args.backends[0]], {"name": args.model, "id": lm.model_id, "hash": lm.model_hash,
                                                   "dtype": lm.dtype},
                        args.context, hardware_fingerprint(lm.device), curves, floor)
    if parts is not None:
        prof["breakdown_s"] = {"backend": args.backends[0], **parts}
    return lm, prof, parts, _device_profiles(args, lm, chosen, drafting)


def _write_profile(args: argparse.Namespace, lm: Any, prof: dict, parts: Any) -> None:
    """profile.json, profile.md and profile.png into ``--out`` (the md printed)."""
    import base64

    from specbench.profiling.breakdown import breakdown_text
    from specbench.profiling.profile import profile_table, save_profile
    from specbench.reports.leaderboard.markdown import table_md
    from specbench.reports.leaderboard.plots import profile_curve
    from specbench.reports.leaderboard.tables import Table

    out, floor = Path(args.out), prof["bandwidth_floor"]
    weight_bytes, read_bps = floor["weight_bytes"], floor["read_bytes_per_s"]
    save_profile(prof, out / "profile.json")
    headers, rows = profile_table(prof)
    busy = machine_note({MACHINE_STATE: prof[MACHINE_STATE]})
    text = (f"# Cost profile\n\nmodel {lm.model_id} ({lm.dtype}); {args.context} cached tokens; median of "
            f"{args.repeats}; hardware {prof['hardware']}\n\n" + (f"{busy}\n\n" if busy else "")
            + f"Bandwidth floor: {weight_bytes / 1e6:.0f} MB of weights per forward / {read_bps / 1e9:.1f} GB/s "
            f"measured read bandwidth = {floor['floor_s'] * 1e3:.2f} ms.\n\n"
            + (f"{args.backends[0]}: {breakdown_text(parts, weight_bytes, floor['floor_s'])}\n\n" if parts else "")
            + table_md(Table("", headers, rows, [])) + "\n")
    (out / "profile.md").write_text(text, encoding="utf-8")
    uri = profile_curve(prof)
    (out / "profile.png").write_bytes(base64.b64decode(uri.split(",", 1)[1]))
    print(text)
    print(f"wrote {out / 'profile.json'}, profile.md, profile.png")


def _device_contexts(args: argparse.Namespace, model: object) -> tuple[int, ...]:
    """``--contexts`` that leave room for the widest forward in the model's context (``--context`` if none)."""
    from specbench.models.context import config_context

    limit = config_context(getattr(model, "config", None))
    fit = [c for c in sorted(set(args.contexts) | {args.context}) if limit is None or c + max(args.sizes) <= limit]
    return tuple(fit) or (args.context,)


def _device_profiles(args: argparse.Namespace, lm: object, chosen: dict,
                     drafting: tuple[tuple[str, ...], dict]) -> dict[str, dict]:
    """Each backend's device profile; ``drafting``: the drafters to time and their options (already checked)."""
    from specbench.paths import cache_dir
    from specbench.run.device_measure import DeviceRequest, measure_device_profiles

    contexts = _device_contexts(args, lm.model)
    req = DeviceRequest(contexts, args.sizes, args.repeats, max(contexts), *drafting)
    return measure_device_profiles(lm, chosen, req, cache_dir(), args.threads)


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("profile", help="measure this machine's forward latency for 1..128 new tokens (cost profile)")
    p.add_argument("--model", default="embedded", help="HF id, directory or 'embedded'")
    own = {n: [d for d in backend_spec(n).dtypes if d not in DTYPE_NAMES] for n in backend_names()}
    p.add_argument("--dtype", default="float32", choices=DTYPE_NAMES + tuple(d for ds in own.values() for d in ds),
                   help="float32 (default)" + "".join(f"; {' and '.join(ds)} quantise the GGUF ({n} alone)"
                                                      for n, ds in own.items() if ds))
    p.add_argument("--threads", type=positive_int, help="CPU threads: llama.cpp's (default: the cores this process "
                   "may use) and, when given, torch's")
    p.add_argument("--device", default="auto")
    p.add_argument("--context", type=positive_int, default=1024, help="tokens in the KV cache before the timed forward")
    p.add_argument("--sizes", type=_sizes, default=(1, 2, 4, 8, 16, 32, 64, 128), help="new-token counts, e.g. 1,2,4,8")
    p.add_argument("--repeats", type=positive_int, default=5, help="timed forwards per size (median reported)")
    p.add_argument("--backends", type=_backends, default=("fast", "reference"),
                   help="comma-separated engine backends to measure side by side (default fast,reference" + "".join(
                       f"; {n}: {backend_spec(n).summary}" for n in backend_names() if backend_spec(n).loader) + ")")
    p.add_argument("--contexts", type=_sizes, default=(128, 512), help="the device profile's contexts besides "
                   "--context (T(n) after each; those the model cannot hold are left out)")
    p.add_argument("--drafters", default="all", help="drafter models the device profile times with random weights "
                   "of their shape: all (default: every method with a model of its own), none, or a comma list")
    p.add_argument("--method-opt", action="append", metavar="METHOD.KEY=VALUE",
                   help="a drafter's options as the run sets them (its shape must match the run's to price it)")
    p.add_argument("--require-quiet", action="store_true", help="refuse to start while other processes keep the "
                   "machine busy (the machine is sampled as runs sample it either way; a busy one is a warning)")
    p.add_argument("--out", default="results/profile", type=out_folder, help="output folder (profile.json, profile.md, profile.png)")
    p.set_defaults(func=profile_command)
