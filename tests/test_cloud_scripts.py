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


STUB_PYTHON = r'''#!/usr/bin/env bash
# python3 as epoch_gpu.sh calls it: the runner's command lines logged with the artifacts file they were given; a run
# that is not a repeat saves compiled code, as swift_plugin.py does after a compile
if [ "$1" = -m ] && [ "$2" = experiments.run.runner ]; then
  echo "runner ${*:3} | artifacts=${SWIFTBENCH_COMPILE_ARTIFACTS:-none}" >> "$CALLS"
  case " $* " in *" --repeat "*) ;; *)
    mkdir -p "$HOME/.cache/swiftbench/inductor/artifacts"
    echo code > "$HOME/.cache/swiftbench/inductor/artifacts/sm90-torch2.11.0+cu130-triton3.6.0.bin" ;;
  esac
fi
exit 0
'''


def _epoch_call(tmp_path, experiments: str) -> tuple[str, list[str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (("python3", STUB_PYTHON), ("nvidia-smi", "#!/bin/sh\nexit 0\n")):
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755)
    (tmp_path / "data").mkdir()
    (tmp_path / "home" / ".triton" / "cache").mkdir(parents=True)
    (tmp_path / "torchinductor").mkdir()
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path / "home"), "CALLS": str(tmp_path / "calls"),
           "OUT": str(tmp_path / "out"), "LOG": str(tmp_path / "log"), "RESULTS": str(tmp_path / "res" / "results"),
           "HW": "h100", "MIN_S": "0", "SHIPPED_DIR": str(tmp_path / "compile_cache"),
           "TORCH_TMP_CACHE": str(tmp_path / "torchinductor")}  # never this machine's: other tests compile beside
    p = subprocess.run(["bash", str(CLOUD / "epoch_gpu.sh"), "300", "-", experiments, "dummy", str(tmp_path / "data")],
                       capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    return p.stdout, (tmp_path / "calls").read_text().splitlines()


def test_a_shipped_item_runs_as_a_fresh_host_with_the_compiled_code_the_run_before_saved(tmp_path):
    """gpu-bound~ after gpu-bound: the caches emptied and the saved file moved beside the plugin (SHIPPED_DIR), where
    the plugin finds its build's file by name as an installed copy does (no variable set); a repeat. gpu-bound+ after
    it keeps the caches."""
    out, calls = _epoch_call(tmp_path, "gpu-bound,gpu-bound~,gpu-bound+")
    shipped = tmp_path / "compile_cache" / "sm90-torch2.11.0+cu130-triton3.6.0.bin"
    assert [c.split(" | ")[1] for c in calls] == ["artifacts=none"] * 3
    assert shipped.read_text() == "code\n"
    assert "--experiments gpu-bound " in calls[1] and calls[1].split(" | ")[0].endswith("--repeat")
    assert "--repeat" not in calls[0] and calls[2].split(" | ")[0].endswith("--repeat")
    assert f"as a fresh host: caches emptied; compiled code shipped: {shipped} (5 bytes)" in out
    assert not (tmp_path / "home" / ".triton" / "cache").exists() and not (tmp_path / "torchinductor").exists()


def test_a_shipped_item_with_nothing_saved_is_not_started(tmp_path):
    out, calls = _epoch_call(tmp_path, "seed@15+,seed~")
    assert "no saved compiled code: not starting seed~" in out and len(calls) == 1 and "--max-steps 15" in calls[0]


def test_a_profiled_item_is_a_cut_run_of_its_own_under_the_profiler(tmp_path):
    """gpu-bound@20% after gpu-bound: --profile, never skipped as the complete run before it (--repeat)."""
    out, calls = _epoch_call(tmp_path, "gpu-bound,gpu-bound@20%")
    assert len(calls) == 2 and "--profile" not in calls[0]
    first = calls[1].split(" | ")[0]
    assert "--experiments gpu-bound " in first and "--max-steps 20" in first
    assert first.endswith("--profile --repeat")
    assert (tmp_path / "log" / "done-gpu-bound-at-20-profiled").exists()
