"""data/committed-runs/ (the committed runs' files the planner reads, package data of the wheel) is the current copy
of results/ (`make estimator-data` writes it), and the planner reads it where no ./results is: in any other folder
its answer is the checkout's, said as coming from the packaged copy."""
from __future__ import annotations

import json
from pathlib import Path

from committed import committed_results

from analysis.cli import main
from analysis.parse import packaged
from experiments.base import paths

REPO = Path(__file__).resolve().parents[1]


def test_packaged_runs_are_the_committed_ones():
    diff = packaged.differences(committed_results(), paths.PACKAGED_RUNS)
    assert not diff, f"data/committed-runs differs from results/ ({len(diff)}): {diff[:10]}; run `make estimator-data`"
    assert packaged.wanted(committed_results()), "no committed run found"


def test_writing_the_copy_gives_the_same_tree(tmp_path):
    packaged.write(committed_results(), tmp_path / "runs")
    assert packaged.differences(committed_results(), tmp_path / "runs") == []
    (tmp_path / "runs" / "h200" / "extra").mkdir()
    (tmp_path / "runs" / "h200" / "extra" / "x.json").write_text("{}")
    assert packaged.differences(committed_results(), tmp_path / "runs") == ["not in " + str(committed_results())
                                                                        + ": h200/extra/x.json"]


def _plan(capsys, *args: str) -> list[dict]:
    assert main(["plan", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_planner_reads_the_packaged_copy_outside_a_checkout(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    here = _plan(capsys, "--hw", "h100,a10")
    monkeypatch.chdir(tmp_path)
    away = _plan(capsys, "--hw", "h100,a10")
    line = next(a for a in away[0]["assumptions"] if "measured times and profiles come from" in a)
    assert paths.PACKAGED_LABEL in line and str(paths.PACKAGED_RUNS) in line
    for row in here + away:
        row["assumptions"] = [a for a in row["assumptions"] if "measured times and profiles come from" not in a]
    assert away == here
