"""Fault injection (issue 23, items 8-13): bad profiles, hostile YAML, non-finite numbers, odd run folders,
a non-UTF-8 locale and a misplaced cache: each one line and exit 2 (or, for output, a degraded print)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fault_helpers import ROOT, cli, fake_run, record, run_args
from tiny_model_dir import save_tiny_model


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


# -- 8: the cached cost profile ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def profiled_cache(tiny_dir, tmp_path_factory) -> Path:
    """A cache holding a cost profile for the tiny model, written by a ``--budget auto`` run (its curve injected:
    what is tested is the cached file, not a measurement)."""
    import specbench.profiling.cost_profile as cost_profile
    from specbench.cli import main

    cache = tmp_path_factory.mktemp("profiled") / "cache"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPECBENCH_CACHE", str(cache))
        mp.setattr(cost_profile, "measure_forward_curve", lambda model, context, sizes, *a, **k: {
            n: 0.01 + 0.001 * n + context * 1e-6 for n in sizes})
        # a module fixture runs before the function-scoped conftest patch: unpatched, a busy moment while the full
        # suite runs kept the profile as ``<key>.busy.json``, which no run reads (the damage test then passed code 0)
        mp.setattr(cost_profile, "is_busy", lambda *args: False)
        assert main(run_args(tiny_dir, cache.parent / "out", "r", 4, "--budget", "auto")) == 0
    return cache


@pytest.mark.parametrize("damage", ["context curves a list", "negative latency", "infinite latency", "latency_s a list"])
def test_damaged_cached_profile_is_refused_before_it_reaches_the_run(tiny_dir, profiled_cache, tmp_path, capsys,
                                                                     monkeypatch, damage):
    shutil.copytree(profiled_cache, tmp_path / "cache")
    monkeypatch.setenv("SPECBENCH_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "out"
    (cached,) = (tmp_path / "cache" / "profiles").glob("*.json")
    assert not cached.name.endswith(".busy.json")  # a busy profile is never read: nothing to refuse
    good = json.loads(cached.read_text())
    bad = json.loads(cached.read_text())
    if damage == "context curves a list":
        bad["latency_by_context_s"] = [1, 2]
    elif damage == "negative latency":
        bad["latency_by_context_s"]["512"]["4"] = -0.5
    elif damage == "infinite latency":
        bad["latency_by_context_s"]["128"]["1"] = 1e999
    else:
        bad["latency_s"] = [0.1]
    cached.write_text(json.dumps(bad))
    code, err = cli(run_args(tiny_dir, out, "r", 4, "--budget", "auto"), capsys)
    assert code == 2 and str(cached) in err and "delete it to measure the profile again" in err
    assert not (out / "r" / "profile.json").exists()
    cached.write_text(json.dumps(good))  # repaired: the run works (nothing broken was kept)
    assert cli(run_args(tiny_dir, out, "r", 4, "--budget", "auto"), capsys)[0] == 0
    assert json.loads((out / "r" / "profile.json").read_text()) == good


# -- 9: YAML -----------------------------------------------------------------------------------------
BOMB = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n" for p, c in zip("abcdefgh", "bcdefghi"))


@pytest.mark.parametrize("yaml_text, needle", [
    ("methods: 5\n", "methods: expected a list or a comma-separated string, got 5"),
    ("tasks: {gsm8k: 1}\n", "tasks: expected a list or a comma-separated string"),
    ("methods: [ar, [pld]]\n", "methods: cannot read ['pld'] as str"),
    ("dtype: [a, b]\n", "dtype: cannot read ['a', 'b'] as str"),
    ("allow_mismatch: [1]\n", "allow_mismatch: cannot read [1] as bool"),
    (BOMB + "methods: *i\n", "aliases expand the document to more than 100000 nodes"),
    ("a: &a [*a]\n", "refused"),
    ("x: " + "[" * 5000 + "]" * 5000 + "\n", "refused"),
    ("# " + "x" * (2 << 20) + "\n", "larger than 1024 KiB"),
    ("out_dir: \"res\\0ults\"\n", "out_dir: contains a NUL character"),
    ("temperature: .inf\n", "temperature: expected a finite number, got inf"),
    ("tie_threshold: .nan\n", "tie_threshold: expected a finite number"),
    ("method_options: {pld: {num_draft: 5}, rest: {c: 1}}\n", "--method-opt given for method(s) not in --methods: rest"),
])
def test_hostile_yaml(tmp_path, capsys, monkeypatch, yaml_text, needle):
    monkeypatch.chdir(tmp_path)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml_text)
    start = time.perf_counter()
    code, err = cli(["run", "--config", str(cfg), "--model", str(tmp_path / "none"), "--limit", "1",
                     "--max-new-tokens", "1"], capsys)
    assert code == 2 and needle in err, err
    assert time.perf_counter() - start < 30  # the alias bomb ran 80 s to 5.5 GB before
    assert not (tmp_path / "results").exists()


# -- 10: non-finite numbers --------------------------------------------------------------------------
@pytest.mark.parametrize("flag, value, needle", [
    ("--temperature", "inf", "temperature: expected a finite number, got inf"),
    ("--temperature", "nan", "temperature: expected a finite number"),
    ("--top-p", "inf", "top_p: expected a finite number"),
    ("--tie-threshold=-inf", None, "tie_threshold: expected a finite number"),
    ("--method-opt", "rest.c=1e999", "cannot read"),
])
def test_non_finite_values_refused(tmp_path, capsys, flag, value, needle):
    argv = ["run", "--tasks", "gsm8k", "--limit", "1", "--model", str(tmp_path / "none"), "--out-dir", str(tmp_path),
            "--methods", "rest" if "rest" in (value or "") else "pld", flag, *([value] if value else [])]
    code, err = cli(argv, capsys)
    assert code == 2 and needle in err, err


def test_written_json_is_strict(tmp_path):
    from specbench.files.jsonfile import save_json, strict_json

    assert strict_json({"a": float("inf"), "b": [float("nan"), 1.5]}) == '{"a": null, "b": [null, 1.5]}'
    save_json({"x": float("-inf")}, tmp_path / "p.json")
    assert json.loads((tmp_path / "p.json").read_text(), parse_constant=lambda c: pytest.fail(c)) == {"x": None}


# -- 11: odd run folders and manifests --------------------------------------------------------------
def test_odd_run_folders(tiny_dir, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "file").write_text("x")
    (out / "dangling").symlink_to(tmp_path / "nowhere")
    cases = [
        (run_args(tiny_dir, out, "file"), "exists and is not a folder"),
        (run_args(tiny_dir, out, "dangling"), "is a dangling symbolic link"),
        (run_args(tiny_dir, out, "x" * 300), "--run-name must be a single folder name"),
        (run_args(tiny_dir, out / "file" / "sub", "r"), "is not a folder"),
    ]
    for argv, needle in cases:
        code, err = cli(argv, capsys)
        assert code == 2 and needle in err, (argv[-8:], err)
    assert (out / "file").read_text() == "x" and not (tmp_path / "nowhere").exists()


def test_long_derived_run_name_is_shortened(tmp_path):
    from specbench.config.run_config import RunConfig
    from specbench.run.plan import make_plan, run_dir_for

    methods = tuple(f"pld@v{i}" for i in range(40))
    plan = make_plan(RunConfig(methods=methods, tasks=("gsm8k",), limit=1, out_dir=str(tmp_path)))
    name = run_dir_for(plan).name
    assert len(name) <= 200 and name.startswith("ar-pld@v0-") and len(name.rsplit("_", 1)[1]) == 8


@pytest.mark.parametrize("key, value", [("config", [1, 2]), ("model", "m"), ("questions", [1]),
                                        ("sampling", 5), ("config", {"methods": "ar"})])
@pytest.mark.parametrize("command", ["report", "check"])
def test_ill_typed_manifest(tmp_path, capsys, command, key, value):
    run = fake_run(tmp_path / "run", [record("ar", [1, 2])], {"config_digest": "x", key: value})
    code, err = cli([command, str(run)], capsys)
    assert code == 2 and "manifest.json: not a valid manifest" in err and (key in err)


# -- 12: non-UTF-8 locale ------------------------------------------------------------------------------
def test_report_in_a_non_utf8_locale(tmp_path):
    run = fake_run(tmp_path / "run", [record("ar", [1, 2], category="écriture · 写作", subtask="Écrire"),
                                      record("pld", [1, 2], "exact", category="écriture · 写作", subtask="Écrire")])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHONIO", "PYTHONUTF8"))}
    env.update(LC_ALL="C", PYTHONCOERCECLOCALE="0", PYTHONUTF8="0", PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "specbench.cli", "report", str(run)], capture_output=True, cwd=ROOT,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    assert b"Speedup vs AR" in proc.stdout and b"| ?crire " in proc.stdout  # degraded, not crashed
    assert "| Écrire " in (run / "report.md").read_text(encoding="utf-8")  # files are UTF-8 whatever the locale
    assert "Écrire" in (run / "summary.csv").read_text(encoding="utf-8")


# -- 13: the cache and empty lists -------------------------------------------------------------------
def test_cache_that_is_a_file_fails_at_once(tmp_path, capsys, monkeypatch):
    (tmp_path / "cache").write_text("x")
    monkeypatch.setenv("SPECBENCH_CACHE", str(tmp_path / "cache"))
    start = time.perf_counter()
    code, err = cli(["run", "--tasks", "gsm8k", "--limit", "1", "--out-dir", str(tmp_path / "out")], capsys)
    assert code == 2 and f"SPECBENCH_CACHE={tmp_path / 'cache'}" in err and "is not a folder" in err
    assert time.perf_counter() - start < 20  # before the ~40 s conversion
    monkeypatch.setenv("SPECBENCH_CACHE", str(tmp_path / "cache" / "sub"))
    code, err = cli(["run", "--tasks", "gsm8k", "--limit", "1", "--out-dir", str(tmp_path / "out")], capsys)
    assert code == 2 and "SPECBENCH_CACHE=" in err


@pytest.mark.parametrize("argv, needle", [
    (["--tasks", ""], "--tasks is empty"),
    (["--tasks", ","], "--tasks is empty"),
    (["--methods", ""], "--methods is empty"),
    (["--method-opt", "pld.bogus=1"], "pld: unknown key(s) bogus"),
])
def test_empty_lists_and_unknown_keys(tmp_path, capsys, argv, needle):
    code, err = cli(["run", "--model", str(tmp_path / "none"), "--out-dir", str(tmp_path), *argv], capsys)
    assert code == 2 and needle in err, err
    assert "pld.:" not in err


def test_corrupt_embedded_cache_says_what_to_delete(tmp_path, capsys, monkeypatch):
    import specbench.models.embedded as em

    cache = tmp_path / "cache"
    path = cache / "models" / "smollm2-135m-instruct"
    path.mkdir(parents=True)
    gguf = em.embedded_gguf_path()
    (path / em.STAMP).write_text(json.dumps({"gguf": gguf.name, "size": gguf.stat().st_size, "pinned": True,
                                             "weights_sha256": em.PINNED_SHA256}))
    (path / em.WEIGHTS).write_bytes(b"\0" * 1024)  # truncated to nothing useful
    monkeypatch.setenv("SPECBENCH_CACHE", str(cache))
    code, err = cli(["run", "--tasks", "gsm8k", "--limit", "1", "--out-dir", str(tmp_path / "out")], capsys)
    assert code == 2 and f"delete {path} to convert it again" in err
