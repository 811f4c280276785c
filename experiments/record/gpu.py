"""What the run happened on: NVML checks and sampling, and the environment record (env.json).

NVML is reached only through `nvml()` so tests can hand in a fake module; nothing here changes any GPU
setting (clocks, power limits, MIG): it only reads.
"""
from __future__ import annotations

import csv
import importlib.metadata as md
import os
import platform
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import cast

from experiments.base import hardware
from experiments.base.runfolder import Env, GpuCheck, Nvml
from experiments.record.nvml import _s, nvml, visible_indices  # noqa: F401 - re-exported

PACKAGES = ["ms-swift", "torch", "transformers", "peft", "accelerate", "datasets", "trl", "modelscope",
            "liger-kernel", "papermill", "swiftbench"]
NVML_FIELDS = list(Nvml.COLUMNS)


class HardwareMismatch(RuntimeError):
    """The GPU is not the hardware the run is labelled with."""


def gpus(lib=None) -> list[dict]:
    """Name and memory of each GPU this process may use (NVML index; CUDA_VISIBLE_DEVICES respected)."""
    lib = lib if lib is not None else nvml()
    if lib is None:
        return []
    out = []
    for i in visible_indices(lib):
        h = lib.nvmlDeviceGetHandleByIndex(i)
        mem = lib.nvmlDeviceGetMemoryInfo(h)
        try:  # the enforced board power limit, for "power well below the limit" verdicts
            power_limit_w = lib.nvmlDeviceGetEnforcedPowerLimit(h) / 1000
        except Exception:  # noqa: BLE001 - an optional NVML query: no power limit, an empty field
            power_limit_w = None
        out.append({"index": i, "name": _s(lib.nvmlDeviceGetName(h)), "memory_mib": mem.total // 2**20,
                    "power_limit_w": power_limit_w})
    return out


def check_hardware(hw: str, force: bool = False, lib=None, count: int = 1) -> dict:
    """Compare the GPU with the label HW (through hardware.yaml's nvml_names).

    Returns {"gpu_name", "matched_hw", "forced"}. A mismatch raises HardwareMismatch unless forced; a forced
    run is labelled as such in run.json and every table.
    """
    spec = hardware.require(hw)
    found = gpus(lib)
    if count > 1 and len(found) < count and spec.nvml_names:  # forcing cannot make GPUs appear (cpu: processes)
        raise HardwareMismatch(f"{count} GPUs asked for, {len(found)} visible")
    name = found[0]["name"] if found else "no GPU"
    matched = hardware.match_nvml(name) if found else ("cpu" if not spec.nvml_names else None)
    if matched == hw:
        return {GpuCheck.GPU_NAME: name, GpuCheck.MATCHED_HW: matched, GpuCheck.FORCED: False}
    if not force:
        raise HardwareMismatch(
            f"the GPU is {name!r} ({matched or 'not in data/hardware.yaml'}), not {hw} "
            f"({spec.name}); pass FORCE=1 / --force-hw to run anyway with a 'forced' label")
    return {GpuCheck.GPU_NAME: name, GpuCheck.MATCHED_HW: matched, GpuCheck.FORCED: True}


def detect_hw(lib=None) -> str:
    """The hardware class of the GPUs NVML shows (`--hw auto`, `make run-all HW=auto`): a fleet job or a rented
    machine need not know which card it got. No GPU, an unknown card or a mix of classes is bad input (the label
    would be a guess)."""
    from experiments.base.errors import InputError

    found = gpus(lib)
    if not found:
        raise InputError(None, "--hw auto: NVML shows no GPU (pass --hw cpu for a CPU smoke run)")
    classes = {g["name"]: hardware.match_nvml(g["name"]) for g in found}
    unknown = sorted(n for n, k in classes.items() if k is None)
    if unknown:
        raise InputError(hardware.HARDWARE_FILE, f"--hw auto: no GPU class names {', '.join(map(repr, unknown))}; "
                                                 "add one to hardware.yaml or pass --hw")
    if len(set(classes.values())) > 1:
        raise InputError(None, f"--hw auto: GPUs of several classes are visible ({', '.join(sorted(classes))}); "
                               "pick them with CUDA_VISIBLE_DEVICES")
    return cast(str, next(iter(classes.values())))  # a class: unknown names were refused above


def _versions() -> dict:
    out: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = None
    return out


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _ram_gib() -> float | None:
    try:
        m = re.search(r"MemTotal:\s+(\d+) kB", Path("/proc/meminfo").read_text())
        return round(int(m.group(1)) / 2**20, 1) if m else None
    except OSError:
        return None


def _topo() -> str | None:
    if not shutil.which("nvidia-smi"):
        return None
    try:
        return subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None


def nvlinks(lib, index: int, max_links: int = 18) -> int | None:
    """Active NVLink links of GPU INDEX (None where NVML cannot tell: no NVLink, or no NVML)."""
    if lib is None:
        return None
    try:
        h = lib.nvmlDeviceGetHandleByIndex(index)
    except Exception:  # noqa: BLE001
        return None
    active, known = 0, False
    for link in range(max_links):
        try:
            state = lib.nvmlDeviceGetNvLinkState(h, link)
        except Exception:  # noqa: BLE001 - a link index the GPU does not have, or no NVLink at all
            continue
        known = True
        active += int(bool(state))
    return active if known else None


