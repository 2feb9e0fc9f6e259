"""``specbench project`` (issue 69): a run's per-step records priced with another machine's device profile.

The records here are constructed: the same greedy steps (accepted lengths, drafts) timed on two made-up machines
whose costs are bilinear in rows and context, so the profiles' piecewise-linear curves hold them exactly and the
wall times are computed in closed form, independently of the projection's code. Projecting the run timed on
machine A onto B's profile must then give B's measured speedup (and A's onto A its own).
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from specbench.cli import main
from specbench.errors import ConfigError
from specbench.profiling.device_profile import ProfileParts, load_device_profile, make_device_profile
from specbench.profiling.draft_cost import drafter_identity
from specbench.reports.projection_output import projection_csv, projection_json, projection_text
from specbench.reports.projection_table import build_projection, onto_profile
from specbench.results.loaded_run import Run
from specbench.results.record import Record

SHAPE = {"family": "llama", "hidden": 64, "layers": 2, "heads": 4, "kv_heads": 4, "intermediate": 128,
         "vocab": 512, "tokenizer": "abcd"}
CONTEXTS, SIZES, DEPTHS, LENGTHS = (128, 512), (1, 2, 4, 8, 16), (1, 2, 4, 8, 16), (16, 64, 256, 1024)


@dataclass(frozen=True)
class Machine:
    """A made-up machine: T(n, c) = a + b n + e n c, P(L) = p0 + p1 L, a draft step d0 + d1 depth, host h."""

    a: float
    b: float
    e: float
    p0: float
    p1: float
    d0: float
    d1: float
    host: float

    def t(self, n: float, c: float) -> float:
        return self.a + self.b * n + self.e * n * c

    def draft(self, depth: int) -> float:
        return self.d0 + self.d1 * depth


A = Machine(0.010, 0.002, 1e-6, 0.02, 1e-4, 0.001, 0.0005, 0.004)
B = Machine(0.004, 0.0001, 2e-7, 0.01, 2e-5, 0.0004, 0.0001, 0.002)  # a flatter T(n), a faster host


def sps_config() -> dict:
    from specbench.run.methods_factory import method_config

    return dataclasses.asdict(method_config("sps", {}))


def eagle_config() -> dict:
    from specbench.run.methods_factory import method_config

    return dataclasses.asdict(method_config("eagle", {}))


def profile_of(m: Machine, shape: dict | None = None, dtype: str = "float32", drafters: bool = True) -> dict:
    entries = {}
    for method, config in (("sps", sps_config()), ("eagle", eagle_config())):
        ident = drafter_identity(method, config)
        entries[ident.key] = {"method": method, "shape": ident.shape, "kind": "model",
                              "steps": {str(d): {"size": d, "s": m.draft(d)} for d in DEPTHS}}
    return make_device_profile(ProfileParts(
        machine={"cpu": f"made-up CPU {m.a}"}, backend={"name": "fast", "key": "fast", "threads": 2}, dtype=dtype,
        model={"id": "tiny", "shape": shape or SHAPE},
        latency_by_context_s={c: {n: m.t(n, c) for n in SIZES} for c in CONTEXTS},
        prefill_s={n: m.p0 + m.p1 * n for n in LENGTHS}, drafters=entries if drafters else {},
        host_s=m.host, created="2026-01-01T00:00:00+00:00"))


# per method: (accept_lengths, draft_sizes, draft_depths) of one generation of MAX_NEW tokens; pld's drafting takes
# 0.25 host units, sps's chain its drafted depth's seconds, eagle's tree the seconds of the depth the engine asked
# for (the tokens left but one: its work follows the asked depth, not the depth its best path reached)
MAX_NEW = 12
STEPS = {"ar": ([1] * 12, [0] * 12, [0] * 12), "pld": ([1, 3, 2, 4, 1, 1], [0, 3, 3, 4, 2, 2], [0, 3, 3, 4, 2, 2]),
         "sps": ([1, 4, 3, 4], [0, 4, 4, 4], [0, 4, 4, 4]), "eagle": ([1, 3, 4, 2, 2], [0, 10, 10, 8, 6], [0, 3, 4, 2, 1])}


def drafting(method: str, m: Machine, acc: list[int], depths: list[int]) -> list[float]:
    asked = [MAX_NEW - sum(acc[:i]) - 1 for i in range(len(acc))]
    per = {"ar": lambda i: 0.0, "pld": lambda i: 0.25 * m.host, "sps": lambda i: m.draft(depths[i]),
           "eagle": lambda i: m.draft(asked[i])}[method]
    return [0.0] + [per(i) for i in range(1, len(acc))]


def record(method: str, q: int, m: Machine, prompt: int) -> Record:
    acc, sizes, depths = STEPS[method]
    drafts = drafting(method, m, acc, depths)
    # the step's context: the prompt plus every token emitted before it (the prefill's included)
    wall = m.p0 + m.p1 * prompt + sum(m.t(1 + s, prompt + sum(acc[:i])) + drafts[i]
                                      for i, s in enumerate(sizes) if i > 0)
    return Record(method, "gsm8k", "GSM8K", "1", str(q), "", 1, 0, prompt, sum(acc), wall, len(acc), sum(drafts),
                  0.0, accept_lengths=list(acc), draft_sizes=list(sizes), draft_times_s=drafts,
                  output_ids=list(range(5, 5 + sum(acc))), draft_depths=list(depths))


def run_on(m: Machine, methods=("ar", "pld", "sps", "eagle"), configs: dict | None = None) -> Run:
    recs = [record(meth, q, m, prompt) for q, prompt in ((1, 150), (2, 300)) for meth in methods]
    manifest = {"config": {"methods": list(methods), "max_new_tokens": MAX_NEW},
                "model": {"dtype": "float32", "shape": SHAPE}, "host_s": m.host,
                "method_configs": configs or {"sps": sps_config(), "pld": {}, "eagle": eagle_config()}}
    return Run(Path("results/made-up"), manifest, recs)


def measured(run: Run, method: str) -> float:
    recs = [r for r in run.records if r.method == method]
    ar = [r for r in run.records if r.method == "ar"]
    return (sum(r.new_tokens for r in recs) / sum(r.wall_time_s for r in recs)) / (
        sum(r.new_tokens for r in ar) / sum(r.wall_time_s for r in ar))


def test_projection_equals_the_measured_speedup_where_costs_follow_the_profile():
    on_a, on_b = run_on(A), run_on(B)
    proj = build_projection(on_a, [onto_profile("a.json", profile_of(A)), onto_profile("b.json", profile_of(B))])
    cells = {(r.method, r.subtask): r for r in proj.rows}
    for method in ("pld", "sps", "eagle"):
        row = cells[method, "Overall"]
        assert row.measured == pytest.approx(measured(on_a, method), rel=1e-9)
        assert row.projected[0].speedup == pytest.approx(measured(on_a, method), rel=1e-9)
        assert row.projected[1].speedup == pytest.approx(measured(on_b, method), rel=1e-9)
        assert cells[method, "GSM8K"].projected[1].speedup == pytest.approx(measured(on_b, method), rel=1e-9)
    assert abs(measured(on_b, "sps") / measured(on_a, "sps") - 1) > 0.05  # (the two machines do differ)


def test_every_output_format_labels_each_projected_figure_with_its_profile():
    proj = build_projection(run_on(A), [onto_profile("b.json", profile_of(B))])
    label = "made-up CPU 0.004, fast 2 threads, float32, 2026-01-01"
    text = projection_text(proj)
    body = [ln for ln in text.splitlines() if ln.startswith(("| pld", "| sps", "| eagle"))]
    assert body and all(ln.count("x projected") == 1 for ln in body) and f"projected on {label}" in text
    data = projection_json(proj)
    assert data["profiles"][0]["created"] == "2026-01-01T00:00:00+00:00" and data["profiles"][0]["dtype"] == "float32"
    assert all(c["kind"] == "projected" and c["profile"] == label for r in data["rows"] for c in r["projected"])
    lines = projection_csv(proj).splitlines()[1:]
    projected = [ln for ln in lines if ",projected," in ln]
    assert len(projected) == len(lines) // 2 and all(label in ln for ln in projected)


def test_budget_auto_rows_project_the_best_fixed_budget_in_hindsight_labelled_so():
    configs = {"sps": sps_config(), "pld": {"budget": "auto"}, "eagle": eagle_config()}
    proj = build_projection(run_on(A, configs=configs), [onto_profile("b.json", profile_of(B))])
    pld = [r for r in proj.rows if r.method == "pld"]
    assert all(r.projected[0].basis.startswith("best fixed budget in hindsight (budget=") for r in pld)
    assert all(r.projected[0].speedup and r.projected[0].speedup > 0 for r in pld)
    assert any("pld ran with budget=auto" in n for n in proj.notes)
    assert "projected*" in projection_text(proj)


def one_line_refusal(run: Run, profile: dict) -> str:
    with pytest.raises(ConfigError) as e:
        build_projection(run, [onto_profile("b.json", profile)])
    assert "\n" not in str(e.value)
    return str(e.value)


def test_each_refusal_is_one_line():
    run = run_on(A)
    assert "layers 2 != 30" in one_line_refusal(run, profile_of(B, shape={**SHAPE, "layers": 30}))
    assert "tokenizer" in one_line_refusal(run, profile_of(B, shape={**SHAPE, "tokenizer": "ffff"}))
    assert "in bfloat16, run made-up in float32" in one_line_refusal(run, profile_of(B, dtype="bfloat16"))
    missing = one_line_refusal(run, profile_of(B, drafters=False))
    assert "lacks the drafter sps" in missing and "--drafters sps" in missing
    cut = run_on(A)
    cut.records[1] = dataclasses.replace(cut.records[1], draft_times_s=[])
    assert "no per-step records" in one_line_refusal(cut, profile_of(B))
    no_host = run_on(A)
    del no_host.manifest["host_s"]
    assert "--here PROFILE" in one_line_refusal(no_host, profile_of(B))


def write_run(folder: Path, run: Run) -> None:
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps(run.manifest), encoding="utf-8")
    (folder / "records.jsonl").write_text("".join(json.dumps(r.to_json()) + "\n" for r in run.records),
                                          encoding="utf-8")


def test_project_command_writes_three_labelled_files_and_refuses_in_one_line(tmp_path, capsys):
    write_run(tmp_path / "run", run_on(A))
    (tmp_path / "b.json").write_text(json.dumps(profile_of(B)), encoding="utf-8")
    assert load_device_profile(tmp_path / "b.json")["host_s"] == B.host
    assert main(["project", str(tmp_path / "run"), "--onto", str(tmp_path / "b.json"), "--out",
                 str(tmp_path / "out")]) == 0
    for name in ("projection.md", "projection.json", "projection.csv"):
        assert "projected" in (tmp_path / "out" / name).read_text(encoding="utf-8")
    capsys.readouterr()
    (tmp_path / "bf16.json").write_text(json.dumps(profile_of(B, dtype="bfloat16")), encoding="utf-8")
    assert main(["project", str(tmp_path / "run"), "--onto", str(tmp_path / "bf16.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("specbench project: error:") and "\n" not in err
    (tmp_path / "bad.json").write_text(json.dumps({"schema": "specbench-device-profile/1", "target": {}}))
    assert main(["project", str(tmp_path / "run"), "--onto", str(tmp_path / "bad.json")]) == 2
    assert "not a valid device profile" in capsys.readouterr().err


def test_device_profile_measured_on_a_tiny_model_prices_a_run_of_its_shape(tmp_path):
    """The measured file validates, names the tiny model's shape, and its sps entry is the one a run's default sps
    config asks for (the timings themselves are not checked: a unit test does not time the machine)."""
    import torch

    from conftest import make_tiny_model
    from specbench.engine.backends.torch_backends import resolve_backend
    from specbench.models.loading import LoadedModel
    from specbench.run.device_measure import DeviceRequest, measure_device_profiles
    from specbench.profiling.device_profile_checks import structure_problem

    model = make_tiny_model("llama")
    lm = LoadedModel(model, None, "tiny", "h", torch.device("cpu"), "float32", False)
    req = DeviceRequest((16, 32), (1, 2), 1, 32, ("sps",), {}, depths=(1, 2))
    profs = measure_device_profiles(lm, {"fast": resolve_backend("fast", lm.device, torch.float32)}, req, tmp_path)
    prof = profs["fast"]
    # (its structure: whether its one-repeat timings make physical sense depends on the suite's load beside it)
    assert structure_problem(prof) is None
    assert prof["model"]["shape"]["layers"] == model.config.num_hidden_layers and prof["dtype"] == "float32"
    assert drafter_identity("sps", sps_config()).key in prof["drafters"]
    assert sorted(prof["target"]["latency_by_context_s"]) == ["16", "32"] and prof["host_s"] > 0
