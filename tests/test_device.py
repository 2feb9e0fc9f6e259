"""Device correctness without a GPU: syncs and tensors target the model's device, the manifest labels
the device actually used (a CPU run on a GPU machine is a CPU run), and nvidia-smi is read per GPU."""
from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

import specbench.engine.loop as loop_mod
import specbench.models.device as device_mod
import specbench.profiling.gpu_info as gpu_info
from specbench.engine.loop import Engine
from specbench.profiling.fingerprint import hardware
from specbench.reports.labels import hardware_label
from tests.conftest import make_tiny_model

ROOT = Path(__file__).resolve().parent.parent
# the code that runs per generation or per timed forward: every tensor it makes goes to a device it names
HOT_PATHS = [*sorted((ROOT / "specbench" / "engine").glob("*.py")),
             *sorted((ROOT / "specbench" / "engine" / "backends").glob("*.py")),
             ROOT / "specbench" / "profiling" / "measure.py",
             ROOT / "methods" / "pld.py",
             ROOT / "methods" / "rest.py", ROOT / "methods" / "crest.py", ROOT / "methods" / "dresd" / "drafter.py",
             *(ROOT / "methods" / "redrafter" / f"{m}.py" for m in ("beam", "prefix", "drafter"))]
FACTORIES = {"tensor", "zeros", "ones", "full", "arange", "empty", "randint", "randn", "rand", "eye", "from_numpy", "as_tensor"}


def _calls(path: Path) -> list[ast.Call]:
    return [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Call)]


def test_hot_paths_create_tensors_on_a_named_device() -> None:
    bad = []
    for path in HOT_PATHS:
        calls = _calls(path)
        moved = {id(c.func.value) for c in calls if isinstance(c.func, ast.Attribute) and c.func.attr == "to"}
        for c in calls:
            f = c.func
            if (isinstance(f, ast.Attribute) and f.attr in FACTORIES and isinstance(f.value, ast.Name) and f.value.id == "torch"
                    and not any(k.arg == "device" for k in c.keywords) and id(c) not in moved):
                bad.append(f"{path.relative_to(ROOT)}:{c.lineno}")
    assert not bad, f"tensors created on the default device: {bad}"


def test_no_sync_of_the_default_gpu_anywhere() -> None:
    """``torch.cuda.synchronize()`` with no device waits on GPU 0, not the model's GPU."""
    bad = []
    for path in [*(ROOT / "specbench").rglob("*.py"), *(ROOT / "methods").rglob("*.py"), ROOT / "run_bench.py"]:
        for c in _calls(path):
            if isinstance(c.func, ast.Attribute) and c.func.attr == "synchronize" and not c.args and not c.keywords:
                bad.append(f"{path.relative_to(ROOT)}:{c.lineno}")
    assert not bad


def test_synchronize_targets_the_given_gpu(monkeypatch) -> None:
    seen = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: seen.append(device))
    device_mod.synchronize("cuda:1")
    device_mod.synchronize(torch.device("cpu"))
    assert seen == [torch.device("cuda", 1)]


def test_every_engine_and_profile_sync_receives_the_model_device(monkeypatch) -> None:
    from specbench.profiling.measure import measure_forward_curve

    model = make_tiny_model("llama")
    seen = []
    spy = lambda device: seen.append(torch.device(device))  # noqa: E731
    monkeypatch.setattr(device_mod, "synchronize", spy)
    monkeypatch.setattr(loop_mod, "synchronize", spy)
    engine = Engine(model, set(), "reference")
    engine.generate([1, 2, 3], None, 4)
    measure_forward_curve(model, context_len=8, sizes=(1, 2), repeats=1, warmup=0)
    assert seen and set(seen) == {next(model.parameters()).device}


class _Props(SimpleNamespace):
    pass


@pytest.fixture
def fake_two_gpus(monkeypatch):
    """A machine with two GPUs (torch and nvidia-smi faked); returns the indices torch was asked about."""
    asked = []
    props = [_Props(name=f"Fake GPU {i}", major=8, minor=i, total_memory=(40 + 40 * i) * 2**30, uuid=f"GPU-{i}{i}") for i in range(2)]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: asked.append(i) or props[i])
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    smi = {"--query-gpu=index,uuid,driver_version": "0, GPU-00, 550.10\n1, GPU-11, 550.11\n",
           "": "| NVIDIA-SMI 550.11  Driver Version: 550.11  CUDA Version: 12.4 |\n"}
    monkeypatch.setattr(gpu_info, "_smi", lambda *a: smi[a[0] if a else ""])
    return asked


