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
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

try:
    from packaging.utils import canonicalize_name
    from packaging.version import Version
except ImportError:  # pragma: no cover - pip always vendors a copy
    # pip's vendored packaging: the same API, other classes to mypy
    from pip._vendor.packaging.utils import canonicalize_name  # type: ignore[no-redef,assignment]
    from pip._vendor.packaging.version import Version  # type: ignore[no-redef,assignment]

from experiments.setup.pins import (
    DEFAULT_REQUIREMENTS,
    GPU_HOST_FREEZE,
    Pin,
    RequirementsFile,
    WheelhouseError,
    gpu_host_packages,
    load_requirements,
    parse_host_packages,
    parse_requirements,
    say,
)
from experiments.setup.wheelcheck import (
    DEFAULT_PLATFORMS,
    CheckReport,
    Wheel,
    check_completeness,
    check_folder,
    list_folder,
    print_report,
    read_wheel,
    run_check,
    target_environment,
)

#: the set's inputs (pins.py) and its check (wheelcheck.py) are read through this module too: one name to import
__all__ = ["DEFAULT_PLATFORMS", "DEFAULT_REQUIREMENTS", "GPU_HOST_FREEZE", "CheckReport", "Pin", "RequirementsFile",
           "Wheel", "WheelhouseError", "canonicalize_name", "check_completeness", "check_folder", "gpu_host_packages",
           "list_folder", "load_requirements", "parse_host_packages", "parse_requirements", "read_wheel", "run_check",
           "target_environment", "apply_slim", "install_cmd", "main", "pip_download_cmd", "register", "slim_wheel"]

#: Everything that travels to the GPU machine is capped at 64 MiB; leave room for the repo.
WARN_MIB = 48.0


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
