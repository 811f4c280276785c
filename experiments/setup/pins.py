"""The GPU-side wheel set's inputs: the pinned requirements file (with its waivers) and the GPU host's package
list (host-freeze.txt by default): what experiments/setup/wheelhouse.py downloads and checks against."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

try:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name
except ImportError:  # pragma: no cover - pip always vendors a copy
    # pip's vendored packaging: the same API, other classes to mypy
    from pip._vendor.packaging.requirements import InvalidRequirement, Requirement  # type: ignore[no-redef,assignment]
    from pip._vendor.packaging.utils import canonicalize_name  # type: ignore[no-redef,assignment]

HERE = Path(__file__).resolve().parent
DEFAULT_REQUIREMENTS = HERE / "requirements-gpu.txt"

#: The GPU host image's package freeze (a data file: where and when it was read is its header).
GPU_HOST_FREEZE = HERE / "host-freeze.txt"


class WheelhouseError(Exception):
    """A problem that ends the command with one line on stderr and exit status 2."""


def say(msg: str) -> None:
    print(msg, flush=True)


# --------------------------------------------------------------------------- requirements file


@dataclass(frozen=True)
class Pin:
    name: str  # canonical (PEP 503) name
    version: str
    line: str  # as written

    @property
    def spec(self) -> str:
        return f"{self.name}=={self.version}"


@dataclass
class RequirementsFile:
    pins: list[Pin]
    #: (canonical name of the wheel that declares it, or "" for any, canonical name) -> reason
    waived: dict[tuple[str, str], str]
    #: canonical name -> (shared-library file names to keep, reason): the wheel's other native libraries are dropped
    slim: dict[str, tuple[tuple[str, ...], str]] = field(default_factory=dict)
    #: canonical name -> (build environment as NAME=VALUE pairs, reason): PyPI has no wheel, build one from the sdist
    build: dict[str, tuple[tuple[str, ...], str]] = field(default_factory=dict)

    def waiver(self, required_by: str, name: str) -> str | None:
        return self.waived.get((required_by, name), self.waived.get(("", name)))


_SLIM_RE = re.compile(r"^#\s*slim\s*\((?P<pkg>[^)]+)\)\s*:\s*keep\s+(?P<keep>[^#]+?)\s+--\s+(?P<reason>.+)$")
_BUILD_RE = re.compile(r"^#\s*build-from-sdist\s*\((?P<pkg>[^)]+)\)\s*:\s*(?P<env>[^#]*?)\s*--\s+(?P<reason>.+)$")
_WAIVE_RE = re.compile(
    r"^#\s*not-shipped(?:\s*\((?P<by>[^)]*)\))?\s*:\s*(?P<names>[^#]+?)\s+--\s+(?P<reason>.+)$")


def parse_requirements(text: str) -> RequirementsFile:
    """Parse requirements-gpu.txt: ``name==version`` lines, comments and waivers.

    A waiver is ``# not-shipped (PKG): NAME, NAME -- reason``: PKG declares the NAMEs and they
    are deliberately left out; without ``(PKG)`` it covers any wheel that declares them.
    ``# build-from-sdist (PKG): VAR=VALUE ... -- reason``: PyPI ships PKG as source only; its wheel is
    built here (``pip wheel --no-deps --no-build-isolation`` with those variables set).

    Every requirement must be an exact ``==`` pin without extras or markers, and each package
    may appear once: the set is installed with ``--no-deps``, so there is no resolver to pick.
    """
    pins: list[Pin] = []
    waived: dict[tuple[str, str], str] = {}
    slim: dict[str, tuple[tuple[str, ...], str]] = {}
    build: dict[str, tuple[tuple[str, ...], str]] = {}
    seen: dict[str, int] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            ms = _SLIM_RE.match(line)
            if ms:
                keep = tuple(k.strip() for k in ms["keep"].split(",") if k.strip())
                slim[canonicalize_name(ms["pkg"].strip())] = (keep, ms["reason"].strip())
                continue
            mb = _BUILD_RE.match(line)
            if mb:
                env = tuple(v for v in mb["env"].split() if v)
                if any("=" not in v for v in env):
                    raise WheelhouseError(f"line {lineno}: build-from-sdist wants VAR=VALUE pairs, got {mb['env']!r}")
                build[canonicalize_name(mb["pkg"].strip())] = (env, mb["reason"].strip())
                continue
            m = _WAIVE_RE.match(line)
            if m:
                by = canonicalize_name(m["by"].strip()) if m["by"] else ""
                for name in m["names"].split(","):
                    if name.strip():
                        waived[(by, canonicalize_name(name.strip()))] = m["reason"].strip()
            continue
        line = line.split(" #", 1)[0].strip()
        if line.startswith("-"):
            raise WheelhouseError(f"line {lineno}: pip options are not allowed here: {line!r}")
        try:
            req = Requirement(line)
        except InvalidRequirement as exc:
            raise WheelhouseError(f"line {lineno}: not a requirement: {line!r} ({exc})") from None
        specs = list(req.specifier)
        if req.extras or req.marker or req.url or len(specs) != 1 or specs[0].operator != "==" \
                or "*" in specs[0].version:
            raise WheelhouseError(f"line {lineno}: want an exact pin NAME==VERSION, got {line!r}")
        name = canonicalize_name(req.name)
        if name in seen:
            raise WheelhouseError(
                f"line {lineno}: {name} is pinned twice (also line {seen[name]}); keep one version"
            )
        seen[name] = lineno
        pins.append(Pin(name, specs[0].version, line))
    unknown = sorted(set(build) - set(seen))
    if unknown:
        raise WheelhouseError(f"build-from-sdist names {', '.join(unknown)}, which is not pinned")
    return RequirementsFile(pins, waived, slim, build)


def load_requirements(path: Path = DEFAULT_REQUIREMENTS) -> RequirementsFile:
    try:
        return parse_requirements(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise WheelhouseError(f"cannot read {path}: {exc.strerror}") from None
    except WheelhouseError as exc:
        raise WheelhouseError(f"{path}: {exc}") from None


# --------------------------------------------------------------------------- host package list


def parse_host_packages(text: str) -> dict[str, str | None]:
    """Read a package list of the host: KINDS.md, ``pip freeze`` / ``pip list`` output, or names.

    KINDS.md: the 'Packages: a, b, c.' sentence gives names, its 'pip list' row gives versions.
    """
    pkgs: dict[str, str | None] = {}
    m = re.search(r"Packages:\s*([^\n]+?)\.\s*$", text, re.M)
    if m and "|" not in m[1]:
        for name in m[1].split(","):
            if name.strip():
                pkgs[canonicalize_name(name.strip())] = None
        row = re.search(r"pip list[^\n]*?names it asked for:\s*([^|\n]+)", text)
        if row:
            for item in row[1].split(","):
                parts = item.split()
                if len(parts) == 2:
                    pkgs[canonicalize_name(parts[0])] = parts[1]
        return pkgs
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith(("Package", "---")):
            continue
        if "==" in line:
            name, _, version = line.partition("==")
            pkgs[canonicalize_name(name.strip())] = version.strip() or None
            continue
        parts = line.split()
        pkgs[canonicalize_name(parts[0])] = parts[1] if len(parts) > 1 else None
    return pkgs


def gpu_host_packages() -> dict[str, str | None]:
    """The built-in snapshot of the GPU host's packages (host-freeze.txt): canonical name -> version."""
    return parse_host_packages(GPU_HOST_FREEZE.read_text(encoding="utf-8"))
