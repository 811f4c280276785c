"""Where a run's train_runtime went by the launcher's per-step walls (analysis.measure.jobtime.epoch_parts), on the
committed H100 runs of gpu-bound (results/calls/2026-12-07-call25): the cold run's step 1 is its compile."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.measure import jobtime
from analysis.measure.steps import steady_steps
from analysis.parse.results import read_run

ROOT = Path(__file__).resolve().parents[1]
COLD = ROOT / "results" / "h100" / "gpu-bound" / "20261207-101805-d396bcf5564b"
WARM = ROOT / "results" / "h100" / "gpu-bound" / "20261207-103643-d396bcf5564b"


def test_the_cold_runs_epoch_parts_by_hand():
    """gpm.jsonl's step 1 wall 91.250762 s, step 2 5.181168 s; the 94 walls sum to 118.181 s, so 4.975 s of the
    123.1561 s train_runtime lie outside the steps; 75 steady steps (11-90 less 51-55, the logged interval holding the
    evaluation and save at step 50), the other 17 (3-10, 51-55 and 91-94) the rest."""
    rec = read_run(COLD)
    walls = {r["step"]: r["wall_s"] for r in map(json.loads, (COLD / "gpm.jsonl").open())}
    parts = jobtime.epoch_parts(rec)
    assert parts is not None
    assert (parts.first_s, parts.second_s) == (91.250762, 5.181168)
    steady = set(steady_steps(rec))
    assert parts.steady_n == len(steady) == 75 and parts.other_n == 94 - 2 - 75 == 17
    assert min(steady) == 11 and max(steady) == 90 and not steady & {51, 52, 53, 54, 55}
    assert parts.steady_s == pytest.approx(sum(walls[s] for s in steady)) == pytest.approx(15.3846, abs=1e-4)
    assert parts.outside_s == pytest.approx(123.1561 - sum(walls.values())) == pytest.approx(4.9751, abs=1e-4)
    total = parts.first_s + (parts.second_s or 0) + parts.steady_s + parts.other_s + (parts.outside_s or 0)
    assert total == pytest.approx(parts.runtime_s) == pytest.approx(123.1561)


def test_a_run_without_per_step_walls_has_no_parts():
    rec = read_run(ROOT / "tests" / "fixtures" / "v4_full")  # ms-swift's own files only: no gpm.jsonl
    assert rec.gpm_by_step is None and jobtime.epoch_parts(rec) is None


def test_swiftbench_profile_says_where_an_unprofiled_runs_epoch_went():
    """The warm run: 75 steady steps at 140.8 ms GPU busy and 26.5 ms host by GPM, step 1 51.5 s of 73.7 s."""
    out = subprocess.run([sys.executable, "-m", "analysis.cli", "profile", str(WARM)], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    flat = " ".join(out.split())
    assert "no profiled step" in flat
    assert "steady steps (GPM counters, 75 steps, means): GPU busy 140.8, host 26.5 ms (84% busy" in flat
    assert "train_runtime 73.7 s by the per-step walls: step 1 51.5 s, step 2 1.6 s, 75 steady steps 12.6 s" in flat
