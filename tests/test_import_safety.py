"""`swiftbench import` whole or not at all, beside another import of the same log, into any tree: two imports at once
make one run folder (20 rounds of a race), never a folder without its log; a full disk, a read-only tree, --results
naming a file, an unreadable or folder log, a broken earlier run.json are one line; a private log stays private."""
from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from faultkit import REPO, SEED_RUN, cli, one_line, permissions_in_force


@pytest.fixture
def output(tmp_path) -> Path:
    """A plain `swift sft` output folder: output/<model>/v0-<timestamp>/ with a log and args.json."""
    run = tmp_path / "output" / "Qwen2.5-7B-Instruct" / "v0-20261201-002632"
    run.mkdir(parents=True)
    shutil.copy(SEED_RUN / "logging.jsonl", run)
    shutil.copy(SEED_RUN / "args.json", run)
    return tmp_path / "output"


def _import(output: Path, results: Path, *extra) -> tuple[int, str, str]:
    return cli("import", output, "--hw", "h200", "--experiment", "myrun", "--results", results, *extra)


def _run_folders(results: Path) -> list[Path]:
    return [p for p in results.glob("*/*/*") if p.is_dir()] if results.is_dir() else []


def test_two_imports_at_once_make_one_run_folder_with_its_log(output, tmp_path):
    """17 of 30 rounds gave a traceback, 2 of 30 a run folder holding run.json without its log. 20 rounds of two
    processes started together: no traceback, one run folder, whole, each time."""
    cmd = [sys.executable, "-m", "analysis.cli", "import", str(output), "--hw", "h200", "--experiment", "myrun"]
    for n in range(20):
        results = tmp_path / f"results{n}"
        procs = [subprocess.Popen([*cmd, "--results", str(results)], cwd=REPO, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(2)]
        done = [(p.wait(timeout=120), *p.communicate()) for p in procs]
        assert all(rc == 0 and err == "" for rc, _, err in done), done
        assert sorted(out.split(":")[0] for _, out, _ in done) == ["already there", "imported"], done
        (run,) = _run_folders(results)
        assert sorted(f.name for f in run.iterdir()) == ["args.json", "env.json", "logging.jsonl", "run.json"]
        assert (run / "logging.jsonl").read_bytes() == (SEED_RUN / "logging.jsonl").read_bytes()
        assert not [p for p in run.parent.iterdir() if p.name.startswith(".")]


def test_an_import_finished_between_the_unlocked_checks_is_already_there(output, tmp_path, monkeypatch):
    """CI, round 9 of the race above: the other import renamed its folder into place after this one's lexists() saw
    nothing and before it looked the log's sha up, so the unlocked pre-check refused the run as "already imported"
    under its own label (exit 2). The window, forced: the folder appears right after lexists() says no."""
    from experiments.run import importer

    results = tmp_path / "results"
    rc, out, err = _import(output, results)
    assert rc == 0 and out.startswith("imported: "), err
    (run,) = _run_folders(results)
    real = importer.os.path.lexists
    monkeypatch.setattr(importer.os.path, "lexists", lambda p: False if Path(p) == run else real(p))
    (src,) = importer.swift_runs(output)
    assert importer.checked(src, "h200", "myrun", results)[2:] == (run, True)
    monkeypatch.undo()
    rc, out, err = _import(output, results)
    assert (rc, err, out.split(":")[0]) == (0, "", "already there")


def test_a_full_disk_leaves_no_partial_folder_and_is_one_line(output, tmp_path, monkeypatch):
    """ENOSPC during the copy left a `.partial` folder that `tables` then skipped (exit 3) for ever."""
    from experiments.run import importer

    real_copy = importer._copy

    def full(src, dst, sha=None):
        real_copy(src, dst, sha)
        raise OSError(errno.ENOSPC, "No space left on device", str(dst))
    monkeypatch.setattr(importer, "_copy", full)
    results = tmp_path / "results"
    rc, out, err = _import(output, results)
    one_line(rc, err, "logging.jsonl: cannot be written (No space left on device): nothing was imported")
    assert _run_folders(results) == [] and not list(results.rglob(".*"))


def test_a_stale_partial_folder_is_named_by_tables_and_removed_by_the_next_import(output, tmp_path):
    results = tmp_path / "results"
    rc, out, err = _import(output, results)
    assert rc == 0, err
    (run,) = _run_folders(results)
    stale = run.with_name(f".{run.name}.x1y2{'.partial'}")
    shutil.copytree(run, stale)
    shutil.rmtree(run)
    rc, out, err = cli("tables", results, "--format", "json")
    one_line(rc, err, f"skipped {stale}: an unfinished `swiftbench import`", code=3)
    rc, out, err = _import(output, results)
    assert rc == 0 and out.startswith("imported: "), err
    assert [p.name for p in _run_folders(results)] == [run.name] and not stale.exists()


def test_a_private_log_stays_private(output, tmp_path):
    """A 0600 log was copied as 0644."""
    log = next(output.rglob("logging.jsonl"))
    log.chmod(0o600)
    rc, out, err = _import(output, tmp_path / "results")
    assert rc == 0, err
    (run,) = _run_folders(tmp_path / "results")
    assert stat.S_IMODE((run / "logging.jsonl").stat().st_mode) == 0o600
    assert stat.S_IMODE((run / "args.json").stat().st_mode) == stat.S_IMODE((log.parent / "args.json").stat().st_mode)


@pytest.mark.parametrize("case, needle", [
    ("read-only tree", "results/h200/myrun: cannot be written (Permission denied)"),
    ("results is a file", "--results names something that is not a folder"),
    ("unreadable log", "logging.jsonl: cannot be read (Permission denied)"),
    ("log is a folder", "logging.jsonl: a folder, not a file"),
    ("broken earlier run.json", "run.json:1: not valid JSON"),
])
def test_what_an_import_cannot_do_is_one_line(output, tmp_path, case, needle):
    results = tmp_path / "results"
    log = next(output.rglob("logging.jsonl"))
    if case == "read-only tree":
        results.mkdir()
        results.chmod(0o555)
    elif case == "results is a file":
        results.write_text("not a folder")
    elif case == "unreadable log":
        log.chmod(0)
    elif case == "log is a folder":
        log.unlink()
        log.mkdir()
    else:
        rc, out, err = _import(output, results)
        (run,) = _run_folders(results)
        earlier = results / "h200" / "other" / run.name.replace("20261201-002632", "20261130-000000")
        earlier.parent.mkdir()
        run.rename(earlier)  # an earlier import of the same log under another label ...
        (earlier / "run.json").write_text("{broken")  # ... whose run.json cannot tell whether it is this log
    try:
        with permissions_in_force():
            rc, out, err = _import(output, results)
    finally:
        results.chmod(0o755) if results.is_dir() else None
        log.chmod(0o644) if log.is_file() else None
    one_line(rc, err, needle)
    if case != "broken earlier run.json":
        assert _run_folders(results) == []


def test_an_import_through_a_symlinked_output_folder_finds_its_runs(output, tmp_path):
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "model").symlink_to(output / "Qwen2.5-7B-Instruct", target_is_directory=True)
    rc, out, err = _import(linked, tmp_path / "results")
    assert rc == 0 and out.startswith("imported: "), err
    (run,) = _run_folders(tmp_path / "results")
    assert json.loads((run / "run.json").read_text())["imported"]["source"] == str(
        (output / "Qwen2.5-7B-Instruct" / "v0-20261201-002632").resolve())
    assert os.path.getsize(run / "logging.jsonl") == os.path.getsize(SEED_RUN / "logging.jsonl")
