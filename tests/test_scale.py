"""`swiftbench tables` over 5,000 run folders: under 30 s and under 1 GB (it took 62 s and 2.7 GB: the tree was read
twice, once for the tables and once for the planner's measured steps, and every record held its own copy of what all
runs of a recipe share). The folders are the committed runs copied (hard links; run.json changed, so none is a copy
counted once)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FOLDERS = 5000
SKIP = {"runs", "images", "sft.ipynb", "stdout.log"}


def build(dst: Path, n: int) -> None:
    runs = sorted(p.parent for p in (REPO / "results").glob("*/*/*/run.json") if (p.parent / "logging.jsonl").is_file())
    for i in range(n):
        run = runs[i % len(runs)]
        copy = dst / run.relative_to(REPO / "results").parent / f"{run.name}-c{i}"
        copy.mkdir(parents=True)
        for f in run.iterdir():
            if f.name in SKIP or f.name.startswith("nvml") or not f.is_file():
                continue
            if f.name == "run.json":
                (copy / f.name).write_text(json.dumps({**json.loads(f.read_text()), "copy": i}))
            else:
                os.link(f, copy / f.name)


@pytest.mark.slow
def test_tables_over_5000_run_folders_in_under_30_s_and_1_gb(tmp_path):
    build(tmp_path / "results", FOLDERS)
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "analysis.cli", "tables", str(tmp_path / "results"), "--format",
                             "json"], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    err = proc.stderr.read().decode() if proc.stderr else ""
    assert os.waitstatus_to_exitcode(status) == 0, err
    cpu = usage.ru_utime + usage.ru_stime
    assert usage.ru_maxrss < 1024 * 1024, f"peak {usage.ru_maxrss / 1024:.0f} MiB"  # KiB
    assert cpu < 30, f"{cpu:.1f} s of CPU ({wall:.1f} s wall on a machine shared with other work)"
