"""Outside methods (``--plugins``, entry points): loaded from a file, a folder, a module name or an installed
distribution; recorded in the manifest with a hash of their source; a changed one refuses to resume; a bad one is
one line, exit 2 (``specbench/plugins/outside.py``, ``flag.py``, ``run/plugin_guard.py``)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from fault_helpers import cli, cli_out
from plugin_fixtures import bigram_source, fresh_registries, write_distribution, write_file_plugin, write_package_plugin
from specbench.plugins.discovery import installed_entry_points
from specbench.plugins.flag import load_flag_plugins
from specbench.plugins.outside import PluginSpec, load_plugin, loaded_plugins, source_sha256
from specbench.plugins.registry import METHODS
from specbench.results.run_folder import read_records
from tiny_model_dir import save_tiny_model


@pytest.fixture(autouse=True)
def _registries():
    with fresh_registries():
        yield


def test_file_folder_and_module_plugins_register_and_are_recorded(tmp_path: Path, monkeypatch) -> None:
    file = write_file_plugin(tmp_path / "a", "bigram-file")
    folder = write_package_plugin(tmp_path / "b", "my_pkg", "bigram-folder")
    write_package_plugin(tmp_path / "c", "my_module_plugin", "bigram-module")
    monkeypatch.syspath_prepend(str(tmp_path / "c"))
    origins = load_flag_plugins(["run", "--plugins", str(file), "--plugins", str(folder), "--plugins=my_module_plugin"])
    assert [o.kind for o in origins] == ["file", "folder", "module"]
    assert [o.registered for o in origins] == [("method bigram-file",), ("method bigram-folder",),
                                               ("method bigram-module",)]
    assert {"bigram-file", "bigram-folder", "bigram-module", "pld"} <= set(METHODS.names())
    assert METHODS.get("bigram-folder").config_cls().num_draft == 3  # (its relative import ran)
    assert origins[0].sha256 == source_sha256(file) and len(origins[1].sha256) == 64
    assert origins[2].source == str(tmp_path / "c" / "my_module_plugin")
    assert [p["spec"] for p in loaded_plugins()][-3:] == [str(file), str(folder), "my_module_plugin"]


def test_a_folder_of_files_loads_each_public_file(tmp_path: Path) -> None:
    write_file_plugin(tmp_path, "one-a")
    write_file_plugin(tmp_path, "one-b")
    (tmp_path / "_helper.py").write_text("raise RuntimeError('a private helper is not a plugin')\n")
    assert load_plugin(PluginSpec(str(tmp_path))).registered == ("method one-a", "method one-b")


def test_an_installed_entry_point_is_discovered(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(write_distribution(tmp_path, "bigram_dist", "bigram-installed")))
    found = [ep for ep in installed_entry_points() if ep.name == "bigram-installed"]
    assert [(ep.group, ep.value) for ep in found] == [("specbench.methods", "bigram_dist")]
    origin = load_plugin(PluginSpec(found[0].value, found[0]))
    assert origin.kind == "entry point" and origin.spec == "specbench.methods:bigram-installed"
    assert origin.registered == ("method bigram-installed",) and origin.source == str(tmp_path / "bigram_dist")


def test_a_broken_entry_point_is_one_line(tmp_path: Path, monkeypatch, capsys) -> None:
    import specbench.plugins.discovery as discovery

    write_distribution(tmp_path, "broken_dist", "broken")
    (tmp_path / "broken_dist" / "method.py").write_text("import no_such_module_anywhere\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(discovery, "_loaded", False)
    monkeypatch.setattr(discovery, "_failure", None)
    code, err = cli(["list"], capsys)
    assert code == 2 and "plugin specbench.methods:broken failed to import: ModuleNotFoundError" in err
    assert "method.py:1)" in err


BAD = {
    "raises at import": ("x = 1\nraise RuntimeError('no weights here')\n",
                         "failed to import: RuntimeError: no weights here ({file}:2)"),
    "a name that exists": (bigram_source("pld"), "method 'pld' is registered twice: that name exists already"),
    "registers nothing": ("X = 1\n", "registers nothing"),
    "hangs at import": ("import time\ntime.sleep(60)\n", "did not finish importing within 0.5 s"),
}


@pytest.mark.parametrize("fault", BAD)
def test_a_bad_plugin_is_one_line_exit_2(tmp_path: Path, monkeypatch, capsys, fault: str) -> None:
    source, message = BAD[fault]
    file = tmp_path / "bad_plugin.py"
    file.write_text(source)
    monkeypatch.setenv("SPECBENCH_PLUGIN_DEADLINE_S", "0.5")
    code, err = cli(["list", "--plugins", str(file)], capsys)
    assert code == 2 and message.format(file=file) in err, err


def test_list_names_where_an_outside_method_came_from(tmp_path: Path, capsys) -> None:
    file = write_file_plugin(tmp_path, "bigram-listed")
    code, out, _err = cli_out(["list", "--plugins", str(file)], capsys)
    assert code == 0 and f"bigram-listed\n" not in out and f"plugin: {file}" in out.split("bigram-listed", 1)[1]


def test_a_missing_plugin_is_one_line(capsys) -> None:
    code, err = cli(["list", "--plugins", "no/such/plugin.py"], capsys)
    assert code == 2 and err.endswith("plugin no/such/plugin.py: no such .py file, folder or module")


def _run(model: Path, out: Path, plugin: Path, capsys, *methods: str) -> tuple[int, str]:
    tasks = out.parent / "q.jsonl"
    tasks.write_text("".join(json.dumps({"id": f"q{i}", "turns": [f"Count to {i}, then count again."]}) + "\n"
                             for i in range(2)))
    return cli(["run", "--plugins", str(plugin), "--model", str(model), "--tasks", f"jsonl:{tasks}", "--methods",
                ",".join(methods), "--max-new-tokens", "8", "--warmup", "0", "--out-dir", str(out), "--run-name", "r",
                "--no-progress", "--device", "cpu"], capsys)


def test_a_plugin_runs_beside_builtins_and_a_changed_one_refuses_to_resume(tmp_path: Path, capsys) -> None:
    model = save_tiny_model(tmp_path / "model")
    plugin = write_file_plugin(tmp_path / "outside", "bigram")
    with fresh_registries():  # (each command is a process of its own: the second must not see the first's plugin)
        code, err = _run(model, tmp_path / "res", plugin, capsys, "bigram", "pld")
    assert code == 0, err
    run = tmp_path / "res" / "r"
    records = read_records(run)
    assert {r.method for r in records} == {"ar", "bigram", "pld"}
    manifest = json.loads((run / "manifest.json").read_text())
    assert [(p["spec"], p["registered"], p["sha256"]) for p in manifest["plugins"]] == [
        (str(plugin), ["method bigram"], source_sha256(plugin))]
    summary = json.loads((run / "summary.json").read_text())
    assert {m["method"]: m["lossless_status"] for m in summary["methods"]} == {
        "ar": "baseline", "bigram": "exact", "pld": "exact"}  # in the same report as the built-ins, exact
    plugin.write_text(plugin.read_text().replace("num_draft: int = 4", "num_draft: int = 5"))
    code, err = _run(model, tmp_path / "res", plugin, capsys, "bigram", "pld")
    assert code == 2 and "cannot resume: plugin" in err and "(method bigram): its source hashed to" in err, err


def test_a_plugin_hanging_in_propose_is_named_and_the_records_before_stay(tmp_path: Path, capsys, monkeypatch) -> None:
    model = save_tiny_model(tmp_path / "model")
    plugin = tmp_path / "outside" / "stuck.py"
    plugin.parent.mkdir()
    stuck = "        while ctx.tokens:  # (never ends)\n            pass\n        tokens, root = ctx.tokens"
    plugin.write_text(bigram_source("stuck").replace("        tokens, root = ctx.tokens", stuck))
    monkeypatch.setenv("SPECBENCH_PROPOSE_DEADLINE_S", "0.5")
    code, err = _run(model, tmp_path / "res", plugin, capsys, "pld", "stuck")
    assert code == 2
    assert err.splitlines()[-1].startswith("specbench run: error: method stuck: its propose did not return within 0.5 s")
    kept = {(r.method, r.question_id) for r in read_records(tmp_path / "res" / "r")}
    assert kept == {("ar", "q0"), ("pld", "q0")}


def test_list_shows_a_plugin_corpus_without_a_docstring(tmp_path: Path, capsys) -> None:
    file = tmp_path / "corpus_plugin.py"
    file.write_text("from specbench.api import register_corpus\n\n"
                    "register_corpus('plain_corpus')(lambda data_dir: iter(['a b c']))\n")
    code, out, _err = cli_out(["list", "--plugins", str(file)], capsys)
    assert code == 0 and "  plain_corpus" in out
