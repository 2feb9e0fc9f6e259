"""Named protocols: ``--preset spec-bench`` is Spec-Bench's evaluation setting in one flag.

A preset fills every setting the user did not give (flags and the YAML config override it); its name is
written into the manifest and the report, its values into the config like any other, so two users'
"Spec-Bench runs" differ only where the manifest shows it.

``spec-bench`` (``hemingkx/Spec-Bench`` at fd2c1cd: ``eval.sh``, ``evaluation/inference_*.py``):
- its 480 questions: the six tasks made of its ``question.jsonl`` categories, every question (``--split all``);
- 1024 new tokens, greedy, batch 1; float16 on CUDA (its ``--dtype float16``), float32 on a CPU (said so:
  half precision on a CPU is slow and not what a CPU user runs);
- FastChat's ``vicuna`` template for Vicuna targets (Spec-Bench builds every prompt with it);
- each method's hyper-parameters as its scripts set them, and for the known targets the published drafters.

Example::

    >>> values = preset_values("spec-bench", "lmsys/vicuna-7b-v1.3", "cpu")
    >>> values["max_new_tokens"], values["dtype"], values["chat_template"]
    (1024, 'float32', 'vicuna')
    >>> values["method_options"]["eagle"]["checkpoint"]
    'yuhuili/EAGLE-Vicuna-7B-v1.3'
"""
from __future__ import annotations

import sys
from typing import Any

from specbench.errors import ConfigError

PRESETS = ("spec-bench",)

SPEC_BENCH_TASKS = ("mt_bench", "wmt", "cnndm", "nq", "gsm8k", "nq_rag")

# each method as Spec-Bench's scripts run it (whatever the target)
SPEC_BENCH_METHODS: dict[str, dict[str, Any]] = {
    "eagle": {"tree": "dynamic", "top_k": 10, "depth": 5, "total_tokens": 59},  # inference_eagle2: 60 with the root
    "eagle@static": {"tree": "static"},  # inference_eagle: EAGLE-1's tree
    "eagle3": {"top_k": 10, "depth": 5, "total_tokens": 59},  # inference_eagle3: --total-token 60 --depth 5 --top-k 10
    "medusa": {"tree": "mc_sim_7b_63"},
    "hydra": {"tree": "mc_sim_7b_63"},  # inference_hydra: --hydra-choices mc_sim_7b_63
    "sps": {"gamma": 5, "schedule": "heuristic", "min_confidence": 0.0},  # transformers' assisted generation then
    "pld": {"max_ngram": 3, "num_draft": 10},  # draft_matching_window_size=3, draft_num_candidate_tokens=10
    "lookahead": {"ngram": 5, "window": 7, "guess": 7},  # eval.sh: --level 5 --window 7 --guess 7
    "rest": {"c": 64, "n_max": 16},  # --num-draft 64, --max-token-span 16
    "recycling": {"topk": 8, "tree_version": "2.2.2"},  # inference_recycling.py: --output-id-topk 8, --tree_version 2.2.2
    # eval.sh: --samd_n_predicts 40 --samd_len_threshold 5 --samd_len_bias 5 --tree_method eagle2, no static
    # automaton; its EAGLE-2 tree model's defaults (top-8, depth 5, 63 tokens with the root)
    "samd@eagle": {"auxiliary": "eagle", "n_predicts": 40, "len_threshold": 5, "len_bias": 5, "static": "false",
                   "aux_options": "tree=dynamic;top_k=8;depth=5;total_tokens=62"},
}

