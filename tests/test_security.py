"""A run.json is data from anywhere: trees merged by `fleet-collect` or `tables a b` carry other machines' run.json
verbatim. Nothing it names may be deleted or signalled unless the runner derived or verified it itself (issue 30).

Each test plants a victim of its own (a folder, a `setsid sleep`) and shows that it survives."""
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from experiments.run import cache as run_cache
from experiments.run import orphans as run_orphans
from experiments.run import reaper, runner
from experiments.run import spec as run_spec

REPO = Path(__file__).resolve().parents[1]


def _interrupted_run(results: Path, spec, **fields) -> Path:
    run = results / spec.hw / spec.experiment / "20261201-000000"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"status": "failed", "reason": "interrupted (the runner got SIGTERM)",
                                              "key": spec.key(), **fields}))
    return run


def test_a_run_json_work_dir_never_gets_a_folder_deleted(tmp_path):
    """find_resumable used to rmtree run.json's `work_dir` for an interrupted run without a checkpoint."""
    victim = tmp_path / "victim"
    (victim / "checkpoint-3").mkdir(parents=True)
    (victim / "precious.txt").write_text("keep me")
    spec = run_spec.RunSpec(hw="cpu", experiment="seed", model="dummy:tiny", results_dir=str(tmp_path / "results"))
    _interrupted_run(tmp_path / "results", spec, work_dir=str(victim))
    assert run_cache.find_resumable(spec) is None
    assert (victim / "precious.txt").read_text() == "keep me" and (victim / "checkpoint-3").is_dir()


def test_the_runner_deletes_only_its_own_cache_folder(tmp_path, monkeypatch):
    """remove_work_dir deletes the derived folder inside CHECKPOINTS, and refuses one that is a link out of it."""
    monkeypatch.setattr(run_cache, "CHECKPOINTS", tmp_path / "checkpoints")
    run = tmp_path / "results" / "cpu" / "seed" / "r1"
    run.mkdir(parents=True)
    own = run_cache.work_dir(run)
    own.mkdir(parents=True)
    assert run_cache.remove_work_dir(run) and not own.exists()
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me")
    own.symlink_to(victim, target_is_directory=True)  # a planted link in the cache folder
    assert not run_cache.remove_work_dir(run)
    assert (victim / "precious.txt").read_text() == "keep me"


def _running_run(results: Path, training: dict) -> Path:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    run = results / "cpu" / "seed" / "20261201-000000"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({
        "status": "running", "host": socket.gethostname(), "pid": gone.pid,
        "runner": {"pid": gone.pid, "started": None}, "training": training}))
    return run


@pytest.mark.parametrize("kind", ["exact record", "pid only", "pgid of another group"])
def test_kill_orphans_never_signals_a_process_that_is_not_the_recorded_training(tmp_path, kind):
    """A run.json naming a `setsid sleep` of this test (its true pid, start time and boot id even): --kill-orphans
    refuses in one line and the process lives on."""
    victim = subprocess.Popen(["setsid", "sleep", "300"])  # not a group leader: setsid execs in place
    try:
        time.sleep(0.3)
        pid = victim.pid
        training = {"exact record": {"pid": pid, "pgid": pid, "started": reaper.start_time(pid),
                                     "host": socket.gethostname(), "boot_id": reaper.boot_id()},
                    "pid only": {"pid": pid, "pgid": pid},
                    "pgid of another group": {"pid": 999999, "pgid": os.getpgid(pid), "started": 1,
                                              "boot_id": reaper.boot_id()}}[kind]
        results = tmp_path / "results"
        run = _running_run(results, training)
        p = subprocess.run([sys.executable, "-m", "analysis.cli", "run-all", "--hw", "cpu", "--results", results,
                            "--experiments", "seed", "--no-progress", "--kill-orphans"], capture_output=True,
                           text=True, cwd=REPO, timeout=120)
        assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
        assert "cannot be verified" in p.stderr and "nothing was signalled" in p.stderr, p.stderr
        with pytest.raises(runner.InputError):
            run_orphans.check_orphans(results, kill=True)
        time.sleep(0.3)
        assert victim.poll() is None and reaper.alive(pid), "the victim was signalled"
        assert json.loads((run / "run.json").read_text())["status"] == "running"
        run_orphans.stop_run(run, "test")  # stop_run too signals only a verified supervisor
        time.sleep(0.3)
        assert victim.poll() is None
    finally:
        victim.send_signal(signal.SIGKILL)
        victim.wait()
