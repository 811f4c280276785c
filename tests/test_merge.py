"""Several result roots as one tree (issue 16) and bad run folders skipped, not fatal (issue 19, item 7).

`swiftbench tables A B` merges the roots: a run copied into both counts once (with a note), runs made on another
host are rows of their own, and run folders that cannot be used are named on stderr with the reason, exit code 3
(experiments.base.errors.SKIPPED_EXIT). New run folders end in the host id, so two machines' trees never collide.
"""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from committed import committed_results

from analysis.parse.results import UNLABELLED, scan
from experiments.base.errors import SKIPPED_EXIT
from experiments.run import folders as run_folders
from experiments.run import spec as run_spec

REPO = Path(__file__).resolve().parents[1]
OTHER_HOST = "0123456789ab"


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "analysis.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, timeout=300)


def _rehost(run: Path, host: str) -> Path:
    """RUN as made on HOST: its env.json with that host id, its folder named the way the runner names it now."""
    env = json.loads((run / "env.json").read_text())
    env["host"] = {"fingerprint": {"host_id": host}}
    (run / "env.json").write_text(json.dumps(env))
    return run.rename(run.with_name(f"{run.name}-{host}"))


@pytest.fixture
def two_trees(results_tree, tmp_path):
    """A (the fixture's four runs) and B: the same four runs copied (duplicates) and the four made on another host."""
    other = tmp_path / "other"
    shutil.copytree(results_tree, other / "copied")
    rehosted = tmp_path / "rehosted"
    shutil.copytree(results_tree, rehosted)
    for run in sorted(rehosted.glob("*/*/*")):
        _rehost(run, OTHER_HOST)
    shutil.copytree(rehosted, other / "machine2")
    return results_tree, other


def _measured(rows):
    return sorted((r["hw"], r["experiment"], r["run"], r["host"]) for r in rows if r["source"] == "measured")


def test_two_trees_merge_without_lost_or_doubled_runs(two_trees):
    a, b = two_trees
    alone = json.loads(_cli("tables", a, "--format", "json").stdout)
    p = _cli("tables", a, b, "--format", "json")
    assert p.returncode == 0, p.stderr
    merged = json.loads(p.stdout)
    want = _measured(alone["speedup"]) + [(hw, e, f"{run}-{OTHER_HOST}", OTHER_HOST)
                                          for hw, e, run, _ in _measured(alone["speedup"])]
    assert _measured(merged["speedup"]) == sorted(want)  # every run once: A's four, machine 2's four
    assert len([r for r in merged["convergence"] if r["source"] == "measured"]) == 8
    notes = [ln for ln in p.stderr.splitlines() if "counted once" in ln]
    assert len(notes) == 4 and all("copied" in ln for ln in notes)  # the copies, named, counted once
    sc = scan([a, b])
    assert len(sc.records) == 8 and not sc.skipped


def test_new_run_folders_carry_the_host_id(tmp_path, monkeypatch):
    from experiments.record import host

    monkeypatch.setattr(host, "fingerprint", lambda *a, **k: {"host_id": OTHER_HOST})
    spec = run_spec.RunSpec(hw="h200", experiment="seed", results_dir=str(tmp_path))
    d = run_folders.new_run_dir(spec)
    assert d.name.endswith(f"-{OTHER_HOST}") and d.name[:15].replace("-", "").isdigit()


# ---------------------------------------------------------------------------------- skipped, not fatal


def _break(results: Path, how: str) -> Path:
    run = results / "h200" / "bs16" / "run-20261130-000000"
    if how == "bad_json":
        (run / "run.json").write_text("{not json")
    elif how == "not_utf8":
        (run / "run.json").write_bytes(b'{"status": "ok", "note": "\xff\xfe"}')
    elif how == "not_object":
        (run / "env.json").write_text("[1, 2]")
    elif how == "broken_log":
        with (run / "logging.jsonl").open("a") as f:
            f.write("[1]\n" + (run / "logging.jsonl").read_text().splitlines()[-1] + "\n")
    return run


@pytest.mark.parametrize("how,needle", [("bad_json", "run.json:1: not valid JSON"),
                                        ("not_utf8", "run.json: not UTF-8"),
                                        ("not_object", "env.json: not a JSON object"),
                                        ("broken_log", "a JSON list, not an object")])
def test_a_bad_run_folder_is_skipped_with_one_line(results_tree, how, needle):
    bad = _break(results_tree, how)
    p = _cli("tables", results_tree, "--format", "json")
    assert p.returncode == SKIPPED_EXIT, p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"swiftbench: skipped {bad}: ") and needle in lines[0], lines
    rows = json.loads(p.stdout)["speedup"]
    assert {(r["hw"], r["experiment"]) for r in rows if r["source"] == "measured"} == {
        ("h200", "seed"), ("a100", "seed"), ("h100", "seed")}  # the other three runs are there
    # parse on the tree: the same folder skipped, the rest parsed, exit 3
    p = _cli("parse", results_tree, "--json")
    assert p.returncode == SKIPPED_EXIT and len(json.loads(p.stdout)) == 3
    assert p.stderr.count("\n") == 1 and "skipped" in p.stderr and needle in p.stderr


def test_parse_of_one_bad_run_still_stops_with_exit_2(results_tree):
    bad = _break(results_tree, "bad_json")
    p = _cli("parse", bad)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "not valid JSON" in p.stderr


def test_a_folder_with_only_a_log_is_an_unlabelled_run(results_tree):
    run = results_tree / "h100" / "seed" / "run-20261130-000000"
    (run / "run.json").unlink()
    (run / "env.json").unlink()
    sc = scan(results_tree)
    rec = next(r for r in sc.records if r.hw == "h100")
    assert UNLABELLED in rec.labels and not sc.skipped
    p = _cli("tables", results_tree, "--format", "json")
    assert p.returncode == 0 and "unlabelled run" in p.stderr and str(run) in p.stderr
    row = next(r for r in json.loads(p.stdout)["speedup"] if r["hw"] == "h100" and r["source"] == "measured")
    assert "unlabelled" in row["labels"]


def test_folders_outside_the_layout_are_named_not_dropped(results_tree):
    stray = results_tree / "tpu9" / "seed" / "run-1"
    shutil.copytree(results_tree / "h200" / "seed" / "run-20261130-000000", stray)
    typo = results_tree / "h200" / "seeed" / "run-1"
    shutil.copytree(results_tree / "h200" / "seed" / "run-20261130-000000", typo)
    p = _cli("tables", results_tree)
    assert p.returncode == SKIPPED_EXIT
    lines = p.stderr.splitlines()
    assert len(lines) == 2
    assert f"skipped {stray}: not in the <hw>/<experiment>/<run> layout ('tpu9'" in p.stderr
    assert f"skipped {typo}: experiment 'seeed' is neither" in p.stderr


def test_the_committed_results_skip_nothing():
    sc = scan(committed_results())
    assert sc.records and not sc.skipped and not sc.notes, sc.lines()
