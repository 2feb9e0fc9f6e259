"""The cost profile: per-backend curves side by side and the bandwidth floor."""
import pytest
import torch

from conftest import make_tiny_model
from specbench.profiling.profile import make_profile, profile_table
from specbench.profiling.measure import measure_forward_curve, measure_read_bandwidth, weight_bytes_per_forward


def test_weight_bytes_count_tied_head_once_and_skip_untied_input_embedding():
    untied = make_tiny_model("llama")  # 64 x 32 input table, not tied to the head
    total = sum(p.numel() for p in untied.parameters()) * 4
    assert weight_bytes_per_forward(untied) == total - 64 * 32 * 4
    tied = make_tiny_model("gpt2")  # GPT-2 ties its head to the input table: read once, by the head
    assert tied.lm_head.weight.data_ptr() == tied.transformer.wte.weight.data_ptr()
    unique = {p.data_ptr(): p.numel() for p in tied.parameters()}
    assert weight_bytes_per_forward(tied) == sum(unique.values()) * 4


def test_profile_table_shows_backends_side_by_side_with_floor():
    fast = {1: 0.020, 2: 0.022, 4: 0.030}
    ref = {1: 0.040, 2: 0.070, 4: 0.080}
    floor = {"weight_bytes": 538e6, "read_bytes_per_s": 29e9, "floor_s": 538e6 / 29e9}
    prof = make_profile(fast, {"id": "m"}, 256, {}, {"fast": fast, "reference": ref}, floor)
    assert prof["backend"] == "fast" and prof["latency_s"]["2"] == 0.022
    headers, rows = profile_table(prof)
    assert headers == ["new tokens n", "fast T(n) ms", "fast T(n)/T(1)", "reference T(n) ms", "reference T(n)/T(1)"]
    assert rows[1] == ["2", "22.00", "1.10", "70.00", "1.75"]
    assert rows[-1][0] == "floor (1)" and rows[-1][2] == "T(1) = 1.08x floor" and rows[-1][4] == "T(1) = 2.16x floor"
    old_style = make_profile(fast, {}, 256, {})  # profiles written before backends keep their table
    assert profile_table(old_style)[0][1] == "T(n) ms"


def test_curve_per_backend_and_bandwidth_are_measured():
    model = make_tiny_model("qwen2")
    for backend in ("reference", "fast"):
        curve = measure_forward_curve(model, context_len=32, sizes=(1, 3), repeats=1, warmup=1, backend=backend)
        assert sorted(curve) == [1, 3] and all(t > 0 for t in curve.values())
    assert 1e8 < measure_read_bandwidth(torch.device("cpu"), megabytes=16, repeats=2) < 1e13
    with pytest.raises(ValueError, match="unknown backend"):
        measure_forward_curve(model, context_len=8, sizes=(1,), backend="nope")


@pytest.mark.parametrize("backend", ["fast", "reference"])
def test_breakdown_finds_the_matrix_products_of_either_backend(backend: str) -> None:
    from conftest import make_tiny_model
    from specbench.profiling.breakdown import breakdown_text, measure_breakdown

    parts = measure_breakdown(make_tiny_model("llama", seed=0), context_len=16, forwards=3, backend=backend)
    assert parts is not None and set(parts) == {"wall", "matrix", "other_ops", "overhead"}
    assert parts["matrix"] > 0 and parts["other_ops"] > 0  # packed and plain linears are both recognised
    assert parts["overhead"] >= 0 and parts["wall"] > 0
    text = breakdown_text(parts, weight_bytes=10**6, floor_s=parts["matrix"] / 2)
    assert "2.00x the floor" in text


def test_prediction_charges_auxiliary_rows_like_draft_rows() -> None:
    from specbench.profiling.cost_profile import cost_function
    from specbench.reports.prediction import predicted_seconds
    from specbench.results.record import Record

    cost = cost_function({"latency_s": {"1": 0.01, "8": 0.02, "32": 0.04}})
    rec = Record("m", "t", "T", "1", "1", "", 1, 0, 5, 9, 1.0, 3, 0.0, 0.0, accept_lengths=[1, 4, 4],
                 draft_sizes=[0, 7, 7], draft_times_s=[0.0, 0.0, 0.0], prefill_time_s=0.5)
    assert predicted_seconds(rec, cost) == pytest.approx(0.5 + 2 * 0.02)
    rec.aux_sizes = [0, 24, 24]
    assert predicted_seconds(rec, cost) == pytest.approx(0.5 + 2 * 0.04)
