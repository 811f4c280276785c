"""What the installed ms-swift says: its version, whether a flag exists and parses, padding-free support, packages.

Claims about flags (does --disable_cuda_graph exist?) and about padding-free batches are decided from ms-swift's own
argument dataclass and parser, without building the arguments (nothing is loaded). ms-swift, transformers and pip
are imported lazily, inside the functions that need them.
"""
from __future__ import annotations

import dataclasses
import functools
import importlib.util
import re
from pathlib import Path
from typing import Any

from experiments.base import paths

GPU_REQUIREMENTS = paths.EXPERIMENTS / "setup" / "requirements-gpu.txt"  # what the GPU wheelhouse ships


def swift_version() -> str | None:
    """The installed ms-swift's version, None when it is not installed."""
    import importlib.metadata as md

    try:
        return md.version("ms-swift")
    except md.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=1)
def sft_fields() -> dict[str, Any]:
    """ms-swift's `swift sft` arguments: {name: dataclasses.Field} of SftArguments."""
    from swift.arguments import SftArguments

    return {f.name: f for f in dataclasses.fields(SftArguments)}


def _default(f) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        try:
            return f.default_factory()  # type: ignore[misc]
        except Exception:  # noqa: BLE001 - a factory that needs context
            return None
    return None


@functools.lru_cache(maxsize=1)
def sft_parser():
    """The parser `swift sft` uses (HfArgumentParser over SftArguments), without running __post_init__."""
    from swift.arguments import SftArguments
    from transformers import HfArgumentParser

    try:  # ms-swift parses with this patch (swift.utils.parse_args); the same parser, without running __post_init__
        from swift.utils.utils import _patch_get_type_hints
    except ImportError:  # pragma: no cover - other ms-swift versions
        import contextlib

        _patch_get_type_hints = contextlib.nullcontext
    with _patch_get_type_hints():
        return HfArgumentParser([SftArguments])


def flag_report(flag: str, value: str | None = None) -> dict:
    """Is --FLAG an argument of the installed `swift sft`, and does its parser accept VALUE?

    Uses ms-swift's own parser (HfArgumentParser over SftArguments) without building the arguments, so nothing is
    loaded: unknown flags come back as remaining strings, which `swift sft` turns into a ValueError.
    """
    version = swift_version()
    fields = sft_fields()
    f = fields.get(flag)
    out = {"flag": f"--{flag}", "exists": f is not None, "swift_version": version}
    if f is None:
        similar = sorted(n for n in fields if any(part in n for part in flag.split("_") if len(part) > 3
                                                  and part not in ("disable", "enable")))
        out["similar"] = similar
        out["text"] = f"--{flag}: does not exist in ms-swift {version}"
    else:
        out["type"] = str(f.type)
        out["default"] = _default(f)
        out["text"] = f"--{flag}: exists in ms-swift {version} (default {out['default']!r})"
    if value is not None:
        parser = sft_parser()
        try:
            _, remaining = parser.parse_known_args([f"--{flag}", value])
            out["parser_accepts"] = not remaining
            if remaining:
                out["parser"] = f"left unparsed: {remaining} (swift sft raises ValueError: remaining_argv)"
        except SystemExit:
            out["parser_accepts"] = False
            out["parser"] = f"rejected by the argument parser: --{flag} {value}"
    return out


def padding_free_report(flags: list[str], attn_impl: str = "sdpa") -> dict:
    """Does the installed ms-swift allow padding_free / packing with ATTN_IMPL, and is flash-attn importable?"""
    from types import SimpleNamespace

    from swift.arguments import SftArguments

    out: dict[str, Any] = {"swift_version": swift_version(), "attn_impl": attn_impl,
                           "flash_attn_importable": importlib.util.find_spec("flash_attn") is not None}
    for flag in flags:
        probe = SimpleNamespace(padding_free=flag == "padding_free", packing=flag == "packing", attn_impl=attn_impl)
        try:
            SftArguments._check_padding_free(probe)
            out[flag] = {"allowed": True}
        except ValueError as exc:
            out[flag] = {"allowed": False, "message": str(exc)}
    return out


def package_report(name: str, recorded: dict | None = None) -> dict:
    """Is NAME importable here; what was recorded about its wheel for the GPU host (claims.yaml package_check)."""
    out = {"package": name, "importable_here": importlib.util.find_spec(name) is not None}
    if recorded:
        out["pypi"] = {k: recorded[k] for k in ("version", "file", "size_mb", "kernels") if k in recorded}
        out["note"] = recorded.get("note")
    return out


def pypi_wheel(name: str, python_version: str = "3.12", platform: str = "manylinux_2_24_x86_64",
               timeout: float = 120) -> dict:
    """`pip download --no-deps NAME` for the GPU host's Python and platform (needs network): what wheel exists."""
    import subprocess
    import sys
    import tempfile
    import zipfile

    with tempfile.TemporaryDirectory() as tmp:
        p = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", name, "--python-version",
                            python_version, "--platform", platform, "--only-binary=:all:", "-d", tmp, "-q"],
                           capture_output=True, text=True, timeout=timeout)
        wheels = list(Path(tmp).glob("*.whl"))
        if p.returncode != 0 or not wheels:
            return {"available": False, "error": (p.stderr or p.stdout).strip()[-500:]}
        whl = wheels[0]
        with zipfile.ZipFile(whl) as z:
            libs = sorted(Path(n).name for n in z.namelist() if n.endswith(".so"))
        return {"available": True, "file": whl.name, "size_mb": round(whl.stat().st_size / 1e6, 1), "libs": libs}


def shipped_version(package: str, requirements: str | Path = GPU_REQUIREMENTS) -> str | None:
    """The version of PACKAGE pinned in the GPU wheelhouse's requirements (experiments/setup/requirements-gpu.txt)."""
    try:
        text = Path(requirements).read_text(encoding="utf-8")
    except OSError:
        return None
    m = re.search(rf"^{re.escape(package)}==(\S+)", text, flags=re.M)
    return m.group(1) if m else None
