"""The GPU-side wheel set: download it here, check it, install it offline there.

    python -m experiments.setup.wheelhouse --dest wheelhouse [--python-version 3.12] [--platform TAG ...]
    python -m experiments.setup.wheelhouse --dest wheelhouse --check
    python -m experiments.setup.wheelhouse install --from wheelhouse [--target DIR]

(`swiftbench wheelhouse ...` is the same command.)

Downloading runs ``pip download --no-deps --only-binary=:all:`` for the target interpreter
(CPython 3.12 on manylinux x86_64 by default, the air-gapped H200 host of GPU-HOST.md) for exactly
the pins of experiments/setup/requirements-gpu.txt, then checks the folder (below). Installing runs
``pip install --no-index --no-deps --find-links`` with the running interpreter.

The check (``--check``, and the end of every download) verifies that the folder holds one wheel
per requirement, of the pinned version, with tags the target can install, and nothing else; and
that the set is complete: every ``Requires-Dist`` of every wheel that applies to the target
(markers evaluated for CPython 3.12 on Linux x86_64; extras only where a requirement asks for
them) is met by a wheel of the set, by a package of the GPU host (host-freeze.txt), or is
waived in the requirements file with a ``# not-shipped (PKG): NAME, ... -- reason`` line.

Exit codes: 0 fine, 1 the check found problems, 2 a wheel could not be found / bad usage.
"""

from __future__ import annotations

import argparse
import email.parser
import os
import re
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

try:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import (
        InvalidWheelFilename,
        canonicalize_name,
        parse_wheel_filename,
    )
    from packaging.version import InvalidVersion, Version
except ImportError:  # pragma: no cover - pip always vendors a copy
    # pip's vendored packaging: the same API, other classes to mypy
    from pip._vendor.packaging.requirements import (  # type: ignore[no-redef,assignment]
        InvalidRequirement,
        Requirement,
    )
    from pip._vendor.packaging.utils import (  # type: ignore[no-redef,assignment]
        InvalidWheelFilename,
        canonicalize_name,
        parse_wheel_filename,
    )
    from pip._vendor.packaging.version import InvalidVersion, Version  # type: ignore[no-redef,assignment]

HERE = Path(__file__).resolve().parent
DEFAULT_REQUIREMENTS = HERE / "requirements-gpu.txt"

#: Everything that travels to the GPU machine is capped at 64 MiB; leave room for the repo.
WARN_MIB = 48.0

#: manylinux x86_64 tags the host (Ubuntu 24.04, glibc 2.39, seen 2026-11-30) installs, newest
#: first: the device README's list (2_28, 2_27, 2_17, 2014, 1) and every other glibc level, since
#: pip matches ``manylinux_2_N`` exactly. Pure-Python wheels (py3-none-any) always match.
DEFAULT_PLATFORMS: tuple[str, ...] = (
    *(f"manylinux_2_{n}_x86_64" for n in range(39, 17, -1)),
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux_2_12_x86_64",
    "manylinux2010_x86_64",
    "manylinux_2_5_x86_64",
    "manylinux1_x86_64",
)

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


# --------------------------------------------------------------------------- target environment


def target_environment(python_version: str = "3.12") -> dict[str, str]:
    """PEP 508 marker values for CPython ``python_version`` on Linux x86_64 (the GPU host)."""
    parts = python_version.split(".")
    short = ".".join(parts[:2])
    full = python_version if len(parts) >= 3 else ("3.12.3" if short == "3.12" else f"{short}.0")
    return {
        "implementation_name": "cpython",
        "implementation_version": full,
        "os_name": "posix",
        "platform_machine": "x86_64",
        "platform_python_implementation": "CPython",
        "platform_release": "",
        "platform_system": "Linux",
        "platform_version": "",
        "python_full_version": full,
        "python_version": short,
        "sys_platform": "linux",
        "extra": "",
    }


