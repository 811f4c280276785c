"""GPU classes (issue 16): every common cloud name of a card maps to one class with its own peak figures, a SkyPilot
accelerator name per class, and `--hw auto` picks the class from NVML (the fake NVML of tests/fake_nvml.py)."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fake_nvml import FakeNVML

from experiments.base import hardware
from experiments.record import gpu

# nvmlDeviceGetName() as clouds report it -> the class
CLOUD_NAMES = {
    "NVIDIA A10G": "a10g",                    # AWS g5
    "NVIDIA A10": "a10",                      # Azure NVadsA10, Lambda, OCI
    "NVIDIA L4": "l4",                        # GCP g2, AWS g6
    "NVIDIA L40S": "l40s",                    # AWS g6e, RunPod
    "NVIDIA GeForce RTX 4090": "rtx4090",     # RunPod, Vast
    "NVIDIA A100-SXM4-40GB": "a100",          # GCP a2, AWS p4d
    "NVIDIA A100-PCIE-40GB": "a100",          # the 40GB PCIe: the same datasheet figures
    "A100-SXM4-40GB": "a100",                 # drivers before R470 leave out "NVIDIA "
    "NVIDIA A100-SXM4-80GB": "a100-80gb",     # GCP a2-ultra, AWS p4de
    "NVIDIA A100 80GB PCIe": "a100-80gb-pcie",
    "NVIDIA H100 80GB HBM3": "h100",          # SXM5: AWS p5, GCP a3
    "NVIDIA H100 PCIe": "h100-pcie",          # Lambda 1x, RunPod
    "NVIDIA H100 NVL": "h100-nvl",            # Azure NC H100 v5
    "NVIDIA H200": "h200",
    "NVIDIA H200 NVL": "h200-nvl",
}


@pytest.mark.parametrize("name,key", sorted(CLOUD_NAMES.items()))
def test_cloud_names_resolve_through_the_fake_nvml(name, key):
    lib = FakeNVML(name)
    assert hardware.match_nvml(name) == key
    assert gpu.detect_hw(lib) == key
    assert gpu.check_hardware(key, lib=lib) == {"gpu_name": name, "matched_hw": key, "forced": False}


def test_the_bar_a10g_and_h100_pcie():
    """The issue's bar: "NVIDIA A10G" and "NVIDIA H100 PCIe" resolve to their classes, not to the A10 or H100 SXM."""
    assert gpu.detect_hw(FakeNVML("NVIDIA A10G")) == "a10g"
    assert gpu.detect_hw(FakeNVML("NVIDIA H100 PCIe")) == "h100-pcie"
    with pytest.raises(gpu.HardwareMismatch, match="a10g.*not a10"):
        gpu.check_hardware("a10", lib=FakeNVML("NVIDIA A10G"))
    with pytest.raises(gpu.HardwareMismatch, match="h100-pcie.*not h100"):
        gpu.check_hardware("h100", lib=FakeNVML("NVIDIA H100 PCIe"))


def test_each_name_matches_one_class_only():
    for name in CLOUD_NAMES:
        hits = [k for k, spec in hardware.table().items() if any(re.search(p, name) for p in spec.nvml_names)]
        assert len(hits) == 1, (name, hits)
    for near in ("NVIDIA L40", "NVIDIA GeForce RTX 4090 D", "NVIDIA GH200 480GB", "Tesla T4"):
        assert hardware.match_nvml(near) is None, near


def test_cards_that_differ_have_their_own_peak_figures():
    t = hardware.table()
    figures = {k: (s.bf16_dense_tflops, s.bandwidth_gbs, s.memory_gb) for k, s in t.items() if k != "cpu"}
    for a, b in [("a10", "a10g"), ("h100", "h100-pcie"), ("h100", "h100-nvl"), ("a100-80gb", "a100-80gb-pcie"),
                 ("h200", "h200-nvl"), ("l4", "a10")]:
        assert figures[a] != figures[b], (a, b)
    for key, spec in t.items():
        assert spec.source and (key == "cpu" or spec.bf16_dense_tflops > 0), key


