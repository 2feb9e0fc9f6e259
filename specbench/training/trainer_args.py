"""``specbench train METHOD``: one command shape for every trained drafter (eagle, eagle3, hydra, medusa,
redrafter, the SpS draft), built from the method's ``TrainerSpec``.

Flags every trainer shares: ``--recipe quick|full`` (the method's recipes; flags given on top override
their fields), ``--out`` (default: the cache folder the method's ``recipe`` option reads, so
``specbench train eagle --recipe full`` fills what ``--method-opt eagle.recipe=full`` uses), ``--corpus``,
``--tokens``, ``--epochs``, ``--teacher-dtype``, ``--curve SIZES`` (``curve.py``; its size equal to the recipe's
fills the recipe's cache folder too), optimisation basics and
the target. Example: ``--corpus sharegpt,gsm8k_train --epochs 2`` with the quick recipe ``R`` ->
``(["sharegpt", "gsm8k_train"], replace(R, epochs=2))``.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from specbench.config.argtypes import positive_float, positive_int
from specbench.errors import ConfigError
from specbench.training.distill_data import DEFAULT_CORPORA
from specbench.training.recipes import QUICK, eta_minutes


@dataclass(frozen=True)
class TrainerSpec:
    """What ``specbench train NAME`` needs from a method.

    ``recipes(args)``: recipe name -> train config (Hydra's depend on ``--head``); ``train``: the trainer,
    called ``train(target, tokenizer, corpora, data_dir, out, cfg, model_id, features=..., recipe=...)`` and
    returning its metrics; ``default_dir(env, name, cfg, corpora)``: the cache folder the method's default of
    recipe ``name`` lives in, or None when ``cfg``/``corpora`` are not that default's; ``metric``: the held-out
    figure the result line and the curve show; ``option``: the method option naming a checkpoint folder."""

    name: str
    help: str
    recipes: Callable[[argparse.Namespace], dict[str, Any]]
    train: Callable[..., dict[str, Any]]
    default_dir: Callable[[Any, str, Any, Sequence[str]], Path | None]
    add_arguments: Callable[[argparse.ArgumentParser], None]
    train_s_per_position: float
    metric: str = "heldout_top1"
    option: str = ""  # e.g. "eagle.checkpoint"
    default_corpora: Sequence[str] = field(default=DEFAULT_CORPORA)
    method: str = ""  # the method whose options read the drafter, when not ``name`` (``draft`` -> ``sps``)
    # (max_seq_len, kept layers) of the feature store the trainer reads with ``cfg`` (the curve opens it first)
    store_shape: Callable[[Any, Any], tuple[int, tuple[int, ...]]] = lambda target, cfg: (cfg.max_seq_len, ())
    aliases: tuple[str, ...] = ()  # more names of the same command

    def eta(self, cfg: Any) -> float:
        own = getattr(cfg, "eta_minutes", None)
        return own() if callable(own) else eta_minutes(cfg.tokens, cfg.epochs, self.train_s_per_position)


def size(text: str) -> int:
    """A position count with an optional k/m suffix (argparse type).

    >>> [size(t) for t in ("20k", "1m", "1.5k", "300")]
    [20000, 1000000, 1500, 300]
    """
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:].lower(), 1)
    try:
        value = int(float(text[:-1] if scale > 1 else text) * scale)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a position count such as 20000, 20k or 1m, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive position count, got {text!r}")
    return value


def sizes(text: str) -> list[int]:
    """``"20k,100k,1m"`` -> ``[20000, 100000, 1000000]`` (sorted, without repeats)."""
    return sorted({size(t.strip()) for t in text.split(",") if t.strip()})


def corpora_and_recipe(args: argparse.Namespace, recipes: dict[str, Any],
                       default_corpora: Sequence[str]) -> tuple[list[str], Any, bool]:
    """(corpora named by ``--corpus``, checked; the ``--recipe``'s config with the flags given on top, validated;
    whether a flag changed it)."""
    from specbench.datastore.corpora import PAIR_LOADERS

    corpora = [c.strip() for c in (args.corpus or ",".join(default_corpora)).split(",") if c.strip()]
    known = set(PAIR_LOADERS) | {"python_stdlib"}
    bad = [c for c in corpora if c not in known]
    if not corpora or bad:
        raise FileNotFoundError(f"unknown corpus {', '.join(bad) or '(none)'} (known: {', '.join(sorted(known))})")
    if args.recipe not in recipes:
        raise ConfigError(f"--recipe must be one of {', '.join(recipes)}, got {args.recipe!r}")
    base = recipes[args.recipe]
    fields = {f.name for f in dataclasses.fields(base)}
    given = {k: v for k, v in vars(args).items() if k in fields and v is not None}
    cfg = dataclasses.replace(base, **given)
    cfg.validate()
    return corpora, cfg, cfg != base


def add_common_arguments(r: argparse.ArgumentParser, recipes: Sequence[str] = ("quick", "full")) -> None:
    """Flags every trainer shares."""
    r.add_argument("--recipe", default=QUICK, choices=tuple(recipes),
                   help="quick: the first-use default (minutes); full: more positions and epochs (about an hour, "
                        "resumable); a method may have its own (eagle: hass, HASS's training on full's data); flags "
                        "given on top change it")
    r.add_argument("--out", help="output folder (default: the cache folder of the method's recipe option)")
    r.add_argument("--corpus", help=f"corpus name(s), comma-separated (default {','.join(DEFAULT_CORPORA)})")
    r.add_argument("--tokens", type=positive_int, help="positions to train on (default: the recipe's)")
    r.add_argument("--epochs", type=positive_int, help="passes over the data (default: the recipe's)")
    r.add_argument("--teacher-dtype", dest="teacher_dtype", choices=("float32", "bfloat16"), default="float32",
                   help="the target's precision while computing the features (bfloat16: faster, another store)")
    r.add_argument("--curve", type=sizes, metavar="SIZES",
                   help="train at each size (e.g. 20k,100k,300k,1m) on the store's first positions and print held-out "
                        "top-1 against positions, all measured on one held-out set")
    r.add_argument("--batch-size", dest="batch_size", type=positive_int)
    r.add_argument("--lr", type=positive_float)
    r.add_argument("--seed", type=int)
    r.add_argument("--model", default="embedded", help="target model: 'embedded', a HF id or a directory")
    r.add_argument("--device", default="cpu")
    r.add_argument("--data-dir", default=None)


def run_trainer(spec: TrainerSpec, args: argparse.Namespace) -> int:
    """``specbench train NAME``: train one drafter (or the curve) and say how to use it."""
    from types import SimpleNamespace

    from specbench.models.loading import load_model
    from specbench.paths import cache_dir, resolve_data_dir
    from specbench.training.curve import run_curve
    from specbench.training.feature_store import FeatureOptions

    corpora, cfg, changed = corpora_and_recipe(args, spec.recipes(args), spec.default_corpora)
    loaded = load_model(args.model, "float32", args.device)
    data_dir = resolve_data_dir(args.data_dir)
    features = FeatureOptions(teacher_dtype=args.teacher_dtype)
    env = SimpleNamespace(model=loaded.model, model_id=loaded.model_id, cache_dir=cache_dir())
    default = None if changed or args.teacher_dtype != "float32" else spec.default_dir(env, args.recipe, cfg, corpora)
    if args.curve:
        run_curve(spec, loaded, corpora, data_dir, args.recipe if not changed else "custom", cfg, args.curve, features,
                  adopt=None if args.out else default)
        return 0
    if not args.out and default is None:
        raise ConfigError(f"train {spec.name}: give --out (flags or corpora other than the {args.recipe} recipe's "
                          "make a drafter that no method option reads from the cache)")
    out = Path(args.out) if args.out else default
    assert out is not None
    print(f"[specbench] training {spec.name} ({args.recipe} recipe{', changed by flags' if changed else ''}: "
          f"{cfg.tokens} positions, {cfg.epochs} epoch(s)) on {','.join(corpora)}: about {spec.eta(cfg):.0f} min on "
          f"2 CPU cores with the target pass (once per target and corpora); interrupted, it resumes -> {out}",
          file=sys.stderr)
    metrics = spec.train(loaded.model, loaded.tokenizer, corpora, data_dir, out, cfg, loaded.model_id,
                         features=features, recipe=args.recipe if not changed else "custom")
    print(f"held-out {spec.metric}: {metrics.get(spec.metric)}; target pass {metrics.get('collect_s')} s, "
          f"train {metrics.get('train_s')} s")
    if args.out:
        print(f"use it with: --method-opt {spec.option}={out}")
    else:
        print(f"the method reads it with: --method-opt {spec.method or spec.name}.recipe={args.recipe}")
    return 0


def register_train_command(spec: TrainerSpec) -> None:
    """``specbench train NAME`` from ``spec``."""
    from specbench.plugins.registry import PluginCommand, register_trainer

    def arguments(r: argparse.ArgumentParser) -> None:
        spec.add_arguments(r)
        add_common_arguments(r, tuple(spec.recipes(argparse.Namespace(head=None))))

    for name in (spec.name, *spec.aliases):
        register_trainer(PluginCommand(name, spec.help, arguments, lambda args: run_trainer(spec, args)))
