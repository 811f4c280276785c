"""The report sections' typed views (issue 46) hold the measures' own numbers: each row built from the committed runs is
checked against the function that makes the number (one producer), and the frames the report writes keep the
columns they had."""
from __future__ import annotations

import dataclasses
import math

import pandas as pd
import pytest
from committed import committed_results

from analysis.core.seeds import DEFAULT_SEEDS_DIR, published_figures
from analysis.estimate import estimate_views as EV
from analysis.estimate import quick_check as Q
from analysis.judge.answer import published as P
from analysis.judge.answer import run_tables as RT
from analysis.judge.audit import claim_views as CV
from analysis.judge.audit import config
from analysis.judge.audit.seed_checks import load_seeds
from analysis.measure import compare, run_views, steps
from analysis.measure import utilisation as U
from analysis.measure import utilisation_view as UV
from analysis.parse.results import collect, is_matrix, latest_per_group
from analysis.present import view_render


@pytest.fixture(scope="module")
def records():
    return collect(committed_results())


@pytest.fixture(scope="module")
def matrix(records):
    return [r for r in records if is_matrix(r)]


def _same(a, b) -> bool:
    return (a is None and (b is None or (isinstance(b, float) and math.isnan(b)))) or a == b \
        or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def test_speed_points_hold_the_speed_tables_baseline_and_the_measures(matrix):
    picked = latest_per_group(matrix)
    pub = published_figures(DEFAULT_SEEDS_DIR)
    rows = RT.speed_rows(picked, pub, "h100")
    ok = [r for r in matrix if r.ok and steps.step_time(r).median]
    points = RT.speed_points(ok, rows, lambda r: r in picked, lambda hw: 0, picked)
    base = RT.speed_baselines(rows, picked)
    measured = [p for p in points if p.source == "measured"]
    assert len(measured) == len(ok) and measured
    by_run = {(r.hw, r.experiment, r.run): r for r in ok}
    with_speedup = 0
    for p in measured:
        rec = by_run[(p.hw, p.experiment, p.run)]
        assert p.ms == steps.sample_time_ms(rec).median
        b = base.get((p.experiment, "measured"))
        if b and b[2] is not None:
            assert p.speedup == compare.speedup(b[2], rec).factor and p.baseline == b[0]
            with_speedup += 1
    assert with_speedup
    published = {p.hw: p for p in points if p.source == "published"}
    assert set(published) == set(P.hardware_with(pub, "ms_per_step"))
    for hw, p in published.items():
        assert p.ms == P.value(pub, hw, "ms_per_step")


def test_the_utilisation_views_are_the_utilisation_summary(matrix):
    views = UV.utilisation_views(matrix)
    frame = view_render.to_frame(views, UV.UtilisationView)
    pd.testing.assert_frame_equal(frame, U.summary(matrix))
    timed = [(r, v) for r, v in zip(matrix, views) if v.train_start_s is not None]
    rec, view = next((r, v) for r, v in timed if UV.timeline_points(r, v))
    points = UV.timeline_points(rec, view)
    tl = U.timeline(rec, view.train_start_s, view.train_end_s)
    assert [p.t_rel_s for p in points] == list(tl["t_rel_s"])
    assert sum(p.in_training for p in points) == int(tl["in_training"].sum()) > 0


def test_quick_rows_are_the_comparison_table(records):
    comparisons = Q.comparison_table(records=records)
    if not comparisons:
        pytest.skip("no quick runs committed")
    rows = EV.quick_rows(comparisons)
    for row, c in zip(rows, comparisons):
        j = Q.as_json(c)
        assert (row.quick_run, row.predicted_train_s, row.low, row.high) == (j["quick_run"], j["predicted_train_s"],
                                                                             j["low"], j["high"])
        assert _same(row.error_pct, j.get("error_pct"))
        assert _same(row.same_steps_ratio, (j.get("same_steps") or {}).get("ratio"))
    points, runs = EV.pair_step_points(comparisons, records)
    assert len(runs) % 2 == 0 and all(p.second_s > 0 for p in points)


def test_claim_views_hold_the_claims_table_and_the_seeds():
    seeds = load_seeds(DEFAULT_SEEDS_DIR)
    table = pd.DataFrame([{"id": c.id, "origin": c.origin, "claim": c.claim, "verdict": "holds", "key": None,
                           "reason": "r", "detail": "d " * 200, "runs": ["a", "b"]} for c in config.claims()])
    articles = CV.article_rows(table)
    assert len(articles) == int((table["origin"] == "article").sum()) > 0
    assert all(r.reason == "" and len(r.key) <= CV.CLIP // 2 for r in articles)  # a held claim needs no why
    assert CV.verdict_rows(table)[0].runs == "a b"
    status = CV.audited(table)
    rows = CV.seed_claim_rows(seeds, status, {})
    assert len(rows) == sum(len(s.get("claims", [])) for s in seeds.values())
    covered = [r for r in rows if r.status != "not in the claims audit"]
    assert covered and all(r.status.startswith("holds (audit row ") for r in covered)


def test_the_class_tables_are_the_run_rows_and_the_seeds(matrix):
    pub = published_figures(DEFAULT_SEEDS_DIR)
    hw = P.hardware_with(pub, "ms_per_step")[0]
    rows = P.published_rows(pub, hw)
    part = pub[pub["hw"] == hw]
    assert [r.id for r in rows] == list(part["id"])
    for r, v in zip(rows, part["value"]):
        assert r.value_text == (f"{v:g}" if not math.isnan(v) else r.value_text) and (
            not math.isnan(v) or r.value_text.startswith("illegible: '"))
    runs = [r for r in matrix if r.hw == matrix[0].hw]
    frame = view_render.to_frame(run_views.run_rows(runs, lambda r: True), run_views.RunRow, run_views.CLASS_RUNS)
    assert list(frame.columns) == list(run_views.CLASS_RUNS)
    for rec, ms in zip(runs, frame["ms_per_step"]):
        median = steps.step_time(rec).median
        assert _same(median * 1000 if median else None, ms)
    env = view_render.grid_frame({r.run: run_views.environment(r) for r in runs}, "item", together=True)
    gpus = env.set_index("item").loc["GPU"]
    assert set(gpus.dropna()) <= {r.env.get("gpu_name") for r in runs}


def test_every_new_view_field_carries_a_label():
    for cls in (RT.SpeedPoint, RT.ScalingBar, UV.UtilisationView, UV.TimelinePoint, UV.GpmStepPoint, EV.AnchorRow,
                EV.QuickRow, EV.PairStepPoint, CV.ArticleVerdictRow, CV.FindingVerdictRow, CV.VerdictRow,
                CV.SeedClaimRow, P.PublishedRow):
        assert all("label" in f.metadata for f in dataclasses.fields(cls)), cls.__name__
