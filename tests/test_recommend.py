"""The recommended recipe for the job (analysis.judge.answer.recommend), exercised on synthetic results trees built from
committed full-epoch runs: the rule is data-driven (full-epoch train_runtime against a full-epoch seed run of the same
host, eval loss in the seed band), so a copied run with another host id or experiment must move the answer."""
import json
import math
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from committed import committed_results

from analysis.judge.answer import recommend, view
from analysis.measure import jobtime, repeats, steps
from analysis.parse.results import collect
from analysis.present import recommend_view
from analysis.present.tables import tables
from experiments.recipes import recipes

REPO = Path(__file__).resolve().parents[1]
RESULTS = committed_results()
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
    assert pick.experiment == "best" and pick.note is None and pick.hw == "h200"
    d = pick.deciding
    assert d is not None and d.host == "5f4daf78e2ab"
    recs = {r.experiment: r for r in collect(tree) if r.experiment in ("seed", "best")}
    assert d.epoch_x_seed == jobtime.job_speedup(recs["seed"], recs["best"])
    assert d.epoch_x_seed == pytest.approx(596.269 / 46.8565)  # the two logs' train_runtime
    assert d.epoch_s == jobtime.job_time(recs["best"]).train_runtime_s and d.seed is not None and d.seed.full
    assert d.in_band is True
    assert pick.orders == (recommend.Order("best", "seed", ("5f4daf78e2ab",), "full epochs, one run per host"),)
    assert "swift sft" in pick.command and f"--external_plugins {recipes.PLUGIN_SHELL}" in pick.command
    text = recommend_view.sentence(pick)
    assert "recipe best" in text and "12.7x sooner" in text and "same host" in text


def test_recipes_are_ordered_only_on_a_host_holding_both(tree):
    """fast on host B is quicker than best on host A, but no host holds both: the order is undetermined and named
    with the runs that would settle it; a full epoch of each on one host settles it."""
    clone(SEED_FULL, tree, host="hostb0000000", run="20261203-000000-hostb0000000", runtime_factor=1.5)
    clone(BEST_OTHER, tree, experiment="fast", host="hostb0000000", run="20261203-000100-hostb0000000",
          runtime_factor=0.9)
    pick = _pick(tree)
    (u,) = pick.undetermined
    assert {u.a, u.b} == {"best", "fast"} and u.why == "no host holds full epochs of both"
    assert "full epochs of best and fast on one host" in u.settle
    assert "order undetermined against" in (pick.note or "")
    # x seed on host B: its seed 1.5 x slower, fast 0.9 x best's e4e3 epoch
    fast_b = next(r for r in pick.rows if r.experiment == "fast")
    assert fast_b.epoch_x_seed == pytest.approx(1.5 * 596.269 / (0.9 * 47.8535))
    # best on host B too, slower than fast there: fast is sooner, settled
    clone(BEST_OTHER, tree, host="hostb0000000", run="20261203-000200-hostb0000000")
    pick = _pick(tree)
    assert pick.experiment == "fast" and not pick.undetermined
    assert recommend.Order("fast", "best", ("hostb0000000",), "full epochs, one run per host") in pick.orders


def test_hosts_that_disagree_leave_the_order_undetermined(tree):
    clone(BEST_OTHER, tree, experiment="fast", host="5f4daf78e2ab", run="20261201-200000-5f4daf78e2ab",
          runtime_factor=1.2)  # fast slower than best on host A (57.4 vs 46.9 s)
    clone(BEST_OTHER, tree, host="hostb0000000", run="20261203-000200-hostb0000000")
    clone(BEST_OTHER, tree, experiment="fast", host="hostb0000000", run="20261203-000300-hostb0000000",
          runtime_factor=0.8)  # faster than best on host B
    (u,) = [u for u in _pick(tree).undetermined if {u.a, u.b} == {"best", "fast"}]
    assert u.why.startswith("hosts disagree")


