"""GPU-only paths (hardware check, env.json, NVML sampling) against a fake NVML."""
import csv
import time

import pytest
from fake_nvml import FakeNVML

from experiments.record import gpu


def test_matching_gpu_passes():
    assert gpu.check_hardware("h200", lib=FakeNVML("NVIDIA H200")) == {
        "gpu_name": "NVIDIA H200", "matched_hw": "h200", "forced": False}


def test_mismatch_is_an_error_unless_forced():
    lib = FakeNVML("NVIDIA A100-SXM4-80GB")
    with pytest.raises(gpu.HardwareMismatch, match="a100-80gb.*not h100"):
        gpu.check_hardware("h100", lib=lib)
    assert gpu.check_hardware("h100", force=True, lib=lib)["forced"] is True


def test_unknown_gpu_and_cpu_label():
    with pytest.raises(gpu.HardwareMismatch, match="not in data/hardware.yaml"):
        gpu.check_hardware("a10", lib=FakeNVML("NVIDIA GeForce GTX 1080"))
    # No GPU at all: only the cpu label passes.
    assert gpu.check_hardware("cpu", lib=_NoGPU())["matched_hw"] == "cpu"
    with pytest.raises(gpu.HardwareMismatch):
        gpu.check_hardware("h200", lib=_NoGPU())


class _NoGPU(FakeNVML):
    def nvmlDeviceGetCount(self):
        return 0


def test_environment_record():
    env = gpu.environment("h200", lib=FakeNVML())
    assert env["gpu_name"] == "NVIDIA H200" and env["gpu_count"] == 1 and env["gpu_memory_mib"] == 143771
    assert env["driver"] == "580.159.04" and env["cuda_driver"] == "13.0" and env["gpus"][0]["power_limit_w"] == 700
    assert env["packages"]["ms-swift"] and env["cpu_count"] >= 1 and env["python"]


def test_sampler_writes_rows_and_energy(tmp_path):
    lib = FakeNVML(count=2, energy_step_mj=150_000)
    path = tmp_path / "nvml.csv"
    with gpu.Sampler(path, period_s=0.05, lib=lib) as s:
        time.sleep(0.3)
    rows = list(csv.DictReader(path.open()))
    assert s.rows == len(rows) >= 4 and {r["gpu"] for r in rows} == {"0", "1"}
    r = rows[0]
    assert float(r["power_w"]) == 150.0 and r["sm_clock_mhz"] == "1980" and r["util_gpu_pct"] == "17"
    assert r["mem_used_mib"] == "18000" and r["throttle"] == "GpuIdle|SwPowerCap"
    # energy: the counter rises 150 J per read; each row is joules since the sampler started.
    energies = [float(x["energy_j"]) for x in rows if x["gpu"] == "0"]
    assert energies[0] == 150.0 and all(b > a for a, b in zip(energies, energies[1:]))


def test_sampler_without_energy_counter(tmp_path):
    path = tmp_path / "nvml.csv"
    with gpu.Sampler(path, period_s=0.05, lib=FakeNVML(has_energy=False)):
        time.sleep(0.12)
    rows = list(csv.DictReader(path.open()))
    assert rows and all(r["energy_j"] == "" for r in rows)


def test_sampler_is_a_no_op_without_nvml(tmp_path):
    s = gpu.Sampler(tmp_path / "nvml.csv", lib=None)
    s.lib = None
    with s:
        pass
    assert not (tmp_path / "nvml.csv").exists()


def test_visible_devices_pick_the_nvml_indices(monkeypatch):
    """Two runs side by side on a 2-GPU host each sample only the GPU CUDA_VISIBLE_DEVICES gives them."""
    lib = FakeNVML(count=2)
    assert gpu.visible_indices(lib, {}) == [0, 1]
    assert gpu.visible_indices(lib, {"CUDA_VISIBLE_DEVICES": "1"}) == [1]
    assert gpu.visible_indices(lib, {"CUDA_VISIBLE_DEVICES": "1,0"}) == [1, 0]
    assert gpu.visible_indices(lib, {"CUDA_VISIBLE_DEVICES": "0,7,1"}) == [0]  # CUDA stops at an invalid entry
    assert gpu.visible_indices(lib, {"CUDA_VISIBLE_DEVICES": "GPU-00000001"}) == [1]  # a UUID prefix
    assert gpu.visible_indices(lib, {"CUDA_VISIBLE_DEVICES": ""}) == [0, 1]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert [g["index"] for g in gpu.gpus(lib)] == [1]


