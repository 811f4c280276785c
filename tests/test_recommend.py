"""The recommended recipe for the job (analysis.judge.recommend), exercised on synthetic results trees built from
committed full-epoch runs: the rule is data-driven (full-epoch train_runtime against a full-epoch seed run of the same
host, eval loss in the seed band), so a copied run with another host id or experiment must move the answer."""
import json
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.judge import recommend
from analysis.measure import jobtime
from analysis.parse.results import collect
from analysis.present import recommend_view
from analysis.present.tables import tables

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "results"
SEED_FULL = RESULTS / "h200/seed/20261201-105624-5f4daf78e2ab"   # full epoch, host 5f4daf78e2ab
BEST_FULL = RESULTS / "h200/best/20261201-105104-5f4daf78e2ab"   # full epoch, same host
BEST_OTHER = RESULTS / "h200/best/20261202-043018-e4e316c83b7a"  # full epoch, host e4e316c83b7a (no full seed run)
SPREAD = ["spread-s42", "spread-s43", "spread-s44"]              # the seed band's seeds (claims.yaml figures)


def clone(src: Path, root: Path, experiment: str | None = None, host: str | None = None, run: str | None = None,
          runtime_factor: float | None = None, eval_shift: float | None = None) -> Path:
    """Copy committed run SRC into ROOT as hw/EXPERIMENT/RUN, with its host id, train_runtime (and wall time) or
    final eval loss rewritten."""
    hw, exp = src.parts[-3], src.parts[-2]
    experiment = experiment or exp
    dst = root / hw / experiment / (run or src.name)
    shutil.copytree(src, dst)
    for name in ("run.json", "launch.json"):
        p = dst / name
        if p.is_file() and experiment != exp:
            p.write_text(p.read_text().replace(f'"experiment": "{exp}"', f'"experiment": "{experiment}"'))
    if host:
        env = json.loads((dst / "env.json").read_text())
        env["host"]["fingerprint"]["host_id"] = host
        (dst / "env.json").write_text(json.dumps(env))
    log = dst / "logging.jsonl"
    text = log.read_text()
    if runtime_factor:
        text = re.sub(r'"train_runtime": ([0-9.]+)',
                      lambda m: f'"train_runtime": {float(m.group(1)) * runtime_factor}', text)
        rj = json.loads((dst / "run.json").read_text())
        rj["wall_s"] = rj["wall_s"] * runtime_factor
        (dst / "run.json").write_text(json.dumps(rj))
    if eval_shift:
        lines = text.splitlines()
        evals = [i for i, line in enumerate(lines) if line.startswith('{"eval_loss"')]
        d = json.loads(lines[evals[-1]])
        d["eval_loss"] += eval_shift
        lines[evals[-1]] = json.dumps(d)
        text = "\n".join(lines) + "\n"
    log.write_text(text)
    return dst


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "results"
    for name in SPREAD:
        shutil.copytree(RESULTS / "h200" / name, root / "h200" / name)
    clone(SEED_FULL, root)
    clone(BEST_FULL, root)
    return root


def _pick(root):
    return recommend.recommend(collect(root))


def test_same_host_pair_is_recommended_with_the_job_time_ratio(tree):
    pick = _pick(tree)
    assert pick["same_host_pair"] and pick["note"] is None
    assert (pick["experiment"], pick["host"]) == ("best", "5f4daf78e2ab")
    recs = {r.experiment: r for r in collect(tree) if r.experiment in ("seed", "best")}
    assert pick["x_seed"] == jobtime.job_speedup(recs["seed"], recs["best"])
    assert pick["x_seed"] == pytest.approx(596.269 / 46.8565)  # the two logs' train_runtime
    assert pick["train_runtime_s"] == jobtime.job_time(recs["best"])["train_runtime_s"]
    assert pick["loss_counts"] is True and pick["band_step"] == 46  # the spread seeds stop at step 46
    text = recommend_view.sentence(pick)
    assert "recipe best" in text and "12.7x sooner" in text and "same host" in text


def test_a_faster_recipe_on_another_same_host_pair_wins(tree):
    # `fast` and a seed run on host B, the seed 1.5x slower there: fast's job-time ratio (1.5 x 596.269 / 47.8535)
    # beats best's on host A
    clone(SEED_FULL, tree, host="hostb0000000", run="20261203-000000-hostb0000000", runtime_factor=1.5)
    clone(BEST_OTHER, tree, experiment="fast", host="hostb0000000", run="20261203-000100-hostb0000000")
    pick = _pick(tree)
    assert (pick["experiment"], pick["host"]) == ("fast", "hostb0000000")
    assert pick["x_seed"] == pytest.approx(1.5 * 596.269 / 47.8535)