def environment(hw: str, lib=None) -> dict:
    """The env.json record: GPU, driver, CUDA, topology, CPU, RAM, Python and package versions."""
    lib = lib if lib is not None else nvml()
    found = gpus(lib)
    driver = cuda = None
    if lib is not None:
        driver = _s(lib.nvmlSystemGetDriverVersion())
        v = lib.nvmlSystemGetCudaDriverVersion()
        cuda = f"{v // 1000}.{(v % 1000) // 10}"
    try:
        import torch

        torch_cuda = torch.version.cuda
    except ImportError:
        torch_cuda = None
    from experiments.record import (
        host,  # lazily: its probe imports torch and may start a child process
    )

    return {
        Env.HW: hw,
        Env.GPU_NAME: found[0]["name"] if found else None,
        Env.GPU_COUNT: len(found),
        Env.GPU_MEMORY_MIB: found[0]["memory_mib"] if found else None,
        Env.GPUS: found,
        Env.DRIVER: driver,
        Env.CUDA_DRIVER: cuda,
        Env.CUDA_TORCH: torch_cuda,
        Env.TOPOLOGY: _topo(),
        Env.NVLINKS: [nvlinks(lib, g.get("index", i)) for i, g in enumerate(found)],
        Env.CPU_MODEL: _cpu_model(),
        Env.CPU_COUNT: os.cpu_count(),
        Env.RAM_GIB: _ram_gib(),
        Env.PYTHON: platform.python_version(),
        Env.PLATFORM: platform.platform(),
        Env.PACKAGES: _versions(),
        Env.SUITE_COMMIT: _suite_commit(),
        # host fingerprint + speed probe (experiments/record/host.py); SWIFTBENCH_HOST_PROBE=0 leaves the probe out
        Env.HOST: host.record(hw, lib=lib, device="cpu" if hw == "cpu" else "cuda",
                            run_probe=os.environ.get("SWIFTBENCH_HOST_PROBE", "1").strip() != "0"),
    }


def _suite_commit() -> str | None:
    """The swiftbench commit that ran (with '+dirty' when the tree had changes), where git is available."""
    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return head.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.TimeoutExpired):
        return None


def _throttle_names(lib, mask: int) -> str:
    names = []
    for attr in dir(lib):
        if attr.startswith("nvmlClocksThrottleReason") or attr.startswith("nvmlClocksEventReason"):
            bit = getattr(lib, attr)
            if isinstance(bit, int) and bit and mask & bit and bit != 0xFFFFFFFFFFFFFFFF:
                names.append(re.sub(r"^nvmlClocks(Throttle|Event)Reason", "", attr))
    return "|".join(sorted(set(names) - {"All", "None", "Unknown"}))


class Sampler:
    """Samples every visible GPU once a period into a CSV while a run goes on (a daemon thread).

    Energy comes from NVML's total-energy counter (mJ since driver load) where the GPU has one, as joules
    since the sampler started; power, clocks, temperature, utilisation, memory and throttle reasons per row.
    """

    def __init__(self, path: str | Path, period_s: float = 1.0, lib=None):
        self.path = Path(path)
        self.period = period_s
        self.lib = lib if lib is not None else nvml()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.rows = 0

    def _read(self, lib, i, h, t0, e0):
        def safe(fn, *a):
            try:
                return fn(*a)
            except Exception:  # noqa: BLE001 - one failed NVML read leaves a cell empty, never stops the sampler
                return None

        util = safe(lib.nvmlDeviceGetUtilizationRates, h)
        mem = safe(lib.nvmlDeviceGetMemoryInfo, h)
        power = safe(lib.nvmlDeviceGetPowerUsage, h)
        mask = safe(lib.nvmlDeviceGetCurrentClocksThrottleReasons, h)
        energy = safe(lib.nvmlDeviceGetTotalEnergyConsumption, h)
        return {
            Nvml.TIME_S: round(time.monotonic() - t0, 3), Nvml.GPU: i,
            Nvml.POWER_W: None if power is None else power / 1000,
            Nvml.SM_CLOCK_MHZ: safe(lib.nvmlDeviceGetClockInfo, h, lib.NVML_CLOCK_SM),
            Nvml.MEM_CLOCK_MHZ: safe(lib.nvmlDeviceGetClockInfo, h, lib.NVML_CLOCK_MEM),
            Nvml.TEMP_C: safe(lib.nvmlDeviceGetTemperature, h, lib.NVML_TEMPERATURE_GPU),
            Nvml.UTIL_GPU_PCT: None if util is None else util.gpu,
            Nvml.UTIL_MEM_PCT: None if util is None else util.memory,
            Nvml.MEM_USED_MIB: None if mem is None else mem.used // 2**20,
            Nvml.THROTTLE_REASONS: mask, Nvml.THROTTLE: "" if mask is None else _throttle_names(lib, mask),
            Nvml.ENERGY_J: None if energy is None or e0[i] is None else (energy - e0[i]) / 1000,
        }

    def _loop(self):
        lib = self.lib
        handles = {i: lib.nvmlDeviceGetHandleByIndex(i) for i in visible_indices(lib)}
        t0 = time.monotonic()
        e0 = {}
        for i, h in handles.items():
            try:
                e0[i] = lib.nvmlDeviceGetTotalEnergyConsumption(h)
            except Exception:  # noqa: BLE001 - no energy counter on this board: energy stays empty
                e0[i] = None
        with self.path.open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=NVML_FIELDS)
            writer.writeheader()
            while True:
                for i, h in handles.items():
                    writer.writerow(self._read(lib, i, h, t0, e0))
                    self.rows += 1
                fh.flush()
                if self._stop.wait(self.period):
                    break

    def start(self) -> "Sampler":
        if self.lib is None:
            return self
        self._thread = threading.Thread(target=self._loop, name="nvml-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
