"""Lossless classification and report arithmetic on constructed records."""
from pathlib import Path

from specbench.results.lossless import EXACT, MISMATCH, TIE, classify, first_divergence
from specbench.results.record import Record

from specbench.reports.report import render
from specbench.results.loaded_run import Run
from specbench.results.stats import run_stats


def test_first_divergence():
    assert first_divergence([1, 2, 3], [1, 2, 3]) is None
    assert first_divergence([1, 2, 3], [1, 5, 3]) == 1
    assert first_divergence([1, 2, 3], [1, 2]) == 2


def test_classify_tie_vs_mismatch():
    assert classify([1, 2], [1, 2], lambda i: 0.0).lossless_class == EXACT
    tie = classify([1, 2, 3], [1, 4, 3], lambda i: 1e-6)
    assert tie.lossless_class == TIE and tie.first_divergence == 1 and not tie.lossless
    mm = classify([1, 2, 3], [1, 4, 3], lambda i: 0.3)
    assert mm.lossless_class == MISMATCH and mm.ar_margin == 0.3
    assert classify([1, 2], [1, 2, 3], lambda i: 0.0).lossless_class == MISMATCH  # AR stopped, method did not


def rec(method, task, sub, qid, tokens, secs, accept, cls=None):
    return Record(method=method, task=task, subtask=sub, task_version="1", question_id=qid, category="", turn=1,
                  repeat=0, prompt_tokens=5, output_ids=list(range(tokens)), new_tokens=tokens, wall_time_s=secs,
                  forward_passes=len(accept), accept_lengths=accept, draft_sizes=[0] + [4] * (len(accept) - 1),
                  draft_time_s=0.1 * secs, verify_time_s=0.9 * secs, lossless_class=cls)


def test_speedup_is_ratio_of_token_rates_over_paired_questions():
    records = [
        rec("ar", "gsm8k", "GSM8K", "1", 10, 2.0, [1] * 10),
        rec("ar", "gsm8k", "GSM8K", "2", 10, 2.0, [1] * 10),
        rec("x", "gsm8k", "GSM8K", "1", 10, 1.0, [1, 3, 3, 3], EXACT),
        rec("x", "gsm8k", "GSM8K", "2", 10, 1.0, [1, 4, 5], TIE),
        rec("ar", "wmt", "WMT", "9", 6, 1.0, [1] * 6),
        rec("x", "wmt", "WMT", "9", 6, 2.0, [1, 5], MISMATCH),
    ]
    run = Run(Path("r"), {}, records)
    s = run_stats(run)
    assert s["x"]["GSM8K"].speedup == 2.0
    assert s["x"]["WMT"].speedup == 0.5
    # overall pools tokens and time: (26 / 4) / (26 / 5)
    assert abs(s["x"]["Overall"].speedup - (26 / 4) / (26 / 5)) < 1e-12
    assert abs(s["x"]["GSM8K"].tau - 20 / 7) < 1e-12
    assert s["ar"]["Overall"].tau == 1.0
    assert s["x"]["Overall"].lossless == {EXACT: 1, TIE: 1, MISMATCH: 1}
    text = render(run)
    assert "2.00x" in text and "0.50x" in text and "MISMATCH" in text


def test_a_twin_ar_row_states_the_runs_noise_floor_under_the_speedup_table():
    # ar@twin: AR's loop timed again; its cells 0.80x (GSM8K) and 1.25x (WMT) bound what this run can show
    records = [
        rec("ar", "gsm8k", "GSM8K", "1", 10, 2.0, [1] * 10),
        rec("ar@twin", "gsm8k", "GSM8K", "1", 10, 2.5, [1] * 10, EXACT),
        rec("x", "gsm8k", "GSM8K", "1", 10, 1.0, [1, 3, 3, 3], EXACT),
        rec("ar", "wmt", "WMT", "9", 10, 2.5, [1] * 10),
        rec("ar@twin", "wmt", "WMT", "9", 10, 2.0, [1] * 10, EXACT),
    ]
    text = render(Run(Path("r"), {}, records))
    speedup, _, rest = text.partition("### Mean tokens per forward pass")
    assert "Noise floor: `ar@twin`" in speedup and "reads 0.80x to 1.25x" in speedup
    assert "Noise floor" not in rest
    assert "Noise floor" not in render(Run(Path("r"), {}, [r for r in records if r.method != "ar@twin"]))
