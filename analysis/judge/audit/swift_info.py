"""What the installed ms-swift says: its version, whether a flag exists and parses, padding-free support, packages.

Claims about flags (does --disable_cuda_graph exist?) and about padding-free batches are decided from ms-swift's own
argument dataclass and parser, without building the arguments (nothing is loaded). Importing ms-swift takes seconds
and prints its INFO lines, so what the claims ask of it is kept in data/swift_sft.json (`swiftbench
claims swift-facts` writes it from the installed ms-swift; tests/test_claims.py checks it against it): the
reports come from there when the file is of the installed version and holds the question, else from ms-swift itself,
imported lazily inside the functions that need it.
"""
from __future__ import annotations

import dataclasses
import functools
import importlib.util
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

from experiments.base import paths
from experiments.base.datafiles import read_json_object

GPU_REQUIREMENTS = paths.EXPERIMENTS / "setup" / "requirements-gpu.txt"  # what the GPU wheelhouse ships
FACTS_FILE = paths.DATA / "swift_sft.json"  # what the claims ask of ms-swift, as its installed version answered


@dataclass(frozen=True)
class FlagReport:
    """Is --FLAG an argument of the installed `swift sft`, and does its parser take the value asked about: the flag
    as typed, whether it exists, the ms-swift version, the report in words; where it does not exist the arguments of
    similar names, where it does its type and default; where a value was asked whether the parser accepts it and,
    where not, what the parser said."""

    flag: str
    exists: bool
    swift_version: str | None
    text: str
    similar: list[str] | None = None
    type: str | None = None
    default: Any = None
    parser_accepts: bool | None = None
    parser: str | None = None

    def keys(self) -> tuple[str, ...]:
        """The fields this report has (the rest are not its question's: FACTS_FILE leaves them out)."""
        have = ["flag", "exists", "swift_version", "text"] + (["type", "default"] if self.exists else ["similar"])
        return tuple(have + [k for k in ("parser_accepts", "parser") if getattr(self, k) is not None])

    @classmethod
    def from_json(cls, d: dict) -> FlagReport:
        return cls(flag=d["flag"], exists=d["exists"], swift_version=d.get("swift_version"), text=d["text"],
                   similar=d.get("similar"), type=d.get("type"), default=d.get("default"),
                   parser_accepts=d.get("parser_accepts"), parser=d.get("parser"))


@dataclass(frozen=True)
class Allowed:
    """Whether ms-swift allows one feature (padding_free, packing) with an attention implementation, and its message
    where it refuses."""

    allowed: bool
    message: str | None = None


@dataclass(frozen=True)
class PaddingFreeReport:
    """Does the installed ms-swift allow each feature asked about (padding_free, packing: `features`) with the
    attention implementation, and is flash-attn importable here (None: not asked: the snapshot leaves it out)."""

    swift_version: str | None
    attn_impl: str
    features: dict[str, Allowed]  # feature -> its answer
    flash_attn_importable: bool | None = None

    @classmethod
    def from_json(cls, d: dict) -> PaddingFreeReport:
        features = {k: Allowed(v["allowed"], v.get("message")) for k, v in d.items()
                    if k not in ("swift_version", "attn_impl", "flash_attn_importable")}
        return cls(d.get("swift_version"), d["attn_impl"], features, d.get("flash_attn_importable"))


@dataclass(frozen=True)
class Facts:
    """FACTS_FILE: what the claims ask of ms-swift, as its installed version answered: the reports by their question
    (a flag, or flag=value; the features joined by commas @ the attention implementation)."""

    swift_version: str | None
    written_by: str
    flag_reports: dict[str, FlagReport]
    padding_free_reports: dict[str, PaddingFreeReport]

    def as_json(self) -> dict[str, Any]:
        """The JSON object FACTS_FILE holds, as is (each report with only the keys it has, as in FlagReport.keys;
        a feature's answer with its message only where it refuses). Dict-shaped: the file's own object."""
        flags = {k: {n: getattr(r, n) for n in r.keys()} for k, r in self.flag_reports.items()}
        padding = {k: {"swift_version": r.swift_version, "attn_impl": r.attn_impl,
                       **{f: {"allowed": a.allowed, **({"message": a.message} if a.message is not None else {})}
                          for f, a in r.features.items()}}
                   for k, r in self.padding_free_reports.items()}
        return {"swift_version": self.swift_version, "written_by": self.written_by, "flag_reports": flags,
                "padding_free_reports": padding}


@functools.lru_cache(maxsize=None)
def facts(path: str | Path = FACTS_FILE) -> Facts | None:
    """The snapshot of PATH when it is of the installed ms-swift's version, else None."""
    data = read_json_object(Path(path))
    if not isinstance(data, dict) or data.get("swift_version") != swift_version():
        return None
    return Facts(data.get("swift_version"), str(data.get("written_by") or ""),
                 {k: FlagReport.from_json(v) for k, v in (data.get("flag_reports") or {}).items()},
                 {k: PaddingFreeReport.from_json(v) for k, v in (data.get("padding_free_reports") or {}).items()})


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


class SftField(NamedTuple):
    """One argument of `swift sft`: its SftArguments field and its type resolved."""

    field: Any   # dataclasses.Field
    type: Any


