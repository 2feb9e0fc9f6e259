"""``scripts/gpu_check.py`` in its CPU smoke mode (what CI runs, about 50 s on 2 cores), and its verdicts:
a MISMATCH or a crashing step makes it exit 1 with the next steps still run; a step out of time says so."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import gpu_check  # noqa: E402
from gpucheck.exactness import count_classes  # noqa: E402


def test_cpu_smoke_mode_passes_and_writes_its_summary(tmp_path: Path, monkeypatch) -> None:
    import conftest

    # the device profile step times a model of the embedded shape (135M random weights), a few forwards of it in
    # smoke mode (seconds): the suite's guard against profiling real-size models lets this one through
    monkeypatch.setattr(conftest, "PROFILE_PARAMETER_LIMIT", 200_000_000)
    assert gpu_check.main(["--device", "cpu", "--out", str(tmp_path), "--only", "eager"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [s["status"] for s in summary["steps"]] == ["passed"] * 6
    exact = summary["steps"][1]["figures"]
    assert {(c["family"], c["dtype"]) for c in exact["cells"]} == {
        (f, d) for f in ("llama", "qwen2", "gpt2", "neox") for d in ("float32", "bfloat16", "float16")}
    from specbench.plugins.registry import METHODS
    assert all(set(c["methods"]) == set(METHODS.names()) - {"ar"} for c in exact["cells"])  # every method checked
    cli = summary["steps"][2]["figures"]
    assert cli["batch_sizes"] == [1, 4] and "pld@auto" in cli["methods"] and cli["ttft_s"] > 0
    ratio = summary["steps"][3]["figures"]["ratio"]
    assert set(ratio) == {"32", "128"} and all(r["1"] == 1.0 and "64" in r for r in ratio.values())
    from specbench.profiling.profile import load_profile
    assert set(load_profile(tmp_path / "profile.json")["latency_by_context_s"]["128"]) == {str(n) for n in range(1, 65)}
    assert_embedded_profile(tmp_path / "device-profile-embedded.json", summary["steps"][4]["figures"])
    visits = summary["steps"][5]["figures"]
    assert [r["prompt"] for r in visits["rows"]] == [61, 161, 307] and visits["cudnn_sdp"] is False
    assert all(len(r["step_ms"]) == 2 and min(r["step_ms"]) > 0 for r in visits["rows"])
    assert "First visit -> second" in (tmp_path / "summary.md").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["device-profile-embedded.json", "profile.json",
                                                         "summary.json", "summary.md"]
    assert "| pld | 0 / 0 of" in (tmp_path / "summary.md").read_text()


def test_cpu_smoke_of_the_compiled_steps(tmp_path: Path) -> None:
    """``--only compiled``: T(n) compiled and eager with the floor, the same CLI run on both backends (exact, a
    speedup per method, what was compiled, before any timing), and the first exactness cell through it."""
    p = gpu_check.parse_args(["--device", "cpu"])
    assert p.only == "all"
    status = gpu_check.main(["--device", "cpu", "--out", str(tmp_path), "--only", "compiled"])
    summary = json.loads((tmp_path / "summary.json").read_text())
    steps = {s["name"]: s for s in summary["steps"]}
    assert list(steps) == ["environment", "compiled T(n)", "compiled cli", "compiled exactness"] and status == 0
    t = steps["compiled T(n)"]["figures"]
    assert set(t["compiled_ms"]) == set(t["eager_ms"]) == {"1", "2", "4"} and t["floor_ms"] > 0
    assert json.loads((tmp_path / "compiled-t-of-n.json").read_text())["floor_ms"] == t["floor_ms"]
    cli = steps["compiled cli"]
    assert cli["status"] == "passed", cli["error"]
    for backend in ("fast", "compiled"):
        assert cli["figures"][backend]["mismatch"] == 0 and set(cli["figures"][backend]["speedup"]) == {"pld", "eagle"}
    assert cli["figures"]["compiled"]["compiled"][0]["first_use"] == 0
    assert cli["figures"]["compiled"]["compiled"][0]["shapes"] >= 4
    exact = steps["compiled exactness"]
    assert exact["figures"]["mismatches"] == 0 and exact["figures"]["cells"][0]["backend"] == "compiled"
    assert "swift" not in exact["figures"]["cells"][0]["methods"] and "pld" in exact["figures"]["cells"][0]["methods"]


def assert_embedded_profile(path: Path, figures: dict) -> None:
    """The check's device profile loads, is of the shape a run of the embedded model records (tokenizer hash
    included), in float32, and prices every drafter that runs a model of its own (or the target)."""
    from gpucheck.embedded_record import recorded_shape
    from specbench.profiling.device_profile import load_device_profile
    from specbench.profiling.model_shape import shape_difference

    prof = load_device_profile(path)
    assert prof["model"]["shape"] == recorded_shape() and prof["dtype"] == "float32"
    assert shape_difference(recorded_shape(), prof["model"]["shape"]) is None and prof["model"]["id"] == "embedded"
    from specbench.profiling.draft_cost import DRAFT_COSTS
    assert {e["method"] for e in prof["drafters"].values()} == set(DRAFT_COSTS.names()) >= {"sps", "eagle", "swift"}
    assert list(prof["target"]["latency_by_context_s"]) == ["16"] and figures["missing_drafters"] == []
    assert figures["files"] == ["device-profile-embedded.json"] and figures["dtypes"]["float32"]["t1_ms"]["16"] > 0


def test_the_recorded_embedded_shape_is_the_embedded_models(embedded) -> None:
    """``embedded_shape.json`` is the shape a CPU run of the embedded model records in its manifest, tokenizer
    hash included, so the GPU check's profile of it is accepted by ``specbench project`` for such a run."""
    from gpucheck.embedded_record import recorded_shape
    from specbench.profiling.model_shape import shape_of_config

    assert recorded_shape() == shape_of_config(embedded.model.config, embedded.tokenizer)


