"""What the installed ms-swift says: its version, whether a flag exists and parses, padding-free support, packages.

Claims about flags (does --disable_cuda_graph exist?) and about padding-free batches are decided from ms-swift's own
argument dataclass and parser, without building the arguments (nothing is loaded). Importing ms-swift takes seconds
and prints its INFO lines, so what the claims ask of it is kept in data/swift_sft.json (`python -m
analysis.judge.swift_info` writes it from the installed ms-swift; tests/test_claims.py checks it against it): the
reports come from there when the file is of the installed version and holds the question, else from ms-swift itself,
imported lazily inside the functions that need it.
"""
from __future__ import annotations

import dataclasses
import functools
import importlib.util
import re
from pathlib import Path
from typing import Any

from experiments.base import paths
from experiments.base.datafiles import read_json_object

GPU_REQUIREMENTS = paths.EXPERIMENTS / "setup" / "requirements-gpu.txt"  # what the GPU wheelhouse ships
FACTS_FILE = paths.DATA / "swift_sft.json"  # what the claims ask of ms-swift, as its installed version answered


@functools.lru_cache(maxsize=None)
def facts(path: str | Path = FACTS_FILE) -> dict | None:
    """The snapshot of PATH when it is of the installed ms-swift's version, else None."""
    data = read_json_object(Path(path))
    if not isinstance(data, dict) or data.get("swift_version") != swift_version():
        return None
    return data


def _flag_key(flag: str, value: str | None) -> str:
    return flag if value is None else f"{flag}={value}"


def _padding_key(flags: list[str], attn_impl: str) -> str:
    return f"{','.join(flags)}@{attn_impl}"


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


@functools.lru_cache(maxsize=1)
def _type_hints() -> dict[str, Any]:
    """SftArguments' field types resolved (its module uses postponed annotations: a field's `type` is a string until
    something, such as HfArgumentParser, resolves it in place; the report must not depend on which ran first)."""
    import typing

    from swift.arguments import SftArguments

    return typing.get_type_hints(SftArguments)


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
    """Is --FLAG an argument of the installed `swift sft`, and does its parser accept VALUE? From the snapshot
    (facts()) where it holds the question, else asked of ms-swift (flag_report_live)."""
    known = (facts() or {}).get("flag_reports", {}).get(_flag_key(flag, value))
    return dict(known) if known is not None else flag_report_live(flag, value)


def flag_report_live(flag: str, value: str | None = None) -> dict:
    """flag_report from ms-swift itself: its own parser (HfArgumentParser over SftArguments) without building the
    arguments, so nothing is loaded: unknown flags come back as remaining strings, which `swift sft` turns into a
    ValueError."""
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
        out["type"] = str(_type_hints().get(flag, f.type))
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
    """Does the installed ms-swift allow padding_free / packing with ATTN_IMPL (the snapshot's answer where it has
    one, else ms-swift's), and is flash-attn importable here?"""
    known = (facts() or {}).get("padding_free_reports", {}).get(_padding_key(flags, attn_impl))
    if known is None:
        return padding_free_report_live(flags, attn_impl)
    return {**known, "flash_attn_importable": importlib.util.find_spec("flash_attn") is not None}


def padding_free_report_live(flags: list[str], attn_impl: str = "sdpa") -> dict:
    """padding_free_report from ms-swift's own SftArguments check."""
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


def shipped_version(package: str, requirements: str | Path = GPU_REQUIREMENTS) -> str | None:
    """The version of PACKAGE pinned in the GPU wheelhouse's requirements (experiments/setup/requirements-gpu.txt)."""
    try:
        text = Path(requirements).read_text(encoding="utf-8")
    except OSError:
        return None
    m = re.search(rf"^{re.escape(package)}==(\S+)", text, flags=re.M)
    return m.group(1) if m else None


def snapshot() -> dict:
    """What the claims (analysis/judge/claims.yaml) ask of ms-swift, answered by the installed one: the content of
    FACTS_FILE. flash_attn_importable is left out: it is this machine's, asked each time."""
    from analysis.judge import config, rulespec

    flags_asked: dict[str, tuple[str, str | None]] = {}
    padding: dict[str, tuple[list[str], str]] = {}
    for claim in config.claims():
        rule = claim.rule
        if isinstance(rule, rulespec.Tradeoff):
            flags_asked[_flag_key(rule.flag, None)] = (rule.flag, None)
        elif isinstance(rule, rulespec.Flags):
            for f, v in rule.flags.items():
                flags_asked[_flag_key(f, v)] = (f, v)
            for f in rule.related:
                flags_asked[_flag_key(f, None)] = (f, None)
        elif isinstance(rule, rulespec.Supported):
            padding[_padding_key(list(rule.flags), rule.attn_impl)] = (list(rule.flags), rule.attn_impl)
    pad = {}
    for key, (fl, attn) in sorted(padding.items()):
        rep = padding_free_report_live(fl, attn)
        rep.pop("flash_attn_importable")
        pad[key] = rep
    return {"swift_version": swift_version(),
            "written_by": "python -m analysis.judge.swift_info (from the installed ms-swift)",
            "flag_reports": {k: flag_report_live(*v) for k, v in sorted(flags_asked.items())},
            "padding_free_reports": pad}


def main() -> int:
    import json

    data = snapshot()
    FACTS_FILE.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    print(f"wrote {FACTS_FILE} (ms-swift {data['swift_version']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