def test_the_first_full_epoch_on_a_host_decides_and_later_ones_are_its_warm_figure(tree):
    """A recipe's second run on a host (its caches warm) is shown beside, never ranked in place of the first where
    the runs are not paired in rounds; the host's figure is the median of its runs, with their count and range."""
    clone(BEST_FULL, tree, run="20261201-230000-5f4daf78e2ab", runtime_factor=0.5)
    pick = _pick(tree)
    (best,) = pick.chosen
    assert best.run == BEST_FULL.name and best.epochs == (pytest.approx(46.8565), pytest.approx(46.8565 * 0.5))
    assert best.epoch_s == pytest.approx(46.8565 * 0.75)  # the median of two runs: their mean
    assert best.epoch_spread == repeats.Spread(2, pytest.approx(46.8565 * 0.75), pytest.approx(46.8565 * 0.5),
                                               pytest.approx(46.8565))
    assert best.warm_s == (pytest.approx(46.8565 * 0.5),) and best.warm_epoch_s == pytest.approx(46.8565 * 0.5)
    assert best.first_epoch_s == pytest.approx(46.8565)  # the cold run: what ranks, a column of its own
    (row,) = [r for r in view.recipe_rows(pick) if r.experiment == best.experiment and r.host == best.host]
    assert row.first_epoch_s == pytest.approx(46.8565) and row.epoch_s == pytest.approx(46.8565 * 0.75)


def test_a_cut_seed_run_is_a_lower_bound_of_the_seed_epoch(tmp_path):
    """No full seed epoch on the host: the seed's cut run gives steady step x epoch steps, a lower bound (labelled);
    a recipe finishing below it is sooner than the seed recipe there."""
    root = tmp_path / "results"
    for name in SPREAD:
        shutil.copytree(RESULTS / "h200" / name, root / "h200" / name)
    clone(RESULTS / "h200/seed/20261203-090405-b2a21682bc96", root)  # 20 steps
    clone(RESULTS / "h200/fast/20261203-090811-b2a21682bc96", root)
    clone(SEED_FULL, root)  # host A: the eval-loss reference
    pick = _pick(root)
    (fast,) = pick.chosen
    cut = collect(root / "h200" / "seed")
    (seed_cut,) = [r for r in cut if r.host_id == "b2a21682bc96"]
    assert fast.seed is not None and not fast.seed.full and fast.seed.steps_run == 20
    assert fast.seed.seconds == pytest.approx(steps.step_time(seed_cut).median * 94)
    assert "cut run (20 steps)" in fast.seed.basis
    assert fast.epoch_x_seed == pytest.approx(fast.seed.seconds / fast.epoch_s)
    basis = "full epochs, one run per host and a cut seed run's lower bound"
    assert recommend.Order("fast", "seed", ("b2a21682bc96",), basis) in pick.orders
    assert "lower bound from a 20-step cut run" in recommend_view.sentence(pick)


def test_a_recipe_outside_the_seed_band_is_not_recommended(tree):
    clone(SEED_FULL, tree, host="hostb0000000", run="20261203-000000-hostb0000000", runtime_factor=1.5)
    clone(BEST_OTHER, tree, experiment="fast", host="hostb0000000", run="20261203-000100-hostb0000000",
          eval_shift=0.5)
    pick = _pick(tree)
    fast = next(r for r in pick.rows if r.experiment == "fast")
    assert fast.in_band is False
    assert pick.experiment == "best" and "not counted" in (pick.note or "") and "fast" in (pick.note or "")


def test_without_a_recipe_in_band_it_says_so(tmp_path):
    root = tmp_path / "results"
    clone(SEED_FULL, root)
    pick = _pick(root)
    assert pick.experiment is None and pick.command is None
    assert recommend_view.sentence(pick).startswith("No recommended recipe yet:")
    t = tables(root)
    row = t.recommended.iloc[0]
    assert row.experiment is None and row.command is None


def test_the_answer_stays_on_the_class_where_recipes_count():
    """Five H100 host rows whose eval loss cannot be judged (no H100 seed full epoch: the committed tree of
    2026-12-07) against two H200 rows, one in the band: the answer is the H200's. Without any counting row, the class
    with the most rows; the seed recipe's own row never makes a class count."""
    from types import SimpleNamespace as NS

    h100 = [NS(hw="h100", in_band=None, experiment="gpu-bound")] * 5
    h200 = [NS(hw="h200", in_band=True, experiment="fast"), NS(hw="h200", in_band=False, experiment="best")]
    assert recommend.default_class(h100 + h200) == "h200"
    assert recommend.default_class(h100 + h200[1:]) == "h100"
    assert recommend.default_class(h100 + [NS(hw="h200", in_band=True, experiment="seed")]) == "h100"
    assert recommend.default_class([]) is None