def test_mismatch_and_crash_exit_1_and_the_next_steps_still_run(tmp_path: Path, monkeypatch) -> None:
    import gpucheck.exactness as exactness

    monkeypatch.setattr(exactness, "run_cell", lambda root, family, dtype, *a: {
        "family": family, "dtype": dtype, "missing": [], "seconds": 0.1,
        "methods": {"pld": {"exact": 1, "tie": 1, "MISMATCH": 1}}})
    ran = []
    monkeypatch.setattr(gpu_check, "cli", lambda *a: ran.append("cli") or 1 / 0)
    monkeypatch.setattr(gpu_check, "cost_profile", lambda *a: ran.append("profile") or ("passed", {}))
    monkeypatch.setattr(gpu_check, "device_profile", lambda *a: ran.append("device") or ("passed", {}))
    monkeypatch.setattr(gpu_check, "first_visit", lambda *a: ran.append("visit") or ("passed", {}))
    assert gpu_check.main(["--device", "cpu", "--out", str(tmp_path)]) == 1
    steps = {s["name"]: s for s in json.loads((tmp_path / "summary.json").read_text())["steps"]}
    assert steps["exactness"]["status"] == "failed" and steps["exactness"]["error"].startswith("12 MISMATCH")
    assert steps["cli"]["status"] == "crashed" and steps["cli"]["error"] == "ZeroDivisionError: division by zero"
    assert ran == ["cli", "profile", "device", "visit"] and steps["cost profile"]["status"] == "passed"
    assert "| pld | 4 / 4 of 12 | 4 / 4 of 12 | 4 / 4 of 12 |" in (tmp_path / "summary.md").read_text()


def test_a_step_past_its_budget_stops_and_says_so(monkeypatch) -> None:
    import gpucheck.exactness as exactness

    monkeypatch.setattr(exactness, "run_cell", lambda *a: pytest.fail("ran past its budget"))
    status, figures = gpu_check.exactness(Path("."), "cpu", {**gpu_check.MODES["cpu"], "exact_budget_s": -1})
    assert status == "stopped" and "budget" in figures["error"] and figures["cells"] == []


def test_lossless_classes_counted_per_method() -> None:
    from types import SimpleNamespace as R

    recs = [R(method="ar", lossless_class=None), R(method="pld", lossless_class="exact"),
            R(method="pld", lossless_class="MISMATCH"), R(method="sps", lossless_class="tie")]
    assert count_classes(recs) == {"pld": {"exact": 1, "tie": 0, "MISMATCH": 1},
                                   "sps": {"exact": 0, "tie": 1, "MISMATCH": 0}}


def test_unknown_device_is_one_line(capsys) -> None:
    with pytest.raises(SystemExit) as e:
        gpu_check.main(["--device", "tpu"])
    assert e.value.code == 2 and "--device must be cuda[:N] or cpu, got 'tpu'" in capsys.readouterr().err


def test_a_first_visit_slower_than_the_limit_fails(monkeypatch) -> None:
    import gpucheck.first_visit as first_visit

    rows = [{"prompt": 61, "ttft_ms": [50.0, 3.6], "step_ms": [38.7, 3.0]}]  # cuDNN attention on an H200
    monkeypatch.setattr(first_visit, "measure_visits", lambda *a: {"rows": rows, "worst_step_ratio": 12.9})
    status, figures = gpu_check.first_visit(Path("."), "cpu", gpu_check.MODES["cpu"])
    assert status == "failed" and "12.9x" in figures["error"]
    monkeypatch.setattr(first_visit, "measure_visits", lambda *a: {"rows": rows, "worst_step_ratio": 1.1})
    assert gpu_check.first_visit(Path("."), "cpu", gpu_check.MODES["cpu"])[0] == "passed"
