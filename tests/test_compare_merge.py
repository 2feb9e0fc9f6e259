"""``specbench compare`` and ``specbench merge`` on fabricated run folders."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from specbench.cli import main
from specbench.reports.compare import NotComparable, compare_runs, differences
from specbench.results.merge import MergeError, merge_runs
from specbench.catalog import OVERALL
from specbench.results.loaded_run import load_run
from specbench.results.stats import run_stats
from test_stats import write_fake_run

GPU_HW = {"cpu": "Fake Xeon", "cores": 64, "gpu": "Fake A100", "gpu_memory_gb": 80.0, "cuda": "12.4", "driver": "550.1"}


def _edit_manifest(run: Path, **changes: object) -> None:
    m = json.loads((run / "manifest.json").read_text())
    m.update(changes)
    (run / "manifest.json").write_text(json.dumps(m))


def test_compare_two_machines(tmp_path: Path) -> None:
    a = write_fake_run(tmp_path / "cpu", {"pld": 1.5})
    b = write_fake_run(tmp_path / "gpu", {"pld": 1.1}, hardware=GPU_HW, ar_seconds_per_token=0.002, seed=1)
    tables, diffs = compare_runs([load_run(a), load_run(b)], n_boot=100)
    assert diffs == []
    fp = tables[0]
    assert fp.headers == ["", "A", "B"]
    rows = {r[0]: r[1:] for r in fp.rows}
    assert rows["GPU"] == ["-", "Fake A100"] and rows["CUDA / driver (its CUDA) / cuDNN"] == ["- / - (-) / -", "12.4 / 550.1 (-) / -"]
    ar = {r[0]: r for r in tables[1].rows}
    assert float(ar[OVERALL][3]) == pytest.approx(5.0, rel=0.1)  # GPU AR is 5x faster
    pld = {r[0]: r for r in tables[2].rows}
    assert pld[OVERALL][1].startswith("1.5") and pld[OVERALL][2].startswith("1.1")
    assert float(pld[OVERALL][-1]) == pytest.approx(1.1 / 1.5, rel=0.05)


def test_compare_views_by_model_and_dtype(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    import matplotlib.image as mpimg

    # the same method on a small and a large model (fp32) and on the small one in bf16
    small = write_fake_run(tmp_path / "s", {"pld": 1.5, "rest": 1.2}, model="tiny-7B")
    large = write_fake_run(tmp_path / "l", {"pld": 2.0, "rest": 1.4}, model="tiny-13B", seed=1)
    half = write_fake_run(tmp_path / "h", {"pld": 1.25, "rest": 1.1}, model="tiny-7B", dtype="bfloat16", seed=2)
    runs = [load_run(p) for p in (small, large, half)]
    tables, diffs = compare_runs(runs, n_boot=100)
    assert diffs == []
    by = {t.title: t for t in tables}
    model = by["Speedup per method by model (Overall, 95% CI)"]
    assert model.headers[:4] == ["Method", "tiny-7B · float32 speedup", "tiny-13B · float32 speedup",
                                 "tiny-7B · bfloat16 speedup"]
    rows = {r[0]: r for r in model.rows}
    assert [float(v.split("x")[0]) for v in rows["pld"][1:4]] == pytest.approx([1.5, 2.0, 1.25], rel=0.06)
    assert rows["rest"][-3:] == ["exact", "exact", "exact"]
    dtype = by["Speedup per method by dtype (Overall, 95% CI)"]
    assert dtype.headers[1:4] == ["float32 · tiny-7B speedup", "float32 · tiny-13B speedup", "bfloat16 · tiny-7B speedup"]
    # two runs on one model and dtype get no view; the plot still labels runs
    assert not any("by model" in t.title for t in compare_runs(runs[:1] * 2, n_boot=0)[0])
    plot = tmp_path / "cmp.png"
    assert main(["compare", str(small), str(large), str(half), "--bootstrap", "20", "--plot", str(plot)]) == 0
    assert "Speedup per method by dtype" in capsys.readouterr().out
    img = mpimg.imread(str(plot))
    assert img.shape[1] > 300 and float(img[..., :3].std()) > 0.05  # a drawn figure, not a blank canvas


def test_compare_refuses_different_work_unless_forced(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    a = write_fake_run(tmp_path / "a", {"pld": 1.5})
    b = write_fake_run(tmp_path / "b", {"pld": 1.5}, n_questions=5, max_new_tokens=64)
    _edit_manifest(b, method_configs={"ar": {}, "pld": {"num_draft": 5}})
    diffs = differences([load_run(a), load_run(b)])
    assert any("task gsm8k questions differ (1 only in the first, 0 only in the second)" in d for d in diffs)
    assert any("max_new_tokens 32 != 64" in d for d in diffs)
    assert any("method pld config" in d for d in diffs)
    with pytest.raises(NotComparable, match="--force"):
        compare_runs([load_run(a), load_run(b)])
    assert main(["compare", str(a), str(b)]) == 2
    assert "max_new_tokens 32 != 64" in capsys.readouterr().err
    assert main(["compare", str(a), str(b), "--force", "--bootstrap", "10", "--out", str(tmp_path / "c.md")]) == 0
    assert "compared despite differences" in (tmp_path / "c.md").read_text()


def _split_into_shards(full: Path, root: Path, n: int) -> list[Path]:
    """Round-robin the (task, question) pairs of a run into n shard folders, like ``--shard k/N``."""
    m = json.loads((full / "manifest.json").read_text())
    recs = [json.loads(x) for x in (full / "records.jsonl").read_text().splitlines()]
    pairs = [(t, q) for t, qs in m["questions"].items() for q in qs]
    owner = {p: i % n for i, p in enumerate(pairs)}
    out = []
    for k in range(n):
        d = root / f"shard{k + 1}of{n}"
        d.mkdir(parents=True)
        mine = [r for r in recs if owner[(r["task"], r["question_id"])] == k]
        (d / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in mine))
        qs = {t: [q for q in ids if owner[(t, q)] == k] for t, ids in m["questions"].items()}
        (d / "manifest.json").write_text(json.dumps(
            m | {"questions": qs, "shard": [k + 1, n], "timestamp": f"t{k}", "run_name": d.name, "config_digest": f"d{k}",
                 "data_dir": f"/node{k}/data"}))
        out.append(d)
    return out


def test_merge_shards_reproduces_the_full_run(tmp_path: Path) -> None:
    full = write_fake_run(tmp_path / "full", {"pld": 1.5}, n_questions=5)
    shards = _split_into_shards(full, tmp_path / "shards", 3)
    assert main(["merge", *map(str, shards), "--out", str(tmp_path / "merged")]) == 0
    merged = load_run(tmp_path / "merged")
    assert len(merged.records) == len(load_run(full).records)
    assert {t: sorted(q) for t, q in merged.manifest["questions"].items()} == \
        {t: sorted(q) for t, q in load_run(full).manifest["questions"].items()}
    assert [x["shard"] for x in merged.manifest["merged_from"]] == [[1, 3], [2, 3], [3, 3]]
    assert merged.manifest["shard"] is None
    a = run_stats(load_run(full), n_boot=0)["pld"][OVERALL]
    b = run_stats(merged, n_boot=0)["pld"][OVERALL]
    assert b.speedup == pytest.approx(a.speedup) and b.tau == pytest.approx(a.tau)
    # merging into an existing run is refused
    with pytest.raises(MergeError, match="already holds a run"):
        merge_runs(shards, tmp_path / "merged")


def test_merge_refuses_mismatched_or_incomplete_shards(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    full = write_fake_run(tmp_path / "full", {"pld": 1.5}, n_questions=4)
    s1, s2, s3 = _split_into_shards(full, tmp_path / "shards", 3)
    with pytest.raises(MergeError, match=r"shards \[1, 2\] do not cover 1..3"):
        merge_runs([s1, s2], tmp_path / "m1")
    _edit_manifest(s2, model={"id": "tiny-fake", "hash": "OTHER", "dtype": "float32", "tf32": False},
                   hardware=GPU_HW)
    assert main(["merge", str(s1), str(s2), str(s3), "--out", str(tmp_path / "m2")]) == 2
    err = capsys.readouterr().err
    assert "model.hash differ" in err and "hardware." in err
    assert not (tmp_path / "m2").exists()
    # forced: merged, differences recorded in the manifest
    merge_runs([s1, s2, s3], tmp_path / "m3", force=True)
    assert load_run(tmp_path / "m3").manifest["merge_forced_differences"]
    # the same shard twice: overlapping records are an error even when forced
    with pytest.raises(MergeError, match="overlapping shards"):
        merge_runs([s1, s1], tmp_path / "m4", force=True)