def test_gpu_time_by_kernel_in_one_pass_over_the_profile():
    """profiler._device_intervals: busy intervals, NCCL intervals and GPU time per kernel name from the profiler's
    events, by hand (no key_averages: it took 20-28 s per profiled seed step on the H200 hosts)."""
    pytest.importorskip("torch")
    from types import SimpleNamespace

    from torch.autograd import DeviceType

    from experiments.launch import profiler as launch_profiler

    def ev(name, start, dur, dev=DeviceType.CUDA):
        return SimpleNamespace(device_type=lambda: dev, name=lambda: name, start_ns=lambda: start,
                               duration_ns=lambda: dur, is_user_annotation=lambda: False)

    events = [ev("gemm", 0, 100), ev("gemm", 150, 50), ev("ncclDevKernel_AllReduce", 120, 60), ev("cudaLaunch", 0, 5,
              DeviceType.CPU), ev("memcpy", 300, 0)]
    prof = SimpleNamespace(profiler=SimpleNamespace(kineto_results=SimpleNamespace(events=lambda: events)))
    gpu, host, comm, by_name = launch_profiler._device_intervals(prof)
    assert host == 1 and comm == [(120, 180)]
    assert launch_profiler.union_ns(gpu) == 100 + 80  # [0,100) and [120,200): gemm 150-200 overlaps the all-reduce
    assert by_name == {"gemm": [150, 2], "ncclDevKernel_AllReduce": [60, 1], "memcpy": [0, 1]}
    assert launch_profiler.top_gpu_ops(by_name, n=2) == [{"op": "gemm", "gpu_ms": 0.0, "calls": 2},
                                                {"op": "ncclDevKernel_AllReduce", "gpu_ms": 0.0, "calls": 1}]
    assert launch_profiler.top_gpu_ops({"k": [2_500_000, 4]}) == [{"op": "k", "gpu_ms": 2.5, "calls": 4}]


def test_profiler_activities_kernels_only_where_torch_can_filter():
    """--profile-activities kernels: CUDA with torch's per-type filter (no CUDA runtime-call tracing), where the
    installed torch has it; else plain CUDA with a note in profile.json."""
    from types import SimpleNamespace

    from experiments.launch import profiler as launch_profiler

    act = SimpleNamespace(CPU="CPU", CUDA="CUDA")
    with_filter = SimpleNamespace(__version__="2.13.0", profiler=SimpleNamespace(
        ProfilerActivity=act, profiler=SimpleNamespace(_parse_activities=lambda a: a)))
    without = SimpleNamespace(__version__="2.11.0", profiler=SimpleNamespace(ProfilerActivity=act,
                                                                             profiler=SimpleNamespace()))
    kinds = ["CONCURRENT_KERNEL", "GPU_MEMCPY", "GPU_MEMSET"]
    assert launch_profiler.profiler_activities(with_filter, "kernels", True) == (
        [{"CUDA": kinds}], [f"CUDA:{k}" for k in kinds], None)
    acts, names, note = launch_profiler.profiler_activities(without, "kernels", True)
    assert (acts, names) == (["CUDA"], ["CUDA"]) and "torch 2.11.0 has no per-type activity filter" in note
    assert launch_profiler.profiler_activities(without, "cuda", True) == (["CUDA"], ["CUDA"], None)
    assert launch_profiler.profiler_activities(without, "all", True) == (["CPU", "CUDA"], ["CPU", "CUDA"], None)
    assert launch_profiler.profiler_activities(with_filter, "kernels", False) == (["CPU"], ["CPU"], None)  # no GPU here


def test_the_installed_torch_accepts_the_kernels_filter():
    """The filter form is what torch.profiler.profile takes (parsed, not started: no GPU here)."""
    torch = pytest.importorskip("torch")
    from experiments.launch import profiler as launch_profiler

    if not hasattr(torch.profiler.profiler, "_parse_activities"):
        pytest.skip(f"torch {torch.__version__} has no per-type activity filter")
    acts, _, _ = launch_profiler.profiler_activities(torch, "kernels", True)
    parsed, filters = torch.profiler.profiler._parse_activities(acts)
    assert parsed == {torch.profiler.ProfilerActivity.CUDA}
    assert filters == {torch.profiler.ProfilerActivity.CUDA: set(launch_profiler.GPU_ONLY_KINDS)}
