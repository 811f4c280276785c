"""The host a run ran on: fingerprint and speed probe.

Two hosts of one cloud GPU kind can run the same host-bound recipe 30 % apart while `cpu_model` and the host name
read the same ("Intel(R) Xeon(R) Processor", "vm"). Every ratio between two runs (speed-ups) must come from one
host, so env.json carries `host` = record(hw):

  fingerprint  CPU model/vendor/family/model/stepping, a hash of the CPU flags, MHz (mean, min, max over cores),
               logical and usable (affinity) CPUs, RAM, kernel, the visible GPUs' UUID, PCI bus id, clocks,
               enforced power limit and persistence mode, and `host_id`: the first 12 hex digits of sha256 over
               machine-id, the boot id and every GPU's UUID + PCI bus id (`host_id_from` names what went in).
               machine-id alone is not enough: cloud images and containers copy it; the boot id changes on each
               boot, so one id means one host *and* one boot of it.
  probe        three host-speed numbers that a host-bound step scales with (under `budget_s`, 20 s by default):
               a pure-Python loop (ns/iter), eager op dispatch (us/op) and a small LoRA-shaped forward+backward
               (ms/iter).

Everything is read defensively: a missing file or NVML call gives None, never an exception. NVML comes in as
`lib` (experiments.record.nvml.nvml() or a fake in tests); file paths hang off `root` so tests can build a fake /proc.
The CUDA probe runs in a child process (`python -m experiments.record.host probe`), so that the process that goes on
to supervise the run never holds a CUDA context (GPU memory) while it trains. Imports: the standard library and the
run-folder contract's key names (experiments/base/runfolder.py) only (torch and experiments.record.nvml lazily).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from experiments.base.runfolder import Fingerprint, Host, Probe

PY_LOOP_ITERS = 2_000_000
PY_LOOP_REPS = 3
DISPATCH_OPS = 2000
DISPATCH_REPS = 3
DISPATCH_WARMUP = 200
LORA_RANK = 8
LORA_TOKENS = 128
LORA_DIM = {"cuda": 3584, "cpu": 512}  # Qwen2.5-7B's hidden size on a GPU; small enough for ~0.1 s on a CPU
LORA_ITERS = 20
LORA_WARMUP = 3
CHILD_EXTRA_S = 120  # the child's torch import and CUDA start, on top of its budget


def _s(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return None


def _safe(fn, *args):
    try:
        return fn(*args)
    except Exception:  # noqa: BLE001 - a probe of an optional facility must never stop a run
        return None


def short_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def flags_hash(flags) -> str | None:
    """First 12 hex digits of sha256 over the sorted, de-duplicated CPU flags joined by single spaces."""
    flags = sorted(set(flags or ()))
    return short_hash(" ".join(flags)) if flags else None


# ------------------------------------------------------------------------------------------------ CPU


def parse_cpuinfo(text: str) -> dict:
    """/proc/cpuinfo as {model_name, vendor, family, model, stepping, flags (sorted list), mhz (list), processors}.

    x86 keys first, Arm's (CPU implementer/architecture/part/revision, Features) where x86's are absent; values
    of the first processor, MHz of every one."""
    blocks = []
    for chunk in text.split("\n\n"):
        d: dict[str, str] = {}
        for line in chunk.splitlines():
            if ":" in line:
                k, v = line.split(":", 1)
                d.setdefault(k.strip(), v.strip())
        if d:
            blocks.append(d)
    procs = [b for b in blocks if "processor" in b] or blocks
    first = procs[0] if procs else {}

    def pick(*keys):
        for k in keys:
            if first.get(k):
                return first[k]
        return None

    mhz = []
    for b in procs:
        try:
            mhz.append(float(b["cpu MHz"]))
        except (KeyError, ValueError):
            pass
    flags = pick("flags", "Features")
    return {"model_name": pick("model name", "Model", "Hardware", "cpu model"),
            "vendor": pick("vendor_id", "CPU implementer"),
            "family": pick("cpu family", "CPU architecture"),
            "model": pick("model", "CPU part"),
            "stepping": pick("stepping", "CPU revision"),
            "flags": sorted(set(flags.split())) if flags else [],
            "mhz": mhz,
            "processors": sum(1 for b in blocks if "processor" in b)}


def _cpufreq_mhz(root: Path) -> list[float]:
    """Current MHz per core from cpufreq (kHz), where /proc/cpuinfo has no 'cpu MHz' (Arm)."""
    out = []
    for f in sorted((root / "sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_cur_freq")):
        try:
            out.append(int((_read(f) or "").strip()) / 1000)  # unreadable: "", a ValueError
        except (AttributeError, ValueError):
            pass
    return out


def cpu(root: Path | str = "/") -> dict:
    root = Path(root)
    real = root == Path("/")
    info = parse_cpuinfo(_read(root / "proc/cpuinfo") or "")
    mhz, mhz_from = info["mhz"], "cpuinfo"
    if not mhz:
        mhz, mhz_from = _cpufreq_mhz(root), "cpufreq"
    ram = None
    for line in (_read(root / "proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            try:
                ram = round(int(line.split()[1]) / 2**20, 2)
            except (IndexError, ValueError):
                pass
    kernel = (_read(root / "proc/sys/kernel/osrelease") or "").strip() or (platform.release() if real else None)
    try:
        affinity = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = None
    return {
        "model_name": info["model_name"] or ((platform.processor() or None) if real else None),
        "vendor": info["vendor"], "family": info["family"], "model": info["model"], "stepping": info["stepping"],
        "flags_sha": flags_hash(info["flags"]), "flags_count": len(info["flags"]),
        "hypervisor": ("hypervisor" in info["flags"]) if info["flags"] else None,
        "mhz_mean": round(statistics.fmean(mhz), 1) if mhz else None,
        "mhz_min": round(min(mhz), 1) if mhz else None,
        "mhz_max": round(max(mhz), 1) if mhz else None,
        "mhz_from": mhz_from if mhz else None,
        "logical_cpus": info["processors"] or (os.cpu_count() if real else None),
        "affinity_cpus": affinity,
        "ram_total_gib": ram,
        "kernel": kernel,
    }


# ------------------------------------------------------------------------------------------------ GPUs


def _nvml(lib):
    if lib is not None:
        return lib
    from experiments.record import (
        nvml,  # lazily: NVML only when the caller hands none in
    )

    return nvml.nvml()


def _gpu(lib, i: int) -> dict:
    h = _safe(getattr(lib, "nvmlDeviceGetHandleByIndex", None), i)

    def call(name, *a):
        fn = getattr(lib, name, None)
        return _safe(fn, h, *a) if fn is not None and h is not None else None

    sm, mem = getattr(lib, "NVML_CLOCK_SM", 1), getattr(lib, "NVML_CLOCK_MEM", 2)
    uuid, pci = call("nvmlDeviceGetUUID"), call("nvmlDeviceGetPciInfo")
    bus = getattr(pci, "busId", None)
    limit, persist = call("nvmlDeviceGetEnforcedPowerLimit"), call("nvmlDeviceGetPersistenceMode")
    return {"index": i, "uuid": None if uuid is None else _s(uuid), "pci_bus_id": _s(bus) if bus else None,
            "sm_clock_mhz": call("nvmlDeviceGetClockInfo", sm),
            "sm_clock_max_mhz": call("nvmlDeviceGetMaxClockInfo", sm),
            "mem_clock_mhz": call("nvmlDeviceGetClockInfo", mem),
            "mem_clock_max_mhz": call("nvmlDeviceGetMaxClockInfo", mem),
            "power_limit_w": None if limit is None else limit / 1000,
            "persistence_mode": None if persist is None else bool(persist)}


def gpus(lib) -> tuple[list[dict], list[dict]]:
    """(every GPU of the host, for the host id; the GPUs this process may use, for the record)."""
    if lib is None:
        return [], []
    count = _safe(getattr(lib, "nvmlDeviceGetCount", None)) or 0
    every = [_gpu(lib, i) for i in range(count)]
    from experiments.record.nvml import (
        visible_indices,  # CUDA_VISIBLE_DEVICES the way the sampler reads it
    )

    visible = _safe(visible_indices, lib)
    visible = list(range(count)) if visible is None else visible
    return every, [every[i] for i in visible if 0 <= i < count]


def host_id(machine_id: str | None, boot_id: str | None, every_gpu: list[dict]) -> str | None:
    """12 hex digits of sha256 over the lines 'machine-id=…', 'boot-id=…', 'gpu=<uuid>,<pci bus id>' (one a GPU,
    sorted), present ones only, joined by newlines; None when there is nothing to go on."""
    lines = []
    if machine_id:
        lines.append(f"machine-id={machine_id}")
    if boot_id:
        lines.append(f"boot-id={boot_id}")
    lines += sorted(f"gpu={g.get('uuid') or ''},{g.get('pci_bus_id') or ''}" for g in every_gpu
                    if g.get("uuid") or g.get("pci_bus_id"))
    return short_hash("\n".join(lines)) if lines else None


def fingerprint(lib=None, root: Path | str = "/") -> dict:
    """The host's fingerprint (see the module docstring). `lib`: an NVML module (None:
    experiments.record.nvml.nvml())."""
    root = Path(root)
    lib = _nvml(lib)
    every, visible = gpus(lib)
    machine_id, mid_from = None, None
    for rel in ("etc/machine-id", "var/lib/dbus/machine-id"):
        text = (_read(root / rel) or "").strip()
        if text:
            machine_id, mid_from = text, "/" + rel
            break
    boot_id = (_read(root / "proc/sys/kernel/random/boot_id") or "").strip() or None
    hid = host_id(machine_id, boot_id, every)
    sources = ([mid_from] if machine_id else []) + (["/proc/sys/kernel/random/boot_id"] if boot_id else [])
    if any(g.get("uuid") for g in every):
        sources.append(f"nvml:gpu_uuid x{sum(1 for g in every if g.get('uuid'))}")
    if any(g.get("pci_bus_id") for g in every):
        sources.append(f"nvml:pci_bus_id x{sum(1 for g in every if g.get('pci_bus_id'))}")
    return {Fingerprint.HOST_ID: hid, Fingerprint.HOST_ID_FROM: sources, Fingerprint.CPU: cpu(root),
            Fingerprint.GPUS: visible, Fingerprint.GPU_COUNT_HOST: len(every)}


# ------------------------------------------------------------------------------------------------ probe


def _spin(n: int) -> int:
    acc = 0
    for i in range(n):
        acc = (acc + i * 7) & 0xFFFF
    return acc


def _python_loop(deadline: float) -> dict:
    out: dict[str, Any] = {Probe.VALUE: None, Probe.UNIT: "ns/iter", "stat": f"best of {PY_LOOP_REPS}",
                           "iterations": PY_LOOP_ITERS, "reps": 0}
    best = last = None
    for _ in range(PY_LOOP_REPS):
        if time.perf_counter() + (last or 0) > deadline:
            out["truncated"] = True
            break
        t = time.perf_counter_ns()
        _spin(PY_LOOP_ITERS)
        dt = time.perf_counter_ns() - t
        last = dt / 1e9
        best = dt if best is None else min(best, dt)
        out["reps"] += 1
    if best is not None:
        out[Probe.VALUE] = round(best / PY_LOOP_ITERS, 2)
    else:
        out[Probe.REASON] = "budget spent"
    return out


def _sync(torch, dev: str):
    if dev == "cuda":
        torch.cuda.synchronize()


def _dispatch(torch, dev: str, deadline: float) -> dict:
    out: dict[str, Any] = {Probe.VALUE: None, Probe.UNIT: "us/op", "stat": f"best of {DISPATCH_REPS}", "device": dev,
                           "ops": DISPATCH_OPS, "op": "x.add_(1) on a 1-element float32 tensor, one sync per rep",
                           "reps": 0}
    x = torch.zeros(1, device=dev)
    for _ in range(DISPATCH_WARMUP):
        x.add_(1)
    _sync(torch, dev)
    best = last = None
    for _ in range(DISPATCH_REPS):
        if time.perf_counter() + (last or 0) > deadline:
            out["truncated"] = True
            break
        t = time.perf_counter_ns()
        for _ in range(DISPATCH_OPS):
            x.add_(1)
        _sync(torch, dev)
        dt = time.perf_counter_ns() - t
        last = dt / 1e9
        best = dt if best is None else min(best, dt)
        out["reps"] += 1
    if best is not None:
        out[Probe.VALUE] = round(best / DISPATCH_OPS / 1000, 3)
    else:
        out[Probe.REASON] = "budget spent"
    return out


def _lora(torch, dev: str, deadline: float) -> dict:
    d = LORA_DIM[dev]
    dtype = torch.bfloat16 if dev == "cuda" else torch.float32
    out: dict[str, Any] = {Probe.VALUE: None, Probe.UNIT: "ms/iter", "stat": "median", "device": dev, "in": d, "out": d,
                           "rank": LORA_RANK, "tokens": LORA_TOKENS, "dtype": str(dtype).replace("torch.", ""),
                           "warmup": LORA_WARMUP, "iters_planned": LORA_ITERS, "iters": 0}
    F = torch.nn.functional
    gen = torch.Generator(device=dev).manual_seed(0)  # its own generator: the caller's RNG state stays as it was

    def randn(*shape, scale=1.0):
        return torch.randn(*shape, generator=gen, device=dev, dtype=dtype) * scale

    w = randn(d, d, scale=d ** -0.5)                          # frozen base weight
    a = randn(LORA_RANK, d, scale=0.01).requires_grad_()      # LoRA A: in -> r
    b = randn(d, LORA_RANK, scale=0.01).requires_grad_()      # LoRA B: r -> out
    x = randn(LORA_TOKENS, d).requires_grad_()                # a layer inside the network: its input needs grad
    gy = randn(LORA_TOKENS, d)
    scaling = 32 / LORA_RANK

    def step():
        y = F.linear(x, w) + F.linear(F.linear(x, a), b) * scaling
        y.backward(gy)
        a.grad = b.grad = x.grad = None

    times: list[float] = []
    with torch.enable_grad():
        for i in range(LORA_WARMUP + LORA_ITERS):
            if time.perf_counter() + (times[-1] / 1e3 if times else 0) > deadline:
                out["truncated"] = True
                break
            t = time.perf_counter_ns()
            step()
            _sync(torch, dev)
            if i >= LORA_WARMUP:
                times.append((time.perf_counter_ns() - t) / 1e6)
    out["iters"] = len(times)
    if times:
        out[Probe.VALUE] = round(statistics.median(times), 3)
    else:
        out[Probe.REASON] = "budget spent"
    return out


def probe(device: str | None = None, budget_s: float = 20.0) -> dict:
    """Host-speed probe: python_loop (ns/iter), dispatch (us/op), lora_step (ms/iter), each a dict with `value`
    and `unit`; a part that could not run has value None and a `reason`. `device`: "cuda", "cpu" or None (cuda
    where torch sees one); cuda asked for where there is none is measured on the CPU (`device` says which ran).
    Stops once `budget_s` is spent (a repetition under way finishes): `truncated` then is true."""
    t0 = time.perf_counter()
    deadline = t0 + budget_s
    out: dict = {"requested_device": device, "device": None, "budget_s": budget_s}
    out[Probe.PYTHON_LOOP] = _python_loop(deadline)
    skip = {Probe.DISPATCH: {Probe.VALUE: None, Probe.UNIT: "us/op"},
            Probe.LORA_STEP: {Probe.VALUE: None, Probe.UNIT: "ms/iter"}}
    torch: Any = None
    if time.perf_counter() >= deadline:
        reason = "budget spent"
        out["truncated_before_torch"] = True
    else:
        try:
            import torch
        except ImportError:
            reason = "torch is not installed"
    if torch is None:
        for k, v in skip.items():
            out[k] = {**v, Probe.REASON: reason}
    else:
        try:
            cuda = torch.cuda.is_available()
        except Exception:  # noqa: BLE001 - a broken CUDA setup means no CUDA, never a failed probe
            cuda = False
        want_cuda = device is None or str(device).startswith("cuda")
        dev = "cuda" if want_cuda and cuda else "cpu"
        if want_cuda and not cuda and device is not None:
            out["fallback"] = "no CUDA device visible to torch: measured on the CPU"
        out["device"] = dev
        out["torch"] = torch.__version__
        out["torch_threads"] = torch.get_num_threads()
        if dev == "cuda":
            out["cuda_device_name"] = _safe(torch.cuda.get_device_name)
        for name, fn in ((Probe.DISPATCH, _dispatch), (Probe.LORA_STEP, _lora)):
            if time.perf_counter() >= deadline:
                out[name] = {**skip[name], Probe.REASON: "budget spent", "truncated": True}
                continue
            try:
                out[name] = fn(torch, dev, deadline)
            except Exception as exc:  # noqa: BLE001 - an odd device or build: a reason, never an exception
                out[name] = {**skip[name], Probe.REASON: f"{type(exc).__name__}: {exc}"[:300]}
    parts = Probe.PARTS
    out["truncated"] = bool(out.pop("truncated_before_torch", False)) or any(
        out[p].get("truncated") for p in parts)
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out


def _cuda_in_child() -> bool:
    """Whether a CUDA probe should run in a child process: torch sees a GPU and this process has no CUDA context
    yet (the runner's process stays alive through the training; a context would hold GPU memory all along)."""
    try:
        import torch
    except ImportError:
        return False
    try:
        return bool(torch.cuda.is_available()) and not torch.cuda.is_initialized()
    except Exception:  # noqa: BLE001 - a broken CUDA setup means no child probe, never a failed run
        return False


def probe_in_child(device: str = "cuda", budget_s: float = 20.0) -> dict:
    """probe() in `python -m experiments.record.host probe`; its JSON, or a dict with a `reason` where it failed."""
    cmd = [sys.executable, "-m", "experiments.record.host", "probe", "--device", device, "--budget", str(budget_s)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=budget_s + CHILD_EXTRA_S,
                           cwd=Path(__file__).resolve().parents[2])
        lines = p.stdout.strip().splitlines()
        if p.returncode == 0 and lines:
            return {**json.loads(lines[-1]), "process": "child"}
        reason = f"child exited {p.returncode}: {(p.stderr.strip().splitlines() or [''])[-1]}"
    except subprocess.TimeoutExpired:
        reason = f"child ran past {budget_s + CHILD_EXTRA_S:.0f} s"
    except (OSError, ValueError) as exc:
        reason = f"{type(exc).__name__}: {exc}"
    return {"requested_device": device, "device": None, "reason": reason[:300], "truncated": True, "seconds": None}


FRESH_PROBE_ENV = "SWIFTBENCH_FRESH_PROBE"  # a probe just taken (rounds: the run before's after-probe), as JSON
FRESH_PROBE_MAX_AGE_S = 120.0


def fresh_probe(device: str, env: dict | None = None) -> dict | None:
    """The probe in FRESH_PROBE_ENV where it was taken on DEVICE less than FRESH_PROBE_MAX_AGE_S ago: in an
    interleaved set the probe after one run is the probe before the next (experiments/run/rounds.py), measured once."""
    raw = (os.environ if env is None else env).get(FRESH_PROBE_ENV)
    try:
        got = json.loads(raw) if raw else None
    except ValueError:
        return None
    if not isinstance(got, dict) or not isinstance(got.get("taken"), (int, float)):
        return None
    if time.time() - got["taken"] > FRESH_PROBE_MAX_AGE_S or got.get("requested_device") != device:
        return None
    return {**got, "reused": "the probe after the run before (rounds)"}


def record(hw: str, lib=None, device: str | None = None, run_probe: bool = True, budget_s: float = 20.0,
           root: Path | str = "/") -> dict:
    """env.json's `host`: {"fingerprint": fingerprint(), "probe": probe() or None when run_probe is false}.
    The probe runs on `device`, by default "cpu" for hw "cpu" and "cuda" otherwise."""
    device = device or ("cpu" if hw == "cpu" else "cuda")
    fp = fingerprint(lib, root)
    fresh = fresh_probe(device)
    if not run_probe:
        result = None
    elif fresh is not None:
        result = fresh
    elif device.startswith("cuda") and _cuda_in_child():
        result = probe_in_child(device, budget_s)
    else:
        result = probe(device, budget_s)
    return {Host.FINGERPRINT: fp, Host.PROBE: result}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.record.host", description=__doc__.splitlines()[0])
    p.add_argument("what", choices=["fingerprint", "probe", "record"])
    p.add_argument("--device", default=None, help="cuda or cpu (probe, record)")
    p.add_argument("--budget", type=float, default=20.0, help="probe time budget in seconds")
    p.add_argument("--hw", default="cpu", help="hardware label (record)")
    a = p.parse_args(argv)
    if a.what == "fingerprint":
        out = fingerprint()
    elif a.what == "probe":
        out = probe(a.device, a.budget)
    else:
        out = record(a.hw, device=a.device, budget_s=a.budget)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