def test_cut_runs_are_no_job_time(tree):
    cut = collect(RESULTS / "h200" / "spread-s42")[0]
    jt = jobtime.job_time(cut)
    assert jt.train_runtime_s and not jt.full_epoch  # 46 of 94 steps: its train_runtime is not the job's
    assert jobtime.job_speedup(cut, cut) is None


def test_break_even_steps():
    assert jobtime.break_even_steps(0.2, 0.3, 100.0) == pytest.approx(1000)
    assert jobtime.break_even_steps(0.3, 0.3, 100.0) == math.inf  # compiling never pays
    assert jobtime.break_even_steps(None, 0.3, 100.0) is None
    compiled = collect(RESULTS / "h200" / "fast-compile-nocudnn")[0]
    eager = collect(RESULTS / "h200" / "fast-nocudnn")[0]
    be = jobtime.break_even(compiled, eager)
    assert be.compile_s > 60  # the compiled run's first step holds the compile (~104 s)
    assert be.break_even_steps == pytest.approx(be.compile_s / (be.eager_step_s - be.compiled_step_s))
    assert be.break_even_steps > 94  # for this 94-step epoch, eager finishes first


def _train_runtime(rec) -> float:
    """The epoch as ms-swift logged it: logging.jsonl's train_runtime line."""
    lines = (json.loads(line) for line in (Path(rec.path) / "logging.jsonl").read_text().splitlines())
    return next(float(d["train_runtime"]) for d in lines if "train_runtime" in d)


def test_tables_cli_names_one_recommended_recipe_from_same_host_full_epochs():
    """The committed tree: one recommended recipe, sooner than every other recipe on a host holding both, its x seed
    jobtime.epoch_ratio's against the host's seed epoch, and each class's row the per-class answer's."""
    p = subprocess.run([sys.executable, "-m", "analysis.cli", "tables", str(RESULTS), "--format", "json"],
                       capture_output=True, text=True, cwd=REPO)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    [pick] = out["recommended"]
    recs = {(r.experiment, r.run): r for r in collect(RESULTS)}
    rec = recs[(pick["experiment"], pick["run"])]
    assert rec.host_id == pick["host"] and jobtime.job_time(rec).full_epoch
    # x seed: the median over the host's rounds holding both (each: the seed's epoch / the pick's, in that round),
    # else the host's seed epoch / the pick's epoch
    by_round: dict[tuple, dict] = {}
    for r in recs.values():
        pl = repeats.place(r)
        if pl and r.ok and r.host_id == pick["host"] and r.experiment in (pick["experiment"], "seed"):
            by_round.setdefault((pl.set, pl.round), {})[r.experiment] = r
    ratios = [steps.epoch_time(both["seed"]).seconds / _train_runtime(both[pick["experiment"]])
              for both in by_round.values() if len(both) == 2]
    row = next(r for r in out["recipes"] if r["run"] == pick["run"] and r["host"] == pick["host"])
    assert (row["x_seed_rounds"] or None) == (len(ratios) or None)
    assert pick["epoch_x_seed"] == pytest.approx(statistics.median(ratios) if ratios else
                                                 jobtime.epoch_ratio(pick["seed_epoch_s"], pick["host_epoch_s"]))
    assert pick["command"].startswith("swift sft") and "experiments.launch" not in pick["command"]
    assert {r["experiment"] for r in out["recipes"] if r["recommended"]} == {pick["experiment"]}
    # every other counted recipe is slower on a host holding both, or named undetermined
    others = {r["experiment"] for r in out["recipes"] if r["in_band"] and r["experiment"] != pick["experiment"]}
    beaten = {o["slower"] for o in out["orders"] if o["faster"] == pick["experiment"] and not o["undetermined"]}
    open_ = {o["faster"] if o["slower"] == pick["experiment"] else o["slower"] for o in out["orders"]
             if o["undetermined"] and pick["experiment"] in (o["faster"], o["slower"])}
    assert others <= beaten | open_
    assert not any(o["faster"] != pick["experiment"] and o["slower"] == pick["experiment"] and not o["undetermined"]
                   for o in out["orders"])
    h200 = next(g for g in out["classes"] if g["hw"] == "h200")
    assert h200["recipe"] == pick["experiment"] and h200["epoch_s"] == pick["epoch_s"] and h200["measured"]
    assert all(g["epoch_s"] is None and g["cost"] is None for g in out["classes"] if not g["fits"])


