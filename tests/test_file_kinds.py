"""Every file name of the run-folder contract (experiments/base/runfiles.py) as what no reader should open as a file:
a FIFO, a folder, a symlink loop, an unreadable file, a file past its size cap, a link to /dev/zero. `tables` of the
tree exits 0 or 3 (the folder skipped, said in one line) and keeps the other run's rows, `parse` of the folder exits 0
or 2 with one line, never a traceback and each within 10 s: every pair of name and kind, and (hypothesis) two to four
files broken at once."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from faultkit import cli, permissions_in_force, tree

from experiments.base import runfiles

NAMES = sorted({v for k, v in vars(runfiles).items() if k.isupper() and isinstance(v, str) and "." in v
                and not v.startswith(".")})
KINDS = ("fifo", "folder", "symlink loop", "unreadable", "huge", "/dev/zero")


def test_the_names_are_the_contract_s():
    assert {"run.json", "env.json", "logging.jsonl", "args.json", "sft_args.json", "tokens.jsonl", "profile.json",
            "launch.json", "schedule.jsonl", "gpm.jsonl", "model_config.json", "command.sh"} <= set(NAMES)


def make(path: Path, kind: str) -> None:
    """PATH (a file of a run folder, present or not) turned into KIND."""
    old = path.read_bytes() if path.is_file() and not path.is_symlink() else b"{}\n"
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
        (path / "x").write_text("{}")
    elif kind == "symlink loop":
        path.symlink_to(path.name)
    elif kind == "unreadable":
        path.write_bytes(old)
        path.chmod(0)
    elif kind == "huge":  # sparse: past the cap without the disk space
        with open(path, "wb") as f:
            f.truncate(runfiles.max_bytes(path) + 1)
    else:
        path.symlink_to("/dev/zero")


def _rows(out: str, run: str) -> dict:
    return {name: [r for r in rows if r.get("run") == run] for name, rows in json.loads(out).items()}


def check(root: Path, bad: Path, good: Path, good_rows: dict) -> None:
    with permissions_in_force():
        rc, out, err = cli("tables", root, "--format", "json")
        assert rc in (0, 3), (rc, err)
        assert all(line.startswith(("swiftbench: skipped ", "swiftbench: note: ")) for line in err.splitlines()), err
        assert (rc == 3) == any(line.startswith("swiftbench: skipped ") for line in err.splitlines())
        assert _rows(out, good.name) == good_rows
        rc, out, err = cli("parse", bad, "--json")
        assert rc in (0, 2) and err.count("\n") == (rc == 2), (rc, err)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """A tree of two runs and the good run's rows, built once; each case works on a copy."""
    base = tmp_path_factory.mktemp("kinds")
    root, bad, good = tree(base)
    rc, out, err = cli("tables", root, "--format", "json")
    assert rc == 0, err
    return root, bad, good, _rows(out, good.name)


def _restore(src: Path, dst: Path) -> None:
    for p in [dst, *dst.rglob("*")]:
        if p.is_dir() and not p.is_symlink():
            p.chmod(0o755)
    shutil.rmtree(dst)
    shutil.copytree(src, dst, symlinks=True)


@pytest.mark.parametrize("kind", KINDS)
def test_every_contract_file_as_every_kind(pristine, tmp_path, kind):
    root0, bad0, good0, good_rows = pristine
    root = tmp_path / "results"
    shutil.copytree(root0, root, symlinks=True)
    bad, good = root / bad0.relative_to(root0), root / good0.relative_to(root0)
    for name in NAMES:
        make(bad / name, kind)
        try:
            check(root, bad, good, good_rows)
        except AssertionError as exc:
            raise AssertionError(f"{name} as {kind}: {exc}") from None
        _restore(bad0, bad)


def test_several_files_broken_at_once(pristine, tmp_path):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    root0, bad0, good0, good_rows = pristine
    root = tmp_path / "results"
    shutil.copytree(root0, root, symlinks=True)
    bad, good = root / bad0.relative_to(root0), root / good0.relative_to(root0)

    @settings(max_examples=40, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(KINDS)), min_size=2, max_size=4,
                    unique_by=lambda x: x[0]))
    def broken(changes):
        for name, kind in changes:
            make(bad / name, kind)
        try:
            check(root, bad, good, good_rows)
        finally:
            _restore(bad0, bad)

    broken()
