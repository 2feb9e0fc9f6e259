"""Trained drafters on the shared feature store: one target pass for several trainers, epoch-level resume,
and the ``recipe`` option (validated, part of the cache key, recorded)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

import specbench_methods.eagle.train as eagle_train
import specbench.training.feature_store as feature_store
from specbench_methods.eagle.train import EagleTrainConfig, train_eagle
from specbench_methods.medusa.train import MedusaTrainConfig, train_medusa
from specbench.datastore import corpora
from specbench.errors import ConfigError
from specbench.training.checkpoints import default_dir
from specbench.training.recipes import recipe_key
from specbench.training.distill_data import DEFAULT_CORPORA
from test_golden import char_tokenizer
from test_sps_distill import tied_tiny_target

CORPUS = "tiny_train_recipes"
TEXTS = [("" if i % 2 else f"q{i}", "abc def gh ij " * (2 + i % 4)) for i in range(80)]
corpora.PAIR_LOADERS.setdefault(CORPUS, lambda data_dir: iter(TEXTS))
SMALL = dict(tokens=600, max_seq_len=64, heldout_every=4)


def _count_extensions(monkeypatch) -> dict[str, int]:
    calls = {"n": 0}
    real = feature_store.extend_store

    def counted(*a, **k):
        calls["n"] += 1
        return real(*a, **k)

    monkeypatch.setattr(feature_store, "extend_store", counted)
    return calls


def test_two_drafters_trained_one_after_the_other_run_the_target_once(tmp_path, monkeypatch) -> None:
    target, tok = tied_tiny_target(), char_tokenizer()
    calls = _count_extensions(monkeypatch)
    medusa = train_medusa(target, tok, [CORPUS], None, tmp_path / "medusa", MedusaTrainConfig(epochs=1, **SMALL), "tiny",
                          progress=False)
    assert calls["n"] == 1
    eagle = train_eagle(target, tok, [CORPUS], None, tmp_path / "eagle",
                        EagleTrainConfig(epochs=1, window=16, batch_size=64, **SMALL), "tiny", progress=False)
    assert calls["n"] == 1  # the second trainer read the first one's features: no forward
    meta = json.loads((tmp_path / "eagle" / "config.json").read_text())
    assert meta["features"]["path"] == json.loads((tmp_path / "medusa" / "config.json").read_text())["features"]["path"]
    assert meta["recipe"] == "custom" and medusa["heldout_examples"] > 0 and eagle["heldout_examples"] > 0


def test_an_interrupted_training_resumes_after_its_last_epoch(tmp_path, monkeypatch) -> None:
    target, tok = tied_tiny_target(), char_tokenizer()
    cfg = EagleTrainConfig(epochs=3, window=16, batch_size=64, **SMALL)
    whole = train_eagle(target, tok, [CORPUS], None, tmp_path / "whole", cfg, "tiny", progress=False)
    steps_per_epoch = whole["steps"] // 3
    real, seen = eagle_train.optimizer_step, {"n": 0}

    def interrupted(*a, **k):
        seen["n"] += 1
        if seen["n"] == 2 * steps_per_epoch + 1:  # the first step of the third epoch
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(eagle_train, "optimizer_step", interrupted)
    with pytest.raises(KeyboardInterrupt):
        train_eagle(target, tok, [CORPUS], None, tmp_path / "resumed", cfg, "tiny", progress=False)
    assert json.loads((tmp_path / "resumed" / "train_state.json").read_text())["epochs_done"] == 2
    monkeypatch.setattr(eagle_train, "optimizer_step", real)
    resumed = train_eagle(target, tok, [CORPUS], None, tmp_path / "resumed", cfg, "tiny", progress=False)
    assert resumed["heldout_top1"] == whole["heldout_top1"] and resumed["steps"] == whole["steps"]
    from safetensors.torch import load_file

    a, b = (load_file(str(tmp_path / d / "eagle.safetensors")) for d in ("whole", "resumed"))
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)
    assert not (tmp_path / "resumed" / "train_state.json").exists()  # finished: the state is gone


@pytest.mark.parametrize("method", ["eagle", "eagle3", "hydra", "medusa", "sps", "redrafter", "dflash"])
def test_recipe_is_validated_in_one_line(method: str) -> None:
    config_cls = _config_class(method)
    config_cls(recipe="full").validate()
    with pytest.raises(ConfigError, match=rf"^{method}: recipe must be one of quick, .*full.*, got 'slow'$"):
        config_cls(recipe="slow").validate()


def _config_class(method: str):
    from specbench_methods.dflash.method import DFlashConfig
    from specbench_methods.eagle.method import EagleConfig
    from specbench_methods.eagle3.method import Eagle3Config
    from specbench_methods.hydra.method import HydraConfig
    from specbench_methods.medusa.method import MedusaConfig
    from specbench_methods.redrafter.config import ReDrafterConfig
    from specbench_methods.sps.method import SpSConfig

    return {"eagle": EagleConfig, "eagle3": Eagle3Config, "hydra": HydraConfig, "medusa": MedusaConfig,
            "sps": SpSConfig, "redrafter": ReDrafterConfig, "dflash": DFlashConfig}[method]


def test_quick_keeps_its_cache_folder_and_full_gets_its_own(tmp_path) -> None:
    from specbench_methods.eagle.train import RECIPES

    env = SimpleNamespace(model=torch.nn.Linear(2, 2), model_id="m", cache_dir=tmp_path)
    quick, full = default_dir(env, "eagle", RECIPES["quick"]), default_dir(env, "eagle", RECIPES["full"], "full")
    legacy_key = json.dumps({"model": "m", "dtype": "torch.float32", "corpora": DEFAULT_CORPORA,
                             "recipe": recipe_key(EagleTrainConfig())}, sort_keys=True)  # as before recipes
    # (recipe_key: the fields as before HASS's were added; tests/test_default_dirs.py pins the names themselves)
    assert quick == Path(tmp_path) / "eagle" / f"default-{hashlib.sha256(legacy_key.encode()).hexdigest()[:12]}"
    assert full.name.startswith("full-") and full.parent == quick.parent
    assert RECIPES["quick"] == EagleTrainConfig() and RECIPES["full"].tokens == 300_000


def test_curve_command_trains_each_size_on_one_heldout_set(tmp_path, monkeypatch, capsys) -> None:
    from specbench.cli import main
    from tiny_model_dir import save_tiny_model

    import specbench.training.curve as curve

    model_dir = save_tiny_model(tmp_path / "tiny")
    monkeypatch.setenv("SPECBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(curve, "HELDOUT_SPAN", 400)  # the tiny corpus' scale of the 200k default
    argv = ["train", "medusa", "--model", str(model_dir), "--corpus", CORPUS, "--curve", "0.3k,150"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "| positions | held-out heldout_top1 (medusa, quick recipe)" in out and "| 150 |" in out and "| 300 |" in out
    table = Path(out.split("written to ")[1].strip())
    assert table.name == "curve-medusa-quick.json" and (table.parent / "index.json").is_file()  # next to the store
    rows = json.loads(table.read_text())["rows"]
    assert [r["positions"] for r in rows] == [150, 300] and rows[0]["heldout_examples"] == rows[1]["heldout_examples"]
    assert all(len(r["top1"]) == 4 for r in rows)
    assert main(argv) == 0  # done sizes are read back, not trained again
    assert "| 150 |" in capsys.readouterr().out
    # a later, larger curve keeps the rows already trained: the held-out set does not depend on the sizes
    assert main([*argv[:-1], "100,0.3k"]) == 0
    later = json.loads(table.read_text())["rows"]
    assert [r["positions"] for r in later] == [100, 150, 300] and later[1:] == rows


def test_the_curve_size_equal_to_the_recipes_fills_the_recipes_folder(tmp_path, monkeypatch, capsys) -> None:
    """``--curve ...,300k --recipe full`` leaves the full recipe's drafter where ``medusa.recipe=full`` reads it
    (here a tiny recipe of 300 positions stands in), copied whole, and keeps a finished one already there."""
    import specbench_methods.medusa.train_cli as medusa_cli
    import specbench.training.curve as curve
    from specbench.cli import main
    from tiny_model_dir import save_tiny_model

    model_dir = save_tiny_model(tmp_path / "tiny")
    monkeypatch.setenv("SPECBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(curve, "HELDOUT_SPAN", 400)
    import specbench.training.feature_store as feature_store
    monkeypatch.setattr(feature_store, "default_root", lambda: tmp_path / "features")  # this test's own curves
    tiny = {"quick": MedusaTrainConfig(tokens=300, max_seq_len=64), "full": MedusaTrainConfig(tokens=300, epochs=2,
                                                                                          max_seq_len=64)}
    monkeypatch.setattr(medusa_cli, "RECIPES", tiny)
    import specbench.training.checkpoints as checkpoints
    monkeypatch.setattr(checkpoints, "DEFAULT_CORPORA", (CORPUS,))  # (``trained_default_dir`` compares with it)
    argv = ["train", "medusa", "--model", str(model_dir), "--corpus", CORPUS, "--recipe", "full", "--curve", "150,300"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    adopted = Path(out.split("adopted from this curve: ")[1].splitlines()[0])
    assert adopted.name.startswith("full-") and adopted.parent.name == "medusa"
    assert json.loads((adopted / "config.json").read_text())["recipe"] == "full@300"
    curve_dir = tmp_path / "features" / "curves" / "medusa-full-300"
    assert sorted(p.name for p in adopted.iterdir()) == sorted(p.name for p in curve_dir.iterdir())
    assert not adopted.with_name(adopted.name + ".partial").exists()
    (adopted / "marker").write_text("kept")
    assert main(argv) == 0  # rows read back; the drafter there is kept, not copied over
    assert "holds a drafter already" in capsys.readouterr().out and (adopted / "marker").is_file()
    assert main([*argv[:-1], "150"]) == 0  # a curve without the recipe's size adopts nothing
    assert "adopted" not in capsys.readouterr().out


def test_train_command_fills_the_recipes_cache_folder_or_asks_for_out(tmp_path, monkeypatch, capsys) -> None:
    from specbench.cli import main
    from tiny_model_dir import save_tiny_model

    model_dir = save_tiny_model(tmp_path / "tiny")
    monkeypatch.setenv("SPECBENCH_CACHE", str(tmp_path / "cache"))
    assert main(["train", "medusa", "--model", str(model_dir), "--corpus", CORPUS, "--tokens", "200"]) == 2
    assert "give --out" in capsys.readouterr().err
    assert main(["train", "medusa", "--model", str(model_dir), "--corpus", CORPUS, "--tokens", "200",
                 "--out", str(tmp_path / "m")]) == 0
    assert "--method-opt medusa.checkpoint=" in capsys.readouterr().out
    assert json.loads((tmp_path / "m" / "config.json").read_text())["recipe"] == "custom"


@pytest.mark.parametrize("method", ["eagle", "eagle3", "hydra", "medusa", "sps", "redrafter"])
def test_each_readme_documents_the_recipe_option(method: str) -> None:
    from test_method_readme_defaults import documented_defaults, readme

    documented = documented_defaults(readme(method).read_text(encoding="utf-8"), method)
    assert documented.get("recipe", "").strip("`") == "quick"
    assert "full" in next(line for line in readme(method).read_text().splitlines() if line.startswith("| `recipe`"))


def test_the_report_header_names_each_drafters_recipe() -> None:
    from specbench.reports.report import _header

    manifest = {"artifacts": {"eagle": {"gsm8k": {"recipe": "quick"}}, "eagle@full": {"gsm8k": {"recipe": "full"}},
                              "pld": {"gsm8k": {"overhead": {}}}}}
    assert "Trained drafters' recipes: eagle quick, eagle@full full." in _header(manifest)


def test_quick_and_full_run_side_by_side_as_labelled_variants(tmp_path, monkeypatch) -> None:
    """``--methods ar,medusa,medusa@full --method-opt medusa@full.recipe=full``: two drafters, two cache folders,
    each recipe in the manifest and the report header (tiny recipes on a tiny model)."""
    import specbench_methods.medusa.method as medusa_method
    from specbench.config.run_config import RunConfig
    from specbench.reports.report import write_report
    from specbench.results.run_folder import read_manifest
    from specbench.run.plan import make_plan, run_dir_for
    from specbench.run.runner import Runner
    from tiny_model_dir import save_tiny_model

    monkeypatch.setenv("SPECBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(medusa_method, "DEFAULT_CORPORA", (CORPUS,))
    monkeypatch.setitem(medusa_method.RECIPES, "quick", MedusaTrainConfig(tokens=200, batch_size=16))
    monkeypatch.setitem(medusa_method.RECIPES, "full", MedusaTrainConfig(tokens=400, epochs=2, batch_size=16))
    task = tmp_path / "t.jsonl"
    task.write_text(json.dumps({"id": "q1", "turns": ["Say one two three."]}) + "\n")
    cfg = RunConfig(methods=("ar", "medusa", "medusa@full"), tasks=(f"jsonl:{task}",), max_new_tokens=8, warmup=0,
                    model=str(save_tiny_model(tmp_path / "model")), device="cpu", out_dir=str(tmp_path / "runs"),
                    method_options={"medusa@full": {"recipe": "full"}})
    plan = make_plan(cfg)
    assert Runner(plan, run_dir_for(plan), progress=False).execute() == 0
    artifacts = read_manifest(run_dir_for(plan))["artifacts"]
    quick, full = (next(iter(artifacts[m].values())) for m in ("medusa", "medusa@full"))
    assert (quick["recipe"], full["recipe"]) == ("quick", "full")
    assert Path(quick["checkpoint"]["path"]).name.startswith("default-") and Path(full["checkpoint"]["path"]).name.startswith("full-")
    assert json.loads((Path(full["checkpoint"]["path"]) / "config.json").read_text())["recipe"] == "full"
    assert "Trained drafters' recipes: medusa quick, medusa@full full." in write_report(run_dir_for(plan))


def test_a_resumed_training_reports_its_whole_duration(tmp_path, monkeypatch) -> None:
    """``train_s`` of a training interrupted after 10 s and resumed for 5 s more is 15 s, not 5 s: the
    epoch state keeps the seconds trained so far (a curve's duration in a README must be the whole one)."""
    import specbench.training.resume as resume

    now = {"t": 100.0}
    monkeypatch.setattr(resume.time, "perf_counter", lambda: now["t"])
    layer = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(layer.parameters(), lr=0.1)
    first = resume.EpochState(tmp_path, {"recipe": 1})
    assert first.restore({"layer": layer}, opt) == (0, 0)
    now["t"] += 10.0
    first.save(1, 7, {"layer": layer}, opt)
    assert json.loads((tmp_path / resume.INFO).read_text())["train_s"] == 10.0
    now["t"] += 1000.0  # the time between the interruption and the resume is not training
    second = resume.EpochState(tmp_path, {"recipe": 1})
    assert second.restore({"layer": layer}, opt) == (1, 7)
    now["t"] += 5.0
    assert second.elapsed_s() == 15.0


def test_a_model_with_tied_weights_resumes(tmp_path) -> None:
    """A draft LM ties its LM head to its embedding (one storage, two names); its epoch state saves, and
    restoring it gives both names the trained values and keeps them one tensor."""
    import specbench.training.resume as resume

    class Tied(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = torch.nn.Embedding(5, 3)
            self.head = torch.nn.Linear(3, 5, bias=False)
            self.head.weight = self.embed.weight

    trained, fresh = Tied(), Tied()
    with torch.no_grad():
        trained.embed.weight.add_(1.0)
    opt = torch.optim.SGD(trained.parameters(), lr=0.1)
    resume.EpochState(tmp_path, {"recipe": 1}).save(1, 3, {"draft": trained}, opt)
    assert resume.EpochState(tmp_path, {"recipe": 1}).restore({"draft": fresh}, torch.optim.SGD(fresh.parameters(), lr=0.1)) == (1, 3)
    assert torch.equal(fresh.embed.weight, trained.embed.weight) and fresh.head.weight is fresh.embed.weight