def test_a_recipe_outside_the_seed_band_is_not_recommended(tree):
    clone(SEED_FULL, tree, host="hostb0000000", run="20261203-000000-hostb0000000", runtime_factor=1.5)
    clone(BEST_OTHER, tree, experiment="fast", host="hostb0000000", run="20261203-000100-hostb0000000",
          eval_shift=0.5)
    rows = recommend.candidates(collect(tree))
    fast = next(r for r in rows if r["experiment"] == "fast")
    assert fast["loss_counts"] is False
    assert _pick(tree)["experiment"] == "best"


def test_without_a_same_host_pair_it_says_so_and_names_no_ratio(tmp_path):
    root = tmp_path / "results"
    for name in SPREAD:
        shutil.copytree(RESULTS / "h200" / name, root / "h200" / name)
    clone(SEED_FULL, root, host="hostb0000000", run="20261203-000000-hostb0000000")
    clone(BEST_FULL, root)
    pick = _pick(root)
    assert not pick["same_host_pair"] and pick["x_seed"] is None
    assert pick["note"].startswith(recommend.NO_PAIR + ":")
    assert pick["experiment"] == "best" and "unpaired" in pick["note"]
    assert recommend_view.sentence(pick).startswith("No recommended recipe yet: no same-host full-epoch pair yet")
    t = tables(root)
    row = t["recommended"].iloc[0]
    assert not row.same_host_pair and (row.x_seed is None or math.isnan(row.x_seed))


def test_cut_runs_are_no_job_time(tree):
    cut = collect(RESULTS / "h200" / "spread-s42")[0]
    jt = jobtime.job_time(cut)
    assert jt["train_runtime_s"] and not jt["full_epoch"]  # 46 of 94 steps: its train_runtime is not the job's
    assert jobtime.job_speedup(cut, cut) is None


def test_break_even_steps():
    assert jobtime.break_even_steps(0.2, 0.3, 100.0) == pytest.approx(1000)
    assert jobtime.break_even_steps(0.3, 0.3, 100.0) == math.inf  # compiling never pays
    assert jobtime.break_even_steps(None, 0.3, 100.0) is None
    compiled = collect(RESULTS / "h200" / "fast-compile-nocudnn")[0]
    eager = collect(RESULTS / "h200" / "fast-nocudnn")[0]
    be = jobtime.break_even(compiled, eager)
    assert be["compile_s"] > 60  # the compiled run's first step holds the compile (~104 s)
    assert be["break_even_steps"] == pytest.approx(be["compile_s"] / (be["eager_step_s"] - be["compiled_step_s"]))
    assert be["break_even_steps"] > 94  # for this 94-step epoch, eager finishes first


def test_tables_cli_names_one_recommended_recipe_from_a_same_host_full_epoch_pair():
    p = subprocess.run([sys.executable, "-m", "analysis.cli", "tables", str(RESULTS), "--format", "json"],
                       capture_output=True, text=True, cwd=REPO)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    [pick] = out["recommended"]
    assert pick["same_host_pair"] is True
    recs = {(r.experiment, r.run): r for r in collect(RESULTS)}
    rec, seed = recs[(pick["experiment"], pick["run"])], recs[("seed", pick["seed_run"])]
    assert rec.host_id == seed.host_id == pick["host"]
    assert jobtime.job_time(rec)["full_epoch"] and jobtime.job_time(seed)["full_epoch"]
    assert pick["x_seed"] == pytest.approx(jobtime.job_speedup(seed, rec), rel=1e-12)
    assert sum(r["recommended"] for r in out["recipes"]) == 1
    h200 = next(g for g in out["recommended_gpus"] if g["hw"] == "h200")
    assert h200["epoch_s"] == pick["train_runtime_s"] and h200["source"].startswith("measured (full epoch")
    assert all(g["epoch_s"] is None and g["cost"] is None for g in out["recommended_gpus"] if not g["fits"])


def test_the_claims_recipes_table_shows_the_break_even_beside_compiled_recipes():
    from analysis.judge import frames

    rf = frames.recipes_frame(RESULTS).set_index("recipe")
    row = rf.loc["fast-compile-nocudnn"]
    # the runs the table names (the newest of each): the break-even is computed by hand from those two records
    compiled = next(r for r in collect(RESULTS / "h200" / "fast-compile-nocudnn") if str(row.run).endswith(r.run))
    eager = max(collect(RESULTS / "h200" / "fast-nocudnn"), key=lambda r: r.run)
    assert row.break_even_vs == "fast-nocudnn"
    assert row.break_even_steps == round(jobtime.break_even(compiled, eager)["break_even_steps"])
    assert row.train_runtime_s == jobtime.job_time(compiled)["train_runtime_s"]
    assert rf.loc["fast-nocudnn"].break_even_vs is None or rf.loc["fast-nocudnn"].break_even_vs != \
        rf.loc["fast-nocudnn"].break_even_vs  # eager: none