def test_the_claims_recipes_table_shows_the_break_even_beside_compiled_recipes():
    from analysis.judge.audit import frames

    rf = frames.recipes_frame(RESULTS).set_index("recipe")
    row = rf.loc["fast-compile-nocudnn"]
    # the runs the table names (the newest of each): the break-even is computed by hand from those two records
    compiled = next(r for r in collect(RESULTS / "h200" / "fast-compile-nocudnn") if str(row.run).endswith(r.run))
    eager = max(collect(RESULTS / "h200" / "fast-nocudnn"), key=lambda r: r.run)
    assert row.break_even_vs == "fast-nocudnn"
    assert row.break_even_steps == round(jobtime.break_even(compiled, eager).break_even_steps)
    assert row.train_runtime_s == jobtime.job_time(compiled).train_runtime_s
    assert rf.loc["fast-nocudnn"].break_even_vs is None or rf.loc["fast-nocudnn"].break_even_vs != \
        rf.loc["fast-nocudnn"].break_even_vs  # eager: none


def _class(hw, epoch, low, high, cost_per_h, measured=False):
    from analysis.judge.answer.classes import ClassAnswer, Option

    opt = None if epoch is None else Option("fast", True, 35.5, "peak", epoch, low, high, measured, "b", "r")
    return ClassAnswer(hw, hw, 40.0, opt, (), (), cost_per_h, "USD")


def test_compare_classes_decides_soonest_cheapest_and_what_is_within_reach():
    """By hand: H200 measured 44.6 s; H100 modelled 47.4 (44.4-50.8) reaches below 44.6; A100 77.3 (71.9-83.5) does
    not; the RTX 4090 costs least (154.1 s x 0.60 / 3600 = 0.0257 < the H200's 44.6 x 6.35 / 3600 = 0.0787); an A10
    without a recipe is untimed."""
    from analysis.judge.answer.classes import compare_classes

    h200 = _class("h200", 44.6, 44.6, 44.6, 6.35, measured=True)
    h100 = _class("h100", 47.4, 44.4, 50.8, 4.76)
    a100 = _class("a100", 77.3, 71.9, 83.5, 1.48)
    rtx = _class("rtx4090", 154.1, 142.0, 168.0, 0.60)
    a10 = _class("a10", None, None, None, 0.86)
    c = compare_classes([a10, rtx, a100, h100, h200])
    assert c.soonest is h200 and c.within_reach == (h100,) and c.untimed == (a10,)
    assert c.cheapest is rtx and rtx.cost == pytest.approx(154.1 / 3600 * 0.60)
    assert compare_classes([a10]).soonest is None and compare_classes([]).cheapest is None


# ------------------------------------------------------------------------------------ interleaved rounds (issue 47)

FAST_NEW = RESULTS / "h200/fast/20261204-184624-9a37127fd7e0"   # harness 2, a full epoch, 35.38 s
HOST = "9a37127fd7e0"


def _in_round(dst: Path, set_name: str, rnd: int, slot: int) -> Path:
    rj = json.loads((dst / "run.json").read_text())
    rj["round"] = {"set": set_name, "round": rnd, "of": 3, "slot": slot, "item": dst.parts[-2]}
    (dst / "run.json").write_text(json.dumps(rj))
    return dst


def _rounds_tree(tmp_path, factors: list[tuple[float, float]]) -> Path:
    """Rounds of fast (A) and best (B, a copy of fast's run with its train_runtime scaled) on one host: FACTORS are
    (A's, B's) scale of 35.38 s per round."""
    root = tmp_path / "results"
    for name in SPREAD:
        shutil.copytree(RESULTS / "h200" / name, root / "h200" / name)
    clone(SEED_FULL, root)
    for i, (fa, fb) in enumerate(factors, start=1):
        _in_round(clone(FAST_NEW, root, run=f"20261204-2{i}0000-{HOST}", runtime_factor=fa), "S", i, 1)
        _in_round(clone(FAST_NEW, root, experiment="best", run=f"20261204-2{i}0100-{HOST}", runtime_factor=fb),
                  "S", i, 2)
    return root