# known targets -> published drafters (hub ids), as Spec-Bench's eval.sh points to them
KNOWN_TARGETS: dict[str, dict[str, dict[str, str]]] = {
    "vicuna-7b-v1.3": {"eagle": {"checkpoint": "yuhuili/EAGLE-Vicuna-7B-v1.3"},
                       "eagle@static": {"checkpoint": "yuhuili/EAGLE-Vicuna-7B-v1.3"},
                       "medusa": {"checkpoint": "FasterDecoding/medusa-vicuna-7b-v1.3"},
                       "hydra": {"checkpoint": "ankner/hydra-vicuna-7b-v1.3"},
                       "sps": {"draft_model": "double7/vicuna-68m"}},
    "vicuna-13b-v1.3": {"eagle": {"checkpoint": "yuhuili/EAGLE-Vicuna-13B-v1.3"},
                        "eagle3": {"checkpoint": "yuhuili/EAGLE3-Vicuna1.3-13B"},  # eval.sh's Eagle3_PATH (13B only)
                        "eagle@static": {"checkpoint": "yuhuili/EAGLE-Vicuna-13B-v1.3"},
                        "medusa": {"checkpoint": "FasterDecoding/medusa-vicuna-13b-v1.3"},
                        "hydra": {"checkpoint": "ankner/hydra-vicuna-13b-v1.3"},
                        "sps": {"draft_model": "double7/vicuna-68m"}},
    "vicuna-33b-v1.3": {"eagle": {"checkpoint": "yuhuili/EAGLE-Vicuna-33B-v1.3"},
                        "eagle@static": {"checkpoint": "yuhuili/EAGLE-Vicuna-33B-v1.3"},
                        "medusa": {"checkpoint": "FasterDecoding/medusa-vicuna-33b-v1.3"},
                        "hydra": {"checkpoint": "ankner/hydra-vicuna-33b-v1.3"},
                        "sps": {"draft_model": "double7/vicuna-68m"}},
}


def known_target(model: str) -> str | None:
    """The known-target key a model id or folder name ends with.

    >>> known_target("lmsys/vicuna-13b-v1.3"), known_target("/models/Vicuna-7B-v1.3"), known_target("gpt2")
    ('vicuna-13b-v1.3', 'vicuna-7b-v1.3', None)
    """
    tail = model.rstrip("/").split("/")[-1].lower()
    return tail if tail in KNOWN_TARGETS else None


def preset_values(name: str, model: str, device: str) -> dict[str, Any]:
    """The settings preset ``name`` gives for ``model`` on ``device`` (``auto`` resolved here)."""
    if name not in PRESETS:
        raise ConfigError(f"--preset must be one of {', '.join(PRESETS)}, got {name!r}")
    import torch

    cuda = device.startswith("cuda") or (device == "auto" and torch.cuda.is_available())
    if not cuda:
        print("[specbench] --preset spec-bench on a CPU: float32 instead of Spec-Bench's float16 (half precision "
              "is slow on CPUs); pass --dtype float16 to override", file=sys.stderr)
    options = {m: dict(v) for m, v in SPEC_BENCH_METHODS.items()}
    for method, drafter in KNOWN_TARGETS.get(known_target(model) or "", {}).items():
        options.setdefault(method, {}).update(drafter)
        if method == "eagle" and "samd@eagle" in options:  # SAMD[EAGLE2]'s tree model is the same EAGLE draft
            aux = options["samd@eagle"]["aux_options"]
            options["samd@eagle"]["aux_options"] = f"{aux};checkpoint={drafter['checkpoint']}"
    values: dict[str, Any] = {
        "preset": name, "tasks": list(SPEC_BENCH_TASKS), "split": "all", "max_new_tokens": 1024,
        "dtype": "float16" if cuda else "float32", "temperature": 0.0, "method_options": options,
    }
    if "vicuna" in model.lower():
        values["chat_template"] = "vicuna"
    return values


def describe(name: str = "spec-bench") -> str:
    """One paragraph for ``--help``: every value the preset sets."""
    methods = "; ".join(f"{m}: " + ", ".join(f"{k}={v}" for k, v in o.items()) for m, o in SPEC_BENCH_METHODS.items())
    targets = ", ".join(KNOWN_TARGETS)
    return (f"{name}: tasks {','.join(SPEC_BENCH_TASKS)} (all 480 questions, --split all), max_new_tokens 1024, "
            f"greedy, float16 on CUDA (float32 on CPU), chat template vicuna for Vicuna targets; {methods}; "
            f"published drafters for {targets}. Explicit flags and --config override it.")


def merge_preset(preset: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """``values`` (YAML + flags) over ``preset``; method options merged per method and key.

    >>> merge_preset({"limit": 5, "method_options": {"eagle": {"top_k": 10}}},
    ...              {"limit": 2, "method_options": {"eagle": {"depth": 3}}})
    {'limit': 2, 'method_options': {'eagle': {'top_k': 10, 'depth': 3}}}
    """
    out = dict(preset) | {k: v for k, v in values.items() if k != "method_options"}
    options = {m: dict(o) for m, o in (preset.get("method_options") or {}).items()}
    for method, opts in (values.get("method_options") or {}).items():
        options.setdefault(method, {}).update(opts or {})
    out["method_options"] = options
    return out