def _tag_ok(interpreter: str, abi: str, platform: str, py: str, platforms: set[str]) -> bool:
    """Could CPython ``py`` (like '312') on one of ``platforms`` install a wheel with this tag?"""
    major, minor = py[0], py[1:]
    if interpreter.startswith("py"):
        ok_interp = interpreter in (f"py{major}", f"py{py}")
    elif interpreter.startswith("cp") and interpreter[2:].isdigit():
        v = interpreter[2:]
        ok_interp = v == py or (abi == "abi3" and v[0] == major and int(v[1:] or 0) <= int(minor))
    else:
        ok_interp = False
    ok_abi = abi == "none" or abi == "abi3" or abi == f"cp{py}"
    ok_plat = platform == "any" or platform in platforms
    return ok_interp and ok_abi and ok_plat


# --------------------------------------------------------------------------- wheels


@dataclass
class Wheel:
    path: Path
    name: str  # canonical
    version: str
    tags: frozenset  # of packaging.tags.Tag
    requires: list[str]

    @property
    def size(self) -> int:
        return self.path.stat().st_size


def read_wheel(path: Path) -> Wheel:
    """Name, version and tags from the file name; Requires-Dist from its METADATA."""
    try:
        name, version, _build, tags = parse_wheel_filename(path.name)
    except InvalidWheelFilename as exc:
        raise WheelhouseError(f"{path.name}: not a wheel file name ({exc})") from None
    try:
        with zipfile.ZipFile(path) as zf:
            metas = [n for n in zf.namelist()
                     if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
            if len(metas) != 1:
                raise WheelhouseError(f"{path.name}: want one *.dist-info/METADATA, "
                                      f"found {len(metas)}")
            meta = email.parser.Parser().parsestr(zf.read(metas[0]).decode("utf-8", "replace"))
    except zipfile.BadZipFile:
        raise WheelhouseError(f"{path.name}: not a zip file") from None
    return Wheel(path, canonicalize_name(name), str(version), frozenset(tags),
                 meta.get_all("Requires-Dist") or [])


def list_folder(folder: Path) -> tuple[list[Wheel], list[str]]:
    """The wheels in ``folder`` and the names of anything else in it."""
    wheels, others = [], []
    for p in sorted(Path(folder).iterdir()):
        if p.is_file() and p.suffix == ".whl":
            wheels.append(read_wheel(p))
        else:
            others.append(p.name)
    return wheels, others


# --------------------------------------------------------------------------- the check


@dataclass
class CheckReport:
    problems: list[str] = field(default_factory=list)  # fail the check
    waived: list[str] = field(default_factory=list)  # declared, deliberately not shipped
    notes: list[str] = field(default_factory=list)  # met by a host package of unknown version

    @property
    def ok(self) -> bool:
        return not self.problems


def check_folder(wheels: list[Wheel], others: list[str], pins: list[Pin],
                 python_version: str = "3.12",
                 platforms: tuple[str, ...] | list[str] = DEFAULT_PLATFORMS) -> list[str]:
    """One wheel per pin, of the pinned version, installable on the target; nothing else."""
    problems = [f"not a wheel: {name}" for name in others]
    by_name: dict[str, list[Wheel]] = {}
    for w in wheels:
        by_name.setdefault(w.name, []).append(w)
    py = "".join(python_version.split(".")[:2])
    plats = set(platforms)
    for pin in pins:
        got = by_name.pop(pin.name, [])
        if not got:
            problems.append(f"missing wheel: {pin.spec}")
            continue
        if len(got) > 1:
            problems.append(f"{len(got)} wheels for {pin.name}: "
                            + ", ".join(w.path.name for w in got) + "; keep one")
        for w in got:
            if Version(w.version) != Version(pin.version):
                problems.append(f"{w.path.name}: version {w.version}, pinned {pin.version}")
            if not any(_tag_ok(t.interpreter, t.abi, t.platform, py, plats) for t in w.tags):
                problems.append(f"{w.path.name}: no tag that CPython {python_version} on "
                                f"manylinux x86_64 installs")
    for name, extra in sorted(by_name.items()):
        problems += [f"not in requirements: {w.path.name}" for w in extra]
    return problems


def check_completeness(wheels: list[Wheel], host: dict[str, str | None],
                       waived: dict[tuple[str, str], str], env: dict[str, str]) -> CheckReport:
    """Is every requirement that applies to the target met by the set, the host or a waiver?

    Each wheel's Requires-Dist is evaluated for ``env`` with no extra; where a requirement met
    by a wheel of the set asks for extras (``pkg[x]``), that wheel's ``extra == "x"`` lines are
    evaluated too. Requirements met by a host package are checked against its version when known.
    """
    rep = CheckReport()
    by_name = {w.name: w for w in wheels}
    seen_notes: set[str] = set()
    todo: list[tuple[Wheel, str]] = [(w, "") for w in wheels]
    done: set[tuple[str, str]] = set()
    while todo:
        wheel, extra = todo.pop(0)
        if (wheel.name, extra) in done:
            continue
        done.add((wheel.name, extra))
        who = f"{wheel.name} {wheel.version}" + (f" [{extra}]" if extra else "")
        for line in wheel.requires:
            try:
                req = Requirement(line)
            except InvalidRequirement:
                rep.problems.append(f"{who}: unparsable Requires-Dist {line!r}")
                continue
            if req.marker is not None:
                # Lines gated by an extra evaluate False with extra="": only extras that some
                # requirement asked for (visited with extra="x") apply.
                mentions_extra = "extra" in str(req.marker)
                if not req.marker.evaluate({**env, "extra": extra}):
                    continue
                if extra and not mentions_extra:
                    continue  # already handled when the wheel was visited without extras
            elif extra:
                continue
            name = canonicalize_name(req.name)
            if name in by_name:
                dep = by_name[name]
                if req.specifier and not req.specifier.contains(dep.version, prereleases=True):
                    rep.problems.append(f"{who} needs {req.name}{req.specifier}, "
                                        f"the set has {dep.version}")
                todo += [(dep, canonicalize_name(x)) for x in sorted(req.extras)]
            elif name in host:
                version = host[name]
                if version is None:
                    if req.specifier and name not in seen_notes:
                        seen_notes.add(name)
                        rep.notes.append(f"{req.name}{req.specifier} (for {who}): on the host, "
                                         f"version not recorded")
                else:
                    try:
                        fits = not req.specifier or req.specifier.contains(
                            Version(version), prereleases=True)
                    except InvalidVersion:
                        fits = True
                    if not fits:
                        rep.problems.append(f"{who} needs {req.name}{req.specifier}, "
                                            f"the host has {version}")
            elif (wheel.name, name) in waived or ("", name) in waived:
                reason = waived.get((wheel.name, name)) or waived[("", name)]
                rep.waived.append(f"{req.name} (for {who}): {reason}")
            else:
                rep.problems.append(f"{who} needs {req}: neither in the wheel set nor on the host")
    rep.waived = sorted(set(rep.waived))
    return rep


def run_check(dest: Path, reqs: RequirementsFile, python_version: str,
              platforms: tuple[str, ...] | list[str], host: dict[str, str | None]) -> CheckReport:
    if not Path(dest).is_dir():
        raise WheelhouseError(f"no such folder: {dest}")
    wheels, others = list_folder(Path(dest))
    rep = CheckReport(problems=check_folder(wheels, others, reqs.pins, python_version, platforms))
    comp = check_completeness(wheels, host, reqs.waived, target_environment(python_version))
    rep.problems += comp.problems
    rep.waived += comp.waived
    rep.notes += comp.notes
    return rep


def print_report(rep: CheckReport, n_wheels: int, verbose: bool = False) -> None:
    for w in rep.waived:
        say(f"  waived   {w}")
    if rep.notes:
        say(f"  host     {len(rep.notes)} version ranges met by a host package whose version is "
            f"not recorded (pass --host-packages with the host's pip freeze to check them)")
        if verbose:
            for n in rep.notes:
                say(f"           {n}")
    for p in rep.problems:
        say(f"  PROBLEM  {p}")
    if rep.ok:
        say(f"check: OK: {n_wheels} wheels, one per requirement, and every requirement is met "
            f"(set/host), {len(rep.waived)} waived")
    else:
        say(f"check: {len(rep.problems)} problem(s)")


# --------------------------------------------------------------------------- download


def pip_download_cmd(specs: list[str], dest: Path, python_version: str,
                     platforms: tuple[str, ...] | list[str]) -> list[str]:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "--progress-bar", "off",
           "--python-version", python_version, "--implementation", "cp", "-d", str(dest)]
    for p in platforms:
        cmd += ["--platform", p]
    return cmd + specs