def test_every_gpu_class_names_its_skypilot_accelerator():
    want = {"a10g": "A10G:1", "rtx4090": "RTX4090:1", "a100": "A100:1", "a100-80gb": "A100-80GB:1",
            "h100": "H100:1", "h200": "H200:1", "a10": "A10:1", "l4": "L4:1", "l40s": "L40S:1"}
    t = hardware.table()
    assert {k: t[k].sky_accelerator for k in want} == want
    assert t["cpu"].sky_accelerator is None


class _NoGPU(FakeNVML):
    def nvmlDeviceGetCount(self):
        return 0


class _Mixed(FakeNVML):
    def nvmlDeviceGetName(self, h):
        return (b"NVIDIA H100 80GB HBM3", b"NVIDIA A10G")[h]


def test_auto_refuses_to_guess():
    from experiments.base.errors import InputError

    with pytest.raises(InputError, match="no GPU"):
        gpu.detect_hw(_NoGPU())
    with pytest.raises(InputError, match="GTX 1080"):
        gpu.detect_hw(FakeNVML("NVIDIA GeForce GTX 1080"))
    with pytest.raises(InputError, match="several classes"):
        gpu.detect_hw(_Mixed(count=2))
    assert gpu.detect_hw(FakeNVML("NVIDIA A10G", count=4)) == "a10g"


def test_run_all_hw_auto_without_a_gpu_is_one_line_exit_2(tmp_path):
    p = subprocess.run([sys.executable, "-m", "analysis.cli", "run-all", "--hw", "auto", "--results", str(tmp_path)],
                       capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1],
                       env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    if p.returncode == 0 or "no GPU" not in p.stderr:
        pytest.skip(f"this machine shows a GPU to NVML: {p.stderr.strip()[:200]}")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "--hw auto" in p.stderr
    assert not any(tmp_path.iterdir())


GOOD_ENTRY = ("  name: X\n  memory_gb: 24\n  bandwidth_gbs: 600\n  bf16_dense_tflops: 125\n  nvml_names: ['^X$']\n"
              "  sky_accelerator: null\n  source: a datasheet\n  baseline: true\n")


@pytest.mark.parametrize("change,says", [
    ("  bf16_dense_tflops: fast\n",
     "hardware entry 'x': 'bf16_dense_tflops' is a string ('fast'), not a number or null"),
    ("  nvml_names: X\n", "hardware entry 'x': 'nvml_names' is a string ('X'), not a list of strings"),
    ("  bandwith_gbs: 600\n", "hardware entry 'x': unknown field 'bandwith_gbs'"),
    ("", None),
])
def test_a_bad_hardware_yaml_is_one_line_naming_file_and_field(tmp_path, change, says):
    """hardware.yaml is read into frozen GpuClass records once; a field of the wrong type, a typo'd field or a
    missing one is bad input (InputError: one line naming the file and the field, exit 2 at the CLI)."""
    path = tmp_path / "hardware.yaml"
    entry = GOOD_ENTRY
    if change:
        field = change.split(":")[0]
        entry = "".join(line + "\n" for line in GOOD_ENTRY.splitlines() if line.split(":")[0] != field) + change
    path.write_text("x:\n" + entry)
    if says is None:
        spec = hardware.table(path)["x"]
        assert (spec.key, spec.bf16_dense_tflops, spec.nvml_names, spec.peak_gbs) == ("x", 125, ("^X$",), 600)
        return
    with pytest.raises(hardware.InputError) as err:
        hardware.table(path)
    assert str(err.value).startswith(f"{path}: {says}") and "\n" not in str(err.value)


def test_a_class_without_a_figure_is_bad_input_where_a_figure_is_needed():
    cpu = hardware.require("cpu")
    assert cpu.bf16_dense_tflops is None
    with pytest.raises(hardware.InputError, match="'cpu' has no 'bf16_dense_tflops'"):
        _ = cpu.peak_tflops
