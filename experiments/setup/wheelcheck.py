"""The wheel set's check: one wheel per pin, installable on the target (CPython on manylinux x86_64), and complete
(every Requires-Dist met by the set, the GPU host or a waiver). See experiments/setup/wheelhouse.py."""
from __future__ import annotations

import email.parser
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

try:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
    from packaging.version import InvalidVersion, Version
except ImportError:  # pragma: no cover - pip always vendors a copy
    # pip's vendored packaging: the same API, other classes to mypy
    from pip._vendor.packaging.requirements import InvalidRequirement, Requirement  # type: ignore[no-redef,assignment]
    from pip._vendor.packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename  # type: ignore[no-redef,assignment]
    from pip._vendor.packaging.version import InvalidVersion, Version  # type: ignore[no-redef,assignment]

from experiments.setup.pins import Pin, RequirementsFile, WheelhouseError, say

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
    for _name, extra in sorted(by_name.items()):
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