def test_three_rounds_won_every_time_rank_the_winner_first(tmp_path):
    """A sooner in each of three paired rounds: A ranks before B, and the order says it rests on the rounds."""
    root = _rounds_tree(tmp_path, [(1.0, 1.04), (1.1, 1.12), (0.95, 1.0)])
    pick = _pick(root)
    assert pick.experiment == "fast"
    (o,) = [o for o in pick.orders if {o.faster, o.slower} == {"fast", "best"}]
    assert (o.faster, o.slower) == ("fast", "best") and o.basis.startswith("sooner in every one of 3 paired rounds")
    fast = next(r for r in pick.rows if r.experiment == "fast")
    # the host's figure: the median of its three runs, with their range and count
    assert fast.epochs == tuple(pytest.approx(35.3754 * f) for f in (1.0, 1.1, 0.95))
    assert fast.epoch_s == pytest.approx(35.3754) and fast.epoch_spread.n == 3
    assert fast.epoch_spread.low == pytest.approx(35.3754 * 0.95) and fast.epoch_spread.high == pytest.approx(
        35.3754 * 1.1)
    text = recommend_view.sentence(pick)
    assert "33.6-38.9 s on the H200 (median 35.4 s, 3 runs, one host" in text


def test_rounds_that_overlap_are_not_separable(tmp_path):
    """A sooner in two rounds, B in the third: 'not separable on 3 rounds', with the runs that would settle it; the
    first-run rule of unpaired runs does not step in where rounds exist."""
    root = _rounds_tree(tmp_path, [(1.0, 1.04), (1.1, 1.05), (0.95, 1.0)])
    pick = _pick(root)
    (u,) = [u for u in pick.undetermined if {u.a, u.b} == {"fast", "best"}]
    assert u.why == "not separable on 3 rounds (best sooner in 1, fast in 2)"
    assert "--repeats" in u.settle and "best" in u.settle and "fast" in u.settle
    assert not [o for o in pick.orders if {o.faster, o.slower} == {"fast", "best"}]


def test_one_round_decides_only_beyond_what_a_host_drifts(tmp_path):
    """One paired round settles nothing at 4 % (a host drifts by up to 1.46x), but does at 2x."""
    near = _pick(_rounds_tree(tmp_path / "a", [(1.0, 1.04)]))
    assert any({u.a, u.b} == {"fast", "best"} and "not separable on 1 round" in u.why for u in near.undetermined)
    far = _pick(_rounds_tree(tmp_path / "b", [(1.0, 2.0)]))
    (o,) = [o for o in far.orders if {o.faster, o.slower} == {"fast", "best"}]
    assert o.faster == "fast" and "more than a host drifts" in o.basis


def test_timed_runs_replace_the_harness_v1_runs_of_their_class(tree):
    """Once a class has full epochs of harness 2, the answer counts only those; the older runs stay in the
    tables of every run."""
    clone(FAST_NEW, tree)
    rows = recommend.host_epochs(collect(tree))
    assert {(r.experiment, r.harness) for r in rows} == {("fast", repeats.LAUNCHER)}
    old = recommend.host_epochs(collect(tree), timed_only=False)
    assert {r.experiment for r in old} >= {"best", "seed", "fast"}


def test_the_committed_harness_pairs_are_launcher_over_plain_by_hand():
    """The committed ABBA rounds (results/findings/harness_h200_2026-12-04.md): three pairs on one host, the ratios
    as the logs' train_runtime say, the first launcher run flagged as the host's first run of fast."""
    pairs = repeats.harness_pairs(collect(RESULTS / "h200" / "fast"))
    got = [(p.launcher_s, p.plain_s, p.cold) for p in pairs if p.host == HOST]
    assert got == [(47.3899, 34.5658, "launcher"), (35.3754, 37.3281, None), (34.3914, 38.6081, None)]
    o = repeats.overhead([p for p in pairs if p.host == HOST])
    assert o.n == 3 and o.median == pytest.approx(35.3754 / 37.3281 - 1)
    assert o.low == pytest.approx(34.3914 / 38.6081 - 1) and o.high == pytest.approx(47.3899 / 34.5658 - 1)
