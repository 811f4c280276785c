"""One producer per number: tokens/s, speed-up and MFU of committed runs, computed through the measure stage's public
API, are the very values the tables' JSON, the claims output and the report's CSVs print.

Committed H200 runs: the seed recipe and bs16 made one after the other on host a55bc8d6aca5 (matrix runs, through
the launcher), the seed recipe on host 8c196bbf945e (the tables' slowest seed row with at least 10 steady steps, so
their baseline), the seed recipe on host 176aa18e9a00 (call 33: slower per sample, but one 5-step steady interval,
so not the baseline), and the same-host pair behind the 12x verdict (pair-seed, pair-best).
"""
import ast
import json
import statistics
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from committed import committed_results

from analysis.judge.audit.verdicts import claims_table
from analysis.measure import compare, flops, throughput
from analysis.parse.results import collect
from analysis.present.report import answer as report_answer
from analysis.present.report import claims as report_claims
from analysis.present.report import speed as report_speed
from analysis.present.report.context import Context

REPO = Path(__file__).resolve().parents[1]
RESULTS = committed_results()
RUNS = {"seed": "h200/seed/20261201-002632", "bs16": "h200/bs16/20261201-003102",
        "seed_b": "h200/seed/20261201-003422", "seed_short": "h200/seed/20261202-000920-176aa18e9a00",
        "pair_seed": "h200/pair-seed/20261201-001958",
        "pair_best": "h200/pair-best/20261201-002438"}


@pytest.fixture(scope="module")
def recs():
    by_path = {str(Path(r.path).relative_to(RESULTS)): r for r in collect(RESULTS)}
    return {k: by_path[v] for k, v in RUNS.items()}


@pytest.fixture(scope="module")
def expected(recs):
    """The numbers, from the public API alone."""
    out = {}
    for k in ("seed", "bs16", "seed_b"):
        tp = throughput.throughput(recs[k]).tokens_per_s
        out[k] = {"tokens_per_s": tp, "mfu": flops.mfu(recs[k]).mfu}
    out["seed"]["speedup"] = compare.speedup(recs["seed_b"], recs["seed"]).factor  # against the baseline row
    pair = compare.speedup(recs["pair_seed"], recs["pair_best"])
    out["pair"] = {"factor": pair.factor, "low": pair.low, "high": pair.high, "hosts": pair.hosts,
                   "best_tokens_per_s": throughput.throughput(recs["pair_best"]).tokens_per_s,
                   "seed_tokens_per_s": throughput.throughput(recs["pair_seed"]).tokens_per_s}
    return out


def test_the_runs_are_what_this_test_says(recs, expected):
    assert recs["seed"].host_id == recs["bs16"].host_id == recs["pair_best"].host_id == "a55bc8d6aca5"
    assert recs["seed_b"].host_id == "8c196bbf945e" and recs["seed_short"].host_id == "176aa18e9a00"
    assert all(r.tokens_by_step for r in recs.values())  # real token counts: tokens/s is counted, not estimated
    assert expected["pair"]["hosts"] == "same host"
    # the hand check of one tokens/s: counted tokens of the steady steps over their seconds (steps 16-30: the
    # warm-up ends at 9.4, steps 11-12 were profiled, so the interval 10-15 is out; logging every 5 steps)
    rec = recs["seed"]
    elapsed = dict(rec.elapsed)
    tokens = sum(rec.tokens_by_step[s] for s in range(16, 31))
    assert expected["seed"]["tokens_per_s"] == pytest.approx(tokens / (elapsed[30] - elapsed[15]), rel=1e-12)


def test_tables_json_prints_the_measure_stage(expected):
    p = subprocess.run([sys.executable, "-m", "analysis.cli", "tables", str(RESULTS), "--format", "json"],
                       capture_output=True, text=True, cwd=REPO)
    assert p.returncode == 0, p.stderr
    rows = [r for r in json.loads(p.stdout)["speedup"] if r["source"] == "measured"]
    by = {(r["experiment"], r["host"]): r for r in rows}
    same = {"rel": 1e-12}  # the JSON keeps 15 digits
    for key, exp, host in (("seed", "seed", "a55bc8d6aca5"), ("bs16", "bs16", "a55bc8d6aca5"),
                           ("seed_b", "seed", "8c196bbf945e")):
        assert by[(exp, host)]["tokens_per_s"] == pytest.approx(expected[key]["tokens_per_s"], **same)
        assert by[(exp, host)]["mfu"] == pytest.approx(expected[key]["mfu"], **same)
    assert by[("seed", "a55bc8d6aca5")]["speedup"] == pytest.approx(expected["seed"]["speedup"], **same)
    assert by[("seed", "a55bc8d6aca5")]["speedup_hosts"] == "cross-host"


def test_claims_output_prints_the_measure_stage(expected):
    row = claims_table(RESULTS).set_index("id").loc["best-12x"]
    n, pair = row.numbers, expected["pair"]
    assert n["ratio"] == round(pair["factor"], 2) and n["ratio_low"] == round(pair["low"], 2)
    assert n["ratio_high"] == round(pair["high"], 2)
    assert n["tokens_per_s"] == round(pair["best_tokens_per_s"], 1)
    assert n["seed_tokens_per_s"] == round(pair["seed_tokens_per_s"], 1)
    p = subprocess.run([sys.executable, "-m", "analysis.cli", "claims", str(RESULTS)], capture_output=True, text=True,
                       cwd=REPO)
    assert p.returncode == 0, p.stderr
    line = next(x for x in p.stdout.splitlines() if " best-12x: " in x)
    key = (f" — {round(pair['factor'], 2)}x the seed recipe (95 % range {round(pair['low'], 2)} .. "
           f"{round(pair['high'], 2)}x)")
    # an inconclusive verdict names its reason after the number (its 95 % range holds the bar)
    assert line.endswith(key + ": the 95 % range spans the 12x bar") if pair["low"] < 12 <= pair["high"] \
        else line.endswith(key), line