@functools.lru_cache(maxsize=1)
def sft_fields() -> dict[str, SftField]:
    """ms-swift's `swift sft` arguments by name: {name: SftField} of SftArguments (the installed ms-swift's names, so
    a mapping keyed by its data). The types are resolved (its module uses postponed annotations: a field's `type` is
    a string until something, such as HfArgumentParser, resolves it in place; the report must not depend on which ran
    first)."""
    import typing

    from swift.arguments import SftArguments

    hints = typing.get_type_hints(SftArguments)
    return {f.name: SftField(f, hints.get(f.name, f.type)) for f in dataclasses.fields(SftArguments)}


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


def flag_report(flag: str, value: str | None = None) -> FlagReport:
    """Is --FLAG an argument of the installed `swift sft`, and does its parser accept VALUE? From the snapshot
    (facts()) where it holds the question, else asked of ms-swift (flag_report_live)."""
    snap = facts()
    known = snap.flag_reports.get(_flag_key(flag, value)) if snap else None
    return known if known is not None else flag_report_live(flag, value)


def flag_report_live(flag: str, value: str | None = None) -> FlagReport:
    """flag_report from ms-swift itself: its own parser (HfArgumentParser over SftArguments) without building the
    arguments, so nothing is loaded: unknown flags come back as remaining strings, which `swift sft` turns into a
    ValueError."""
    version = swift_version()
    fields = sft_fields()
    f = fields.get(flag)
    if f is None:
        similar = sorted(n for n in fields if any(part in n for part in flag.split("_") if len(part) > 3
                                                  and part not in ("disable", "enable")))
        out = FlagReport(f"--{flag}", False, version, f"--{flag}: does not exist in ms-swift {version}",
                         similar=similar)
    else:
        default = _default(f.field)
        out = FlagReport(f"--{flag}", True, version, f"--{flag}: exists in ms-swift {version} (default {default!r})",
                         type=str(f.type), default=default)
    if value is not None:
        parser = sft_parser()
        try:
            _, remaining = parser.parse_known_args([f"--{flag}", value])
            out = replace(out, parser_accepts=not remaining,
                          parser=f"left unparsed: {remaining} (swift sft raises ValueError: remaining_argv)"
                          if remaining else None)
        except SystemExit:
            out = replace(out, parser_accepts=False, parser=f"rejected by the argument parser: --{flag} {value}")
    return out


def _flash_attn_importable() -> bool:
    return importlib.util.find_spec("flash_attn") is not None


def padding_free_report(flags: list[str], attn_impl: str = "sdpa") -> PaddingFreeReport:
    """Does the installed ms-swift allow padding_free / packing with ATTN_IMPL (the snapshot's answer where it has
    one, else ms-swift's), and is flash-attn importable here?"""
    snap = facts()
    known = snap.padding_free_reports.get(_padding_key(flags, attn_impl)) if snap else None
    if known is None:
        return padding_free_report_live(flags, attn_impl)
    return replace(known, flash_attn_importable=_flash_attn_importable())


def padding_free_report_live(flags: list[str], attn_impl: str = "sdpa") -> PaddingFreeReport:
    """padding_free_report from ms-swift's own SftArguments check."""
    from types import SimpleNamespace

    from swift.arguments import SftArguments

    features: dict[str, Allowed] = {}
    for flag in flags:
        probe = SimpleNamespace(padding_free=flag == "padding_free", packing=flag == "packing", attn_impl=attn_impl)
        try:
            SftArguments._check_padding_free(probe)
            features[flag] = Allowed(True)
        except ValueError as exc:
            features[flag] = Allowed(False, str(exc))
    return PaddingFreeReport(swift_version(), attn_impl, features, _flash_attn_importable())


@dataclass(frozen=True)
class PackageReport:
    """Is a package importable here, and what was recorded about its wheel for the GPU host (claims.yaml
    package_check: pypi, the recorded version, file, size_mb and kernels as given; note)."""

    package: str
    importable_here: bool
    pypi: dict[str, Any] | None = None
    note: str | None = None


def package_report(name: str, recorded: dict | None = None) -> PackageReport:
    """Is NAME importable here; what was recorded about its wheel for the GPU host (claims.yaml package_check)."""
    importable = importlib.util.find_spec(name) is not None
    if not recorded:
        return PackageReport(name, importable)
    return PackageReport(name, importable, {k: recorded[k] for k in ("version", "file", "size_mb", "kernels")
                                            if k in recorded}, recorded.get("note"))


def shipped_version(package: str, requirements: str | Path = GPU_REQUIREMENTS) -> str | None:
    """The version of PACKAGE pinned in the GPU wheelhouse's requirements (experiments/setup/requirements-gpu.txt)."""
    try:
        text = Path(requirements).read_text(encoding="utf-8")
    except OSError:
        return None
    m = re.search(rf"^{re.escape(package)}==(\S+)", text, flags=re.M)
    return m.group(1) if m else None


def snapshot() -> Facts:
    """What the claims (analysis/judge/audit/claims.yaml) ask of ms-swift, answered by the installed one: the content of
    FACTS_FILE. flash_attn_importable is left out: it is this machine's, asked each time."""
    from analysis.judge.audit import config, rulespec

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
    pad = {key: replace(padding_free_report_live(fl, attn), flash_attn_importable=None)
           for key, (fl, attn) in sorted(padding.items())}
    return Facts(swift_version(), "swiftbench claims swift-facts (from the installed ms-swift)",
                 {k: flag_report_live(*v) for k, v in sorted(flags_asked.items())}, pad)


def main() -> int:
    import json

    data = snapshot()
    FACTS_FILE.write_text(json.dumps(data.as_json(), indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    print(f"wrote {FACTS_FILE} (ms-swift {data.swift_version})")
    return 0
