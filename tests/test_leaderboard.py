"""Leaderboard rendering from fabricated runs: table layout, ordering, lossless status, self-contained HTML."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from specbench.cli import main
from specbench.reports.leaderboard.build import build_leaderboard
from specbench.reports.leaderboard.markdown import table_md
from specbench.reports.leaderboard.tables import group_runs
from specbench.profiling.cost_profile import cost_function
from specbench.reports.prediction import prediction
from specbench.profiling.profile import make_profile, save_profile
from specbench.results.loaded_run import load_run
from test_stats import CPU_HW, write_fake_run

GPU_HW = {"cpu": "Fake Xeon", "cores": 64, "gpu": "Fake A100", "gpu_memory_gb": 80.0, "cuda": "12.4", "driver": "550.1"}


def _table_rows(md: str, header_start: str) -> list[list[str]]:
    lines = md.splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[i + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


def test_groups_by_model_hardware_dtype(tmp_path: Path) -> None:
    a = write_fake_run(tmp_path / "a", {"pld": 1.5})
    b = write_fake_run(tmp_path / "b", {"rest": 2.0})  # same group as a
    c = write_fake_run(tmp_path / "c", {"pld": 1.2}, hardware=GPU_HW)
    d = write_fake_run(tmp_path / "d", {"pld": 1.1}, dtype="bfloat16")
    groups = group_runs([load_run(p) for p in (a, b, c, d)], n_boot=0, seed=0)
    assert len(groups) == 3
    assert [(g.dtype, len(g.runs)) for g in groups] == [("float32", 2), ("float32", 1), ("bfloat16", 1)]
    assert groups[1].hardware == "Fake A100 80 GB (cuda 12.4, driver 550.1)"
    # two ar rows in the first group get the run name to tell them apart
    labels = [r[0] for r in groups[0].rows()]
    assert labels == ["rest", "pld", "ar [a]", "ar [b]"]


def test_markdown_layout_order_and_status(tmp_path: Path) -> None:
    run = write_fake_run(tmp_path / "run", {"pld": 1.5, "rest": 1.8, "slow": 0.7}, mismatch=("slow", "gsm8k", "gsm8k-1"))
    paths = build_leaderboard([run], tmp_path / "out", n_boot=200, plots=False)
    md = paths["markdown"].read_text()
    assert "| Method | MT-Bench | HumanEval | GSM8K | tau | Overall | Lossless |" in md
    rows = _table_rows(md, "| Method | MT-Bench")
    assert [r[0] for r in rows] == ["rest", "pld", "ar", "slow"]  # sorted by Overall
    assert rows[2][1:] == ["1.00x", "1.00x", "1.00x", "1.00", "1.00x", "baseline"]
    assert rows[3][-1] == "MISMATCH (1)" and rows[0][-1] == "exact"
    assert re.fullmatch(r"1\.\d\dx ±0\.\d\d", rows[0][1])
    # footer lists hardware, versions and the exact command
    assert "Fake CPU 9000" in md and '"torch": "2.13.0"' in md and "python run_bench.py --methods ar,pld --limit 6" in md


def test_html_is_self_contained_with_sortable_tables_and_plots(tmp_path: Path) -> None:
    run = write_fake_run(tmp_path / "run", {"pld": 1.5, "rest": 1.8})
    page = build_leaderboard([run], tmp_path / "out", n_boot=100)["html"].read_text()
    # bars, scatter, breakdown, accepted-length histogram, per-position acceptance
    assert page.count("data:image/png;base64,") == 5
    assert 'alt="accepted-length histogram"' in page and 'alt="per-position acceptance"' in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)  # no external assets
    # main, details, latency/memory, per-position, histogram, MT-Bench categories
    assert page.count('class="sortable"') == 6 and "addEventListener('click'" in page
    # numeric sort keys ride along as data-key attributes
    assert re.search(r'<td data-key="1\.[0-9]+">1\.\d\dx ±', page)


def test_metric_tables_in_markdown(tmp_path: Path) -> None:
    a = write_fake_run(tmp_path / "a", {"pld": 1.5})
    manifest = json.loads((a / "manifest.json").read_text())
    manifest["artifacts"] = {"pld": {"gsm8k": {"overhead": {"storage_bytes": 3 * 2**20, "parameters": 2_500_000}}}}
    (a / "manifest.json").write_text(json.dumps(manifest))
    b = write_fake_run(tmp_path / "b", {"pld": 1.0}, seed=1)  # same group: rows become "pld [a]", "pld [b]"
    md = build_leaderboard([a, b], tmp_path / "out", n_boot=50, plots=False)["markdown"].read_text()
    # 24 records x 11 drafted steps; pld [a] drafts 5 and accepts 2 (10 steps) or 0 (the last, 1 token left)
    pos = _table_rows(md, "| Method | draft shape | drafted steps | depth 1")
    assert pos[0] == ["pld [a]", "chain", "264", "0.91 (264)", "1.00 (240)", "0.00 (240)"]
    hist = _table_rows(md, "| Method | drafted steps | 0 | 1 | 2")
    assert hist[0][:5] == ["pld [a]", "264", "9%", "0%", "91%"]
    lat = {r[0]: r for r in _table_rows(md, "| Method | TTFT ms mean")}
    assert lat["pld [a]"][-2:] == ["3.0 MiB", "2.5M"] and lat["pld [b]"][-2:] == ["-", "-"]
    assert lat["pld [a]"][7] == "303.0 MiB"  # peak memory: the largest of its records
    cats = _table_rows(md, "| Method | writing | math |")
    assert [r[0] for r in cats] == ["pld [a]", "ar [a]", "ar [b]", "pld [b]"]
    assert re.fullmatch(r"1\.\d\dx ±0\.\d\d", cats[0][1])


def test_profile_adds_predicted_speedup(tmp_path: Path) -> None:
    run = write_fake_run(tmp_path / "run", {"pld": 2.0}, tasks=("gsm8k",), tokens=33)
    # T(n) = 10 ms + 1 ms per token: pld drafts 6 -> forwards of 7 tokens cost 16 ms vs 11 ms for one
    prof = make_profile({n: 0.010 + 0.001 * n for n in (1, 2, 4, 8, 16)}, {"id": "tiny-fake"}, 512, CPU_HW)
    save_profile(prof, tmp_path / "profile.json")
    recs = load_run(run).records
    pld = [r for r in recs if r.method == "pld"]
    ar = [r for r in recs if r.method == "ar"]
    # priced by hand: prefill (T(prompt) when not recorded) + per decode step T(1 + draft) + its draft time
    def priced(r):
        pre = r.prefill_time_s if r.prefill_time_s is not None else 0.010 + 0.001 * r.prompt_tokens
        return pre + sum(0.010 + 0.001 * (1 + d) + t for d, t in zip(r.draft_sizes[1:], r.draft_times_s[1:]))
    expected = (sum(r.new_tokens for r in pld) / sum(map(priced, pld))) / (sum(r.new_tokens for r in ar) / sum(map(priced, ar)))
    assert prediction(pld, ar, cost_function(prof))[0] == pytest.approx(expected, rel=1e-6)
    assert main(["leaderboard", str(run), "--out", str(tmp_path / "out"), "--profile", str(tmp_path / "profile.json"),
                 "--bootstrap", "50", "--no-plots"]) == 0
    md = (tmp_path / "out" / "leaderboard.md").read_text()
    assert "## Cost profile of this machine" in md and "| new tokens n | T(n) ms" in md
    rows = _table_rows(md, "| Method | tau | mean draft | predicted | measured |")
    assert rows[0][0] == "pld" and rows[0][3] == f"{expected:.2f}x"


def test_table_md_escapes_pipes() -> None:
    from specbench.reports.leaderboard.tables import Table

    assert "a\\|b" in table_md(Table("t", ["x"], [["a|b"]], [[None]]))


def test_cli_errors(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["leaderboard", str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 2
    assert "run folder not found" in capsys.readouterr().err


def test_forward_curve_on_tiny_model_and_interpolation() -> None:
    from conftest import make_tiny_model
    from specbench.profiling.profile import latency
    from specbench.profiling.measure import measure_forward_curve

    curve = measure_forward_curve(make_tiny_model("llama"), context_len=64, sizes=(1, 2, 4), repeats=2, warmup=1)
    assert sorted(curve) == [1, 2, 4] and all(t > 0 for t in curve.values())
    prof = make_profile({1: 1.0, 2: 2.0, 4: 3.0}, {}, 64, {})
    assert latency(prof, 3) == pytest.approx(2.5)  # linear between measured sizes
    assert latency(prof, 6) == pytest.approx(4.0)  # linear extrapolation past the last size