def _pip_quiet(cmd: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


def build_from_sdist(dest: Path, pin: Pin, env_pairs: tuple[str, ...]) -> None:
    """Build PIN's pure-Python wheel from its sdist (PyPI has no wheel of it), unless it is already in DEST.

    No build isolation: the sdist's setup imports torch, which the running environment has (a CPU torch is
    enough when the build compiles no extension, e.g. DS_BUILD_OPS=0 for deepspeed)."""
    have = [p for p in Path(dest).glob("*.whl") if _wheel_is(p, pin)]
    if have:
        return
    say(f"building {pin.spec} from its sdist ({' '.join(env_pairs) or 'no build variables'})")
    env = {**os.environ, **dict(v.split("=", 1) for v in env_pairs)}
    res = _pip_quiet([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                      "--no-binary", pin.name, "--disable-pip-version-check", "-w", str(dest), pin.spec], env=env)
    if res.returncode != 0:
        tail = (res.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise WheelhouseError(f"could not build {pin.spec} from its sdist: {tail}")


def _wheel_is(path: Path, pin: Pin) -> bool:
    try:
        w = read_wheel(path)
    except WheelhouseError:
        return False
    return w.name == pin.name and Version(w.version) == Version(pin.version)


def download(dest: Path, reqs: RequirementsFile, python_version: str,
             platforms: tuple[str, ...] | list[str], clean: bool = False) -> None:
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    wanted = {p.name: p for p in reqs.pins}
    for p in sorted(dest.iterdir()):
        stray = p.suffix != ".whl"
        if not stray:
            try:
                w = read_wheel(p)
                stray = w.name not in wanted or Version(w.version) != Version(wanted[w.name].version)
            except WheelhouseError:
                stray = True
        if stray:
            if clean:
                say(f"removing {p.name} (not in the requirements)")
                if p.is_dir():
                    shutil.rmtree(p)
                else:
                    p.unlink()
            else:
                say(f"warning: {p.name} is not in the requirements (--clean removes it)")
    for pin in reqs.pins:
        if pin.name in reqs.build:
            build_from_sdist(dest, pin, reqs.build[pin.name][0])
    specs = [p.spec for p in reqs.pins if p.name not in reqs.build]
    say(f"downloading {len(specs)} wheels for CPython {python_version} "
        f"({', '.join(platforms[:3])}, ... or py3-none-any) into {dest}/")
    # pip skips files that are already in dest and writes each new one only once it is complete.
    res = _pip_quiet(pip_download_cmd(specs, dest, python_version, platforms))
    if res.returncode == 0:
        # Another build of a pinned wheel left by an earlier run (other platform tags) would make
        # two wheels for one package: keep the one pip picked this time.
        picked = set(re.findall(r"(?:Saved|File was already downloaded)\s+(\S+\.whl)", res.stdout))
        picked = {Path(f).name for f in picked}
        if len(picked) == len(specs):
            for p in sorted(dest.glob("*.whl")):
                try:
                    name = read_wheel(p).name
                    pinned = name in wanted and name not in reqs.build  # a built wheel is not pip's pick
                except WheelhouseError:
                    pinned = False
                if pinned and p.name not in picked:
                    say(f"removing {p.name} (another build of a pinned wheel; pip picked "
                        f"a better-matching one)")
                    p.unlink()
        return
    # Name every pin that fails, not only the first one pip stopped at.
    missing = []
    for i, spec in enumerate(specs, 1):
        one = _pip_quiet(pip_download_cmd([spec], dest, python_version, platforms))
        say(f"  [{i}/{len(specs)}] {spec}: {'ok' if one.returncode == 0 else 'NOT FOUND'}")
        if one.returncode != 0:
            missing.append(spec)
    if not missing:
        tail = (res.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise WheelhouseError(f"pip download failed: {tail}")
    raise WheelhouseError(
        f"no binary wheel for CPython {python_version} on {platforms[0]} or the other "
        f"{len(platforms) - 1} platform tags for: {' '.join(missing)}")


def slim_wheel(path: Path, keep: tuple[str, ...]) -> tuple[int, int]:
    """Rewrite wheel PATH without the native libraries (``*.so*``) whose file names are not in KEEP, and without
    their RECORD lines, so that it still installs (pip checks the hashes of the files that are there). The file
    name stays, so the pin and pip's "already downloaded" check still match. Returns (bytes before, after).

    Why: bitsandbytes ships one 4-27 MB library per CUDA/ROCm version; the GPU host needs one of them, and the
    device tool carries at most 64 MiB per call."""
    import zipfile

    path = Path(path)
    before = path.stat().st_size
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        drop = {n for n in names if re.search(r"\.so(\.|$)", Path(n).name) and Path(n).name not in keep}
        if not drop:
            return before, before
        record = next((n for n in names if n.endswith(".dist-info/RECORD")), None)
        tmp = path.with_suffix(".slim-tmp")
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as out:
            for info in z.infolist():
                if info.filename in drop:
                    continue
                data = z.read(info.filename)
                if info.filename == record:
                    lines = data.decode("utf-8").splitlines()
                    data = ("\n".join(ln for ln in lines if ln.split(",", 1)[0] not in drop) + "\n").encode()
                out.writestr(info, data)
    tmp.replace(path)
    return before, path.stat().st_size


def apply_slim(dest: Path, reqs: RequirementsFile) -> None:
    for p in sorted(Path(dest).glob("*.whl")):
        try:
            name = read_wheel(p).name
        except WheelhouseError:
            continue
        if name in reqs.slim:
            keep, reason = reqs.slim[name]
            before, after = slim_wheel(p, keep)
            if after != before:
                say(f"slimmed {p.name}: {mib(before):.1f} -> {mib(after):.1f} MiB (kept {', '.join(keep)}; {reason})")


def total_size(folder: Path) -> int:
    return sum(p.stat().st_size for p in Path(folder).iterdir() if p.is_file())


def mib(n: int) -> float:
    return n / 2**20


# --------------------------------------------------------------------------- install


def install_cmd(folder: Path, pins: list[Pin], target: Path | None) -> list[str]:
    cmd = [sys.executable, "-m", "pip", "install", "--no-index", "--no-deps",
           "--disable-pip-version-check", "--no-cache-dir", "--find-links", str(folder)]
    if target is not None:
        cmd += ["--target", str(target), "--upgrade"]
    return cmd + [p.spec for p in pins]


# --------------------------------------------------------------------------- command line


def _host_packages(path: str | None) -> dict[str, str | None]:
    if not path:
        return gpu_host_packages()
    try:
        return parse_host_packages(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise WheelhouseError(f"cannot read {path}: {exc.strerror}") from None


def _common(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--requirements", default=str(DEFAULT_REQUIREMENTS),
                    help="pinned list (default: experiments/setup/requirements-gpu.txt)")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["install"]:
            return _main_install(argv[1:])
        return _main_download(argv)
    except WheelhouseError as exc:
        print(f"wheelhouse: error: {exc}", file=sys.stderr, flush=True)
        return 2


DOWNLOAD_HELP = ("Download (or --check) the GPU-side wheel set; "
                 "'install --from DIR [--target DIR]' installs it offline.")
INSTALL_HELP = ("Offline install of the wheel set: "
                "pip install --no-index --no-deps --find-links DIR <every pin>.")


def register(sub) -> None:
    """`swiftbench wheelhouse [--dest DIR] ...` and `swiftbench wheelhouse install --from DIR [--target T]` (for
    analysis.cli's SUBCOMMAND_MODULES)."""
    p = sub.add_parser("wheelhouse", help="wheels for an air-gapped GPU host: download and check, or install",
                       description=DOWNLOAD_HELP)
    _download_arguments(p)
    p.set_defaults(func=_one_line(_download))
    inner = p.add_subparsers(dest="wheelhouse_command", metavar="install")
    i = inner.add_parser("install", help="offline install of the wheel set", description=INSTALL_HELP)
    _install_arguments(i)
    i.set_defaults(func=_one_line(_install))


def _one_line(run):
    """A WheelhouseError is one line on stderr and exit code 2, as with `python -m experiments.setup.wheelhouse`."""
    def command(args) -> int:
        try:
            return run(args)
        except WheelhouseError as exc:
            print(f"wheelhouse: error: {exc}", file=sys.stderr, flush=True)
            return 2
    return command


def _download_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--dest", default="wheelhouse", help="wheel folder (default: wheelhouse)")
    ap.add_argument("--python-version", default="3.12", help="target CPython (default: 3.12)")
    ap.add_argument("--platform", action="append", dest="platforms", metavar="TAG",
                    help="platform tag, repeatable (default: manylinux x86_64 tags, glibc <= 2.39)")
    ap.add_argument("--check", action="store_true",
                    help="only check the folder: one wheel per requirement, nothing else, "
                         "every Requires-Dist met by the set, the host or a waiver")
    ap.add_argument("--clean", action="store_true", help="remove files not in the requirements")
    ap.add_argument("-v", "--verbose", action="store_true", help="list every host requirement "
                    "whose version could not be checked")
    ap.add_argument("--host-packages", metavar="FILE",
                    help="GPU host package list (KINDS.md, pip freeze or pip list output); "
                         "default: the built-in snapshot host-freeze.txt")
    _common(ap)


def _install_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--from", dest="source", default="wheelhouse", help="wheel folder")
    ap.add_argument("--target", help="install into this folder (put it on PYTHONPATH) instead "
                                     "of the running interpreter's environment")
    ap.add_argument("--dry-run", action="store_true", help="print the pip command only")
    _common(ap)


def _main_download(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.setup.wheelhouse", description=DOWNLOAD_HELP)
    _download_arguments(ap)
    return _download(ap.parse_args(argv))


def _main_install(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.setup.wheelhouse install", description=INSTALL_HELP)
    _install_arguments(ap)
    return _install(ap.parse_args(argv))


def _download(args: argparse.Namespace) -> int:
    reqs = load_requirements(Path(args.requirements))
    platforms = tuple(args.platforms or DEFAULT_PLATFORMS)
    host = _host_packages(args.host_packages)
    dest = Path(args.dest)

    if not args.check:
        download(dest, reqs, args.python_version, platforms, clean=args.clean)
        apply_slim(dest, reqs)
    wheels, _ = list_folder(dest) if dest.is_dir() else ([], [])
    size = total_size(dest) if dest.is_dir() else 0
    if not args.check:
        for w in wheels:
            say(f"  {mib(w.size):7.2f} MiB  {w.path.name}")
    say(f"total: {len(wheels)} wheels, {mib(size):.1f} MiB in {dest}/")
    if mib(size) > WARN_MIB:
        say(f"warning: the wheel set is {mib(size):.1f} MiB, over {WARN_MIB:.0f} MiB: everything "
            f"that travels to the GPU machine (repo + carried paths) is capped at 64 MiB")
    rep = run_check(dest, reqs, args.python_version, platforms, host)
    print_report(rep, len(wheels), verbose=args.verbose)
    return 0 if rep.ok else 1


def _install(args: argparse.Namespace) -> int:
    reqs = load_requirements(Path(args.requirements))
    source = Path(args.source)
    if not source.is_dir():
        raise WheelhouseError(f"no such folder: {source}")
    cmd = install_cmd(source, reqs.pins, Path(args.target) if args.target else None)
    say("+ " + " ".join(cmd))
    if args.dry_run:
        return 0
    res = subprocess.run(cmd, env={**os.environ, "PIP_NO_INPUT": "1"})
    if res.returncode != 0:
        raise WheelhouseError(f"pip install failed (exit {res.returncode})")
    where = f"{args.target} (export PYTHONPATH={Path(args.target).resolve()})" \
        if args.target else sys.prefix
    say(f"installed {len(reqs.pins)} packages into {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
