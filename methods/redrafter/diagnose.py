"""Does a draft head repeat the root? First-draft agreement with the root vs with the wanted token.

At a held-out position t the context is the target's hidden state at t, whose greedy prediction is the
root g0 (token t+1); draft position 1 should predict the target's token after it (t+2). A head that
reads the context like the target's own LM head repeats the root instead: the untrained head does.

    python -m specbench_methods.redrafter.diagnose [CHECKPOINT_DIR] [--tokens 20000] [--n-predict 3]

The data are the shared feature store's first ``--tokens`` positions (the default corpora, computed on
first use); without ``CHECKPOINT_DIR`` both untrained layouts are checked. Also prints the held-out top-1
accuracy per predicted position (``--n-predict`` of them). E.g. for the embedded target:
``untrained proj=True blocks=1: 1004 positions, first draft == root 0.998, == wanted token 0.055; ...``.
Several heads evaluated with the same ``--tokens`` share the held-out split (every 20th sequence), so
their figures compare directly.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import torch

from specbench.api import DistillData
from specbench_methods.redrafter.head import DraftHead


@torch.no_grad()
def root_repeat_rates(head: DraftHead, data: DistillData, starts: torch.Tensor) -> tuple[float, float]:
    """(share of ``starts`` whose first draft equals the root, share equal to the wanted token)."""
    w = head.lm_head.weight
    first = head(data.hidden[starts].to(w.device, w.dtype), data.tokens[starts + 1].unsqueeze(1).to(w.device))[:, 0]
    pred = first.argmax(-1).cpu()
    root, wanted = data.argmax[starts], data.argmax[starts + 1]
    return float((pred == root).float().mean()), float((pred == wanted).float().mean())


def main(argv: list[str] | None = None) -> int:
    from specbench_methods.redrafter.checkpoint import load_checkpoint
    from specbench_methods.redrafter.head import build_head, head_config_for
    from specbench_methods.redrafter.train import TrainConfig, evaluate
    from specbench.api import DEFAULT_CORPORA, FeatureOptions, load_model, resolve_data_dir

    p = argparse.ArgumentParser(prog="python -m specbench_methods.redrafter.diagnose", description=__doc__.splitlines()[0])
    p.add_argument("checkpoint", type=Path, nargs="?", help="a trained head (default: the untrained layouts)")
    p.add_argument("--tokens", type=int, default=20000, help="positions of the feature store read (held-out included)")
    p.add_argument("--n-predict", dest="n_predict", type=int, default=3, help="predicted positions evaluated")
    p.add_argument("--model", default="embedded")
    args = p.parse_args(argv)
    loaded = load_model(args.model, "float32", "cpu")
    model, n_predict = loaded.model, args.n_predict
    data, _ = FeatureOptions().load(model, loaded.tokenizer, DEFAULT_CORPORA, resolve_data_dir(None), loaded.model_id,
                                    positions=args.tokens, n_predict=n_predict, max_seq_len=512)
    starts = data.heldout_starts
    if args.checkpoint:
        heads = [(str(args.checkpoint), load_checkpoint(args.checkpoint, model)[0])]
    else:
        torch.manual_seed(0)
        heads = [(f"untrained proj={proj} blocks={nb}", build_head(head_config_for(model, proj, nb), model).eval())
                 for proj, nb in ((True, 1), (False, 2))]
    for name, head in heads:
        root, wanted = root_repeat_rates(head, data, starts)
        top1 = evaluate(head, data, starts, TrainConfig(n_predict=n_predict))["heldout_top1"]
        print(f"{name}: {len(starts)} positions, first draft == root {root:.3f}, == wanted token {wanted:.3f}; "
              f"top-1 per position {' / '.join(f'{a:.3f}' for a in top1)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