def test_cpu_run_on_a_gpu_machine_is_labelled_cpu(fake_two_gpus) -> None:
    hw = hardware(torch.device("cpu"))
    assert hw["device"] == "cpu" and hw["gpu"] is None and hw["cuda"] is None and hw["driver"] is None
    assert fake_two_gpus == []
    assert "precision" in hw and hw["precision"]["fp16_reduced_precision_reduction"] in (True, False)


def test_manifest_fingerprints_the_gpu_used(fake_two_gpus) -> None:
    hw = hardware(torch.device("cuda", 1))
    assert fake_two_gpus == [1]
    assert hw["device"] == "cuda:1" and hw["gpu"] == "Fake GPU 1" and hw["gpu_index"] == 1 and hw["gpu_uuid"] == "GPU-11"
    assert hw["compute_capability"] == "8.1" and hw["gpu_memory_gb"] == 80.0
    assert hw["driver"] == "550.11" and hw["driver_cuda"] == "12.4"  # one GPU's row, not a multi-line string
    assert hw["cuda"] == torch.version.cuda and "cudnn" in hw


def test_stats_label_old_cpu_runs_made_on_gpu_machines_as_cpu() -> None:
    old = {"hardware": {"cpu": "Xeon", "cores": 8, "gpu": "A100", "gpu_memory_gb": 80.0}, "model": {"device": "cpu"}}
    assert hardware_label(old) == "Xeon (8 cores)"
    gpu = {"hardware": {"cpu": "Xeon", "cores": 8, "gpu": "A100", "gpu_memory_gb": 80.0}, "model": {"device": "cuda:0"}}
    assert hardware_label(gpu).startswith("A100 80 GB")


def test_gpu_rows_matched_by_uuid_not_index() -> None:
    rows = gpu_info.parse_gpu_rows("0, GPU-aa, 1\n1, GPU-bb, 2\n")
    # CUDA_VISIBLE_DEVICES=1: torch's index 0 is nvidia-smi's GPU 1
    assert gpu_info.pick_row(rows, 0, "GPU-bb")["driver_version"] == "2"
    assert gpu_info.pick_row(rows, 1, None)["driver_version"] == "2"
    assert gpu_info.pick_row(rows, 0, "GPU-zz") == {}


def test_exact_reductions_turns_the_flags_off() -> None:
    matmul = torch.backends.cuda.matmul
    names = ("allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction")
    before = {n: getattr(matmul, n) for n in names}  # cuBLAS switches are not plain attributes: restore by hand
    try:
        for n in names:
            setattr(matmul, n, True)
        flags = device_mod.exact_reductions()
        assert not any(getattr(matmul, n) for n in names)
        assert flags["fp16_reduced_precision_reduction"] is False and flags["bf16_reduced_precision_reduction"] is False
    finally:
        for n, v in before.items():
            setattr(matmul, n, v)


def test_select_device_makes_the_chosen_gpu_current(monkeypatch) -> None:
    chosen = []
    monkeypatch.setattr(torch.cuda, "set_device", lambda d: chosen.append(d))
    device_mod.select_device(torch.device("cuda", 1))
    device_mod.select_device(torch.device("cpu"))
    assert chosen == [torch.device("cuda", 1)]


def test_loading_a_model_keeps_attention_off_cudnn(tmp_path, monkeypatch) -> None:
    # cuDNN's attention builds a graph per new query/key length: the method timed first (AR) paid ~40 ms a decode
    # step on an H200 that the others did not (docs/measurements.md, "On a GPU"); the loader switches it off
    from specbench.models import loading
    from tiny_model_dir import save_tiny_model

    monkeypatch.delenv("SPECBENCH_CUDNN_ATTENTION", raising=False)
    torch.backends.cuda.enable_cudnn_sdp(True)
    try:
        loading.load_model(str(save_tiny_model(tmp_path / "m", seed=1)), device="cpu")
        assert not torch.backends.cuda.cudnn_sdp_enabled() and device_mod.precision_flags()["sdpa_cudnn"] is False
        monkeypatch.setenv("SPECBENCH_CUDNN_ATTENTION", "1")
        torch.backends.cuda.enable_cudnn_sdp(True)
        assert device_mod.steady_attention_kernels()["sdpa_cudnn"] is True  # the escape hatch leaves it on
    finally:
        torch.backends.cuda.enable_cudnn_sdp(False)
