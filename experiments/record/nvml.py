"""NVML access: the initialised pynvml module (None without a driver) and the GPUs this process may use.

Shared by experiments/record/gpu.py (checks, sampling, env.json) and experiments/record/host.py (the host fingerprint);
tests hand in a fake module wherever `lib` is a parameter.
"""
from __future__ import annotations

import os
from collections.abc import Mapping


def nvml():
    """The pynvml module, initialised, or None where there is no NVIDIA driver (CPU machines)."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - NVMLError_LibraryNotFound / DriverNotLoaded on machines without a GPU
        return None
    return pynvml


def _s(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def visible_indices(lib, env: Mapping[str, str] | None = None) -> list[int]:
    """NVML indices of the GPUs this process may use: NVML sees every GPU of the host, CUDA only those in
    CUDA_VISIBLE_DEVICES (indices or GPU-/MIG- UUIDs). Two runs side by side on one host, each on its own GPU,
    must each sample and describe their own."""
    env = os.environ if env is None else env
    count = lib.nvmlDeviceGetCount()
    spec = env.get("CUDA_VISIBLE_DEVICES")
    if spec is None or spec.strip() == "":
        return list(range(count))
    out: list[int] = []
    uuids = None
    for item in (x.strip() for x in spec.split(",")):
        if item.lstrip("-").isdigit():
            i = int(item)
            if i < 0 or i >= count:
                break  # CUDA stops at the first invalid entry
            out.append(i)
        else:
            if uuids is None:
                uuids = [_s(lib.nvmlDeviceGetUUID(lib.nvmlDeviceGetHandleByIndex(i))) for i in range(count)]
            match = [i for i, u in enumerate(uuids) if u == item or u.startswith(item)]
            if not match:
                break
            out.append(match[0])
    return out