def test_report_csvs_print_the_measure_stage(tmp_path, expected):
    ctx = Context.load(RESULTS, out_dir=tmp_path)
    report_speed.speed_section(ctx)
    report_claims.claims_section(ctx)
    speed = pd.read_csv(tmp_path / "speedup.csv")
    speed = speed[speed.source == "measured"].set_index(["experiment", "host"])
    for key, exp, host in (("seed", "seed", "a55bc8d6aca5"), ("bs16", "bs16", "a55bc8d6aca5"),
                           ("seed_b", "seed", "8c196bbf945e")):
        assert speed.loc[(exp, host), "tokens_per_s"] == pytest.approx(expected[key]["tokens_per_s"], rel=1e-12)
        assert speed.loc[(exp, host), "mfu"] == pytest.approx(expected[key]["mfu"], rel=1e-12)
    assert speed.loc[("seed", "a55bc8d6aca5"), "speedup"] == pytest.approx(expected["seed"]["speedup"], rel=1e-12)
    verdicts = pd.read_csv(tmp_path / "claims_verdicts.csv").set_index("id")
    numbers = ast.literal_eval(verdicts.loc["best-12x", "numbers"])
    assert numbers["ratio"] == round(expected["pair"]["factor"], 2)
    assert numbers["tokens_per_s"] == round(expected["pair"]["best_tokens_per_s"], 1)
    # the answer (the report's first screen): the measured rows' tokens/s, and the H100's recipe and epoch as the one
    # recommender's per-class answer (analysis.judge.answer.classes) gives them
    report_answer.answer_section(ctx)
    answer = pd.read_csv(tmp_path / "answer.csv")
    measured = answer[answer.source == "measured"].set_index("host")
    for key, host in (("seed", "a55bc8d6aca5"), ("seed_b", "8c196bbf945e")):
        assert measured.loc[host, "tokens_per_s"] == pytest.approx(expected[key]["tokens_per_s"], rel=1e-12)
    h100 = answer[(answer.hw == "h100") & (answer.source == "predicted")].iloc[0]
    classes = pd.read_csv(tmp_path / "classes.csv").set_index("hw")
    assert h100.class_recipe == classes.loc["h100", "recipe"]
    assert h100.class_recipe_epoch_s == pytest.approx(classes.loc["h100", "epoch_s"], rel=1e-12)
    from analysis.judge.answer.classes import class_answers
    from analysis.judge.answer.recommend import recommend

    rec = recommend(ctx.records)
    (mine,) = [c for c in class_answers(rec, ctx.records) if c.hw == "h100"]
    assert mine.choice is not None and classes.loc["h100", "epoch_s"] == pytest.approx(mine.choice.epoch_s, rel=1e-12)


def test_time_to_finish_the_job_has_one_producer():
    """train_runtime (the time to finish the job) and the start-up beside it: the tables' recipes rows are
    analysis.measure.jobtime.job_time's, and no module outside the parse and measure stages reads the log's
    train_runtime
    itself (quick.py's estimate of a full run from a cut one is its own quantity, checked by quick_check.py against the
    full run's train_runtime)."""
    from analysis.measure import jobtime

    p = subprocess.run([sys.executable, "-m", "analysis.cli", "tables", str(RESULTS), "--format", "json"],
                       capture_output=True, text=True, cwd=REPO)
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)["recipes"]
    assert rows
    records = collect(RESULTS)
    from analysis.judge.answer import recommend

    counted = recommend.full_epoch_runs(records)
    for row in rows:  # a row's figure: the median of the counted full epochs of its recipe on its host
        runs = [r for r in counted if (r.experiment, r.host_id, r.hw) == (row["experiment"], row["host"], row["hw"])]
        jts = [jobtime.job_time(r) for r in runs]
        assert len(runs) == row["runs"] and min(r.run for r in runs) == row["run"]
        assert row["epoch_s"] == pytest.approx(statistics.median(j.train_runtime_s for j in jts))
        assert row["startup_s"] == pytest.approx(statistics.median(j.load_s for j in jts))
        if row["seed_epoch_s"] is not None and row["x_seed_rounds"] is None:  # jobtime.epoch_ratio's
            assert row["epoch_x_seed"] == pytest.approx(jobtime.epoch_ratio(row["seed_epoch_s"], row["epoch_s"]))
    readers = [str(f.relative_to(REPO)) for f in (REPO / "analysis").rglob("*.py")
               if f.parts[-2] not in ("parse", "measure") and f.name not in ("quick.py", "quick_check.py")
               and _reads_runtime(f)]
    assert readers == []


def _reads_runtime(path: Path) -> bool:
    """Does PATH read `.train_runtime_s` of anything but a JobTime (a name bound to job_time(...), or the call)?"""
    tree = ast.parse(path.read_text(encoding="utf-8"))

    def is_job_time(node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "job_time"

    job_names = {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign) and is_job_time(node.value)
                 for t in node.targets if isinstance(t, ast.Name)}
    return any(isinstance(node, ast.Attribute) and node.attr == "train_runtime_s"
               and not is_job_time(node.value)
               and not (isinstance(node.value, ast.Name) and node.value.id in job_names)
               for node in ast.walk(tree))
