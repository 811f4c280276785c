"""The device-call scripts (experiments/cloud/*.sh): every one parses, and the shared wait for a run a call left
detached (gpu_common.sh detached_wait, used by epoch_gpu.sh and quick_gpu.sh) returns when the run's exit code
appears and gives up at the call's deadline."""
import subprocess
from pathlib import Path

import pytest

CLOUD = Path(__file__).resolve().parents[1] / "experiments" / "cloud"


@pytest.mark.parametrize("script", sorted(p.name for p in CLOUD.glob("*.sh")))
def test_every_device_call_script_parses(script):
    p = subprocess.run(["bash", "-n", str(CLOUD / script)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def _wait(tmp_path, deadline: int, write_after_s: float | None) -> subprocess.CompletedProcess:
    writer = f"(sleep {write_after_s}; echo 0 > {tmp_path}/detached.rc) &" if write_after_s is not None else ""
    script = f'. "{CLOUD}/gpu_common.sh"; LOG={tmp_path}; {writer} detached_wait {deadline}; echo "rc=$?"'
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)


def test_detached_wait_returns_when_the_run_has_ended(tmp_path):
    out = _wait(tmp_path, 30, 0.5).stdout
    assert "== detached run exit 0 at" in out and out.strip().endswith("rc=0")


def test_detached_wait_gives_up_at_the_deadline(tmp_path):
    out = _wait(tmp_path, 0, None).stdout  # SECONDS is past 0 at once: the call's time is up
    assert "detached run exit" not in out and out.strip().endswith("rc=1")
