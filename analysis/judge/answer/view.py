"""The answer as one typed view (issue 46): a row per GPU class (ClassRow) and a row per matrix recipe on a host
(RecipeRow), built once from what analysis.judge.answer.classes (ClassAnswer, with analysis.estimate.epoch's
EpochEstimate in it) and analysis.judge.answer.recommend (Recommendation, its HostEpochs) return. Every number of the
answer's tables is a field here; analysis.present.view_render renders the rows as Markdown, HTML and JSON and reads
each column's words from the field's metadata, so a quantity has one name, one label and one format everywhere.

Field metadata: analysis.core.viewfield.col() (LABEL, UNIT, FMT, SHOW, BAND, NOTE, MARK; that module says what
each is). SHOW: whether the answer's table shows the field (JSON holds every field).

The three durations, one name each (docs/architecture.md):
- epoch_s: train_runtime of one full epoch (ms-swift's clock: every step, evaluation and save), measured or carried
  to the class by the time model (analysis.estimate.transfer.runtime_on's epoch_s);
- startup_s: the run's wall time outside train_runtime (model load, data, final save), jobtime's load_s;
- job_s: startup_s + epoch_s, what a user waits for and pays (gpu_hours = job_s / 3600);
- a steady-step extrapolation (steady median step x the epoch's steps: transfer.EpochPrediction's
  steady_extrapolated_s, or the seed's cut run's lower bound) is never called epoch_s without saying so: the recipe
  rows' seed_epoch_s carries seed_bound ("lower bound") where it is one.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

from analysis.core.viewfield import col, hidden
from analysis.estimate import transfer
from analysis.judge.answer.classes import ClassAnswer, Option
from analysis.judge.answer.published import short
from analysis.judge.answer.recommend import HostEpochs, Recommendation


@dataclass(frozen=True)
class ClassRow:
    """One GPU class's recipe (analysis.judge.answer.classes.ClassAnswer): whether one is shown to fit, its epoch
    there (measured, or modelled with the model's band), the job's start-up, GPU-hours and cost."""

    hw: str = col("GPU class")
    name: str | None = hidden("GPU name")
    gpu: str | None = hidden("GPU")  # the class's short name (H200, A10): the report's first screen
    capacity_gib: float | None = col("memory", "GiB", "{:.2f}")
    recipe: str | None = col("recipe")
    fits: bool = col("fits", show=False, default=False)
    peak_gib: float | None = hidden("logged peak", "GiB", "{:.2f}")
    fit_basis: str | None = col("fit shown by")
    epoch_s: float | None = col("epoch", "s", "{:.1f}", band=("low_s", "high_s"))
    low_s: float | None = hidden("epoch low", "s", "{:.1f}")
    high_s: float | None = hidden("epoch high", "s", "{:.1f}")
    measured: bool | None = hidden("measured")
    obtained: str | None = hidden("obtained")  # obtained_text: the first screen's short 'how' (the report)
    basis: str | None = hidden("how the epoch was obtained")
    run: str | None = hidden("run")
    startup_s: float | None = col("start-up", "s", "{:.1f}")
    job_s: float | None = hidden("job (start-up + epoch)", "s", "{:.1f}")
    gpu_hours: float | None = col("job", "GPU-h", "{:.4f}")
    price_per_gpu_hour: float | None = col("price", "per GPU-h", "{:.2f}")
    currency: str | None = hidden("currency")
    cost: float | None = col("job cost", "", "{:.4f}")
    how: str | None = col("time")
    close: str | None = hidden("within the band")
    command: str | None = hidden("command")


@dataclass(frozen=True)
class RecipeRow:
    """One matrix recipe's full epochs on one host (analysis.judge.answer.recommend.HostEpochs): the first one (cold
    caches, the one that ranks), the median train_runtime with its range and count, start-up, steady throughput, peak,
    eval loss and the host's seed epoch with the ratio. HOST_LETTER names the host without its id (A: the host with
    the highest ratio)."""

    experiment: str = col("recipe", mark=("recommended", "★"))
    hw: str = hidden("GPU class")
    host: str = hidden("host id")
    host_letter: str = col("host")
    harness: str = col("harness")
    runs: int | None = col("runs", "", "{:d}")
    first_epoch_s: float | None = col("first epoch (ranks)", "s", "{:.1f}")
    epoch_s: float = col("epoch (median)", "s", "{:.1f}", band=("epoch_low_s", "epoch_high_s"), default=0.0)
    epoch_low_s: float | None = hidden("epoch low", "s", "{:.1f}")
    epoch_high_s: float | None = hidden("epoch high", "s", "{:.1f}")
    warm_epoch_s: float | None = hidden("epoch again (warm caches)", "s", "{:.1f}")
    startup_s: float | None = col("start-up", "s", "{:.1f}")
    tokens_per_s: float | None = col("steady", "tokens/s", "{:.0f}")
    steady_ms: float | None = hidden("steady step", "ms", "{:.1f}")
    steady_low_ms: float | None = hidden("steady step low", "ms", "{:.1f}")
    steady_high_ms: float | None = hidden("steady step high", "ms", "{:.1f}")
    peak_gib: float | None = col("peak", "GiB", "{:.2f}")
    cap_gib: float | None = hidden("allocator cap", "GiB", "{:.2f}")
    epoch_x_seed: float | None = col("x seed", "", "{:.1f}", band=("x_seed_low", "x_seed_high"))
    x_seed_low: float | None = hidden("x seed low", "", "{:.1f}")
    x_seed_high: float | None = hidden("x seed high", "", "{:.1f}")
    x_seed_rounds: int | None = col("paired rounds", "", "{:d}")
    seed_epoch_s: float | None = col("seed epoch", "s", "{:.1f}", note="seed_bound")
    seed_bound: str | None = hidden("seed epoch is")
    seed_basis: str | None = hidden("seed epoch basis")
    seed_run: str | None = hidden("seed run")
    eval_step: int | None = hidden("eval step", "", "{:d}")
    eval_loss: float | None = col("eval loss", "", "{:.4f}")
    seed_eval_loss: float | None = hidden("seed eval loss", "", "{:.4f}")
    seed_range: float | None = hidden("seeds' eval loss range", "", "{:.4f}")
    in_band: bool | None = col("in band")
    recommended: bool = hidden("recommended", default=False)
    run: str = hidden("first run", default="")
    path: str = hidden("path", default="")
    steps: int | None = hidden("optimizer steps", "", "{:d}")
    labels: str = hidden("labels", default="")
    swift_version: str | None = hidden("ms-swift")


def how_text(measured: bool | None, basis: str | None, hw: str | None = None) -> str | None:
    """The class row's 'time' cell: a measured basis' first clause, or that the time model carried the profile and
    whether its band was checked on the class's family (transfer.band_checked)."""
    if not isinstance(basis, str):
        return None
    if measured:
        return basis.split(" (")[0]
    if not basis.startswith("modelled"):
        return basis
    return "modelled from the H200 run's profile" + (f"; {transfer.band_checked(hw)}" if hw else "")


def obtained_text(option: Option) -> str:
    """'measured, 1 run' / 'measured, 6 runs on 3 hosts' / 'modelled': what a class's figure rests on
    (EpochEstimate.rests_on's words), as the answer's sentence and the report's first screen say it."""
    if not option.measured:
        return "modelled"
    est = option.estimate
    return f"measured, {est.rests_on}" if est is not None else "measured"


def class_rows(classes: list[ClassAnswer] | tuple[ClassAnswer, ...]) -> tuple[ClassRow, ...]:
    """Each ClassAnswer as a ClassRow: its choice's fields (or why there is none), GPU-hours, price and cost."""
    out = []
    for c in classes:
        ch = c.choice
        out.append(ClassRow(
            hw=c.hw, name=c.name, gpu=short(c.hw), capacity_gib=c.capacity_gib,
            recipe=ch.experiment if ch else None, fits=bool(ch), peak_gib=ch.peak_gib if ch else None,
            fit_basis=ch.fit_basis if ch else "no matrix recipe is shown to fit",
            epoch_s=ch.epoch_s if ch else None, low_s=ch.low_s if ch else None, high_s=ch.high_s if ch else None,
            measured=ch.measured if ch else None, basis=ch.basis if ch else None, run=ch.run if ch else None,
            obtained=(obtained_text(ch) + ("" if ch.measured or transfer.family_checked(c.hw)
                                          else ", no published check of its family")) if ch else None,
            startup_s=ch.startup_s if ch else None, job_s=ch.job_s if ch else None, gpu_hours=c.gpu_hours,
            price_per_gpu_hour=c.price_per_gpu_hour, currency=c.currency, cost=c.cost,
            how=how_text(ch.measured, ch.basis, c.hw) if ch else None, close=", ".join(c.close) or None,
            command=c.command))
    return tuple(out)


def _ms(x: float | None) -> float | None:
    return None if x is None else x * 1000


def host_letters(rows: list[HostEpochs] | tuple[HostEpochs, ...]) -> dict[str, str]:
    """host id -> A, B, ...: the hosts by their highest ratio to the seed (hosts without one last)."""
    best: dict[str, float] = {}
    for r in rows:
        x = r.epoch_x_seed
        best[r.host] = max(best.get(r.host, float("-inf")), x if x is not None else float("-inf"))
    order = sorted(best, key=lambda h: (-best[h], h))
    return {h: chr(ord("A") + i) if i < 26 else f"H{i}" for i, h in enumerate(order)}


def recipe_row(r: HostEpochs, letter: str, recommended: bool) -> RecipeRow:
    """One HostEpochs as a RecipeRow: its fields, its runs' spread and the seed epoch it is held against."""
    es, st, xs, seed = r.epoch_spread, r.steady, r.x_seed_spread, r.seed
    return RecipeRow(
        experiment=r.experiment, hw=r.hw, host=r.host, host_letter=letter, harness=r.harness,
        runs=es.n if es else None, first_epoch_s=r.first_epoch_s, epoch_s=r.epoch_s, epoch_low_s=es.low if es else None,
        epoch_high_s=es.high if es else None, warm_epoch_s=r.warm_epoch_s, startup_s=r.load_s,
        tokens_per_s=r.tokens_per_s, steady_ms=_ms(st.median) if st else None,
        steady_low_ms=_ms(st.low) if st else None, steady_high_ms=_ms(st.high) if st else None, peak_gib=r.peak_gib,
        cap_gib=r.cap_gib, epoch_x_seed=r.epoch_x_seed, x_seed_low=xs.low if xs else None,
        x_seed_high=xs.high if xs else None, x_seed_rounds=xs.n if xs else None,
        seed_epoch_s=seed.seconds if seed else None,
        seed_bound=None if seed is None or seed.full else "cut run, lower bound",
        seed_basis=seed.basis if seed else None, seed_run=seed.run if seed else None, eval_step=r.eval_step,
        eval_loss=r.eval_loss, seed_eval_loss=r.seed_eval_loss, seed_range=r.seed_range, in_band=r.in_band,
        recommended=recommended, run=r.run, path=r.path, steps=r.steps,
        labels=r.labels, swift_version=r.swift_version)


def recipe_rows(rec: Recommendation) -> tuple[RecipeRow, ...]:
    """Each of REC's HostEpochs as a RecipeRow, by host letter, then epoch."""
    letters = host_letters(rec.rows)
    rows = [recipe_row(r, letters[r.host], r.experiment == rec.experiment) for r in rec.rows]
    return tuple(sorted(rows, key=lambda x: (x.host_letter, x.epoch_s)))


@dataclass(frozen=True)
class OrderRow:
    """Which recipe finishes sooner (recommend.Order: on which hosts, on what basis), or an order the runs do not
    settle (recommend.Undetermined: why, and what would settle it)."""

    faster: str = col("sooner")
    slower: str = col("later")
    hosts: str | None = col("hosts")
    basis: str = col("basis")
    undetermined: bool = col("undetermined", default=False)
    settle: str | None = col("settle with")


def order_rows(rec: Recommendation) -> tuple[OrderRow, ...]:
    """REC's orders (hosts by their first 8 characters), then its undetermined ones."""
    return (tuple(OrderRow(faster=o.faster, slower=o.slower, hosts=", ".join(h[:8] for h in o.hosts), basis=o.basis)
                  for o in rec.orders)
            + tuple(OrderRow(faster=u.a, slower=u.b, basis=u.why, undetermined=True, settle=u.settle)
                    for u in rec.undetermined))


@dataclass(frozen=True)
class RecommendedRow:
    """The recommendation as one row: its epoch on its class as the one estimator gives it (every host's full epochs;
    the class table's and plan's figure), the deciding host's own epoch (host_epoch_s) and x seed, the command and
    the sentence."""

    experiment: str | None = col("recipe")
    hw: str | None = col("GPU class")
    host: str | None = col("deciding host id")
    run: str | None = col("deciding run")
    epoch_s: float | None = col("epoch", "s", "{:.1f}", band=("epoch_low_s", "epoch_high_s"))
    epoch_low_s: float | None = hidden("epoch low", "s", "{:.1f}")
    epoch_high_s: float | None = hidden("epoch high", "s", "{:.1f}")
    host_epoch_s: float | None = col("deciding host's epoch", "s", "{:.1f}")
    startup_s: float | None = col("start-up", "s", "{:.1f}")
    hosts: int = col("hosts", "", "{:d}", default=0)
    warm_epoch_s: float | None = hidden("epoch again (warm caches)", "s", "{:.1f}")
    epoch_x_seed: float | None = col("x seed", "", "{:.1f}", band=("x_seed_low", "x_seed_high"))
    x_seed_low: float | None = hidden("x seed low", "", "{:.1f}")
    x_seed_high: float | None = hidden("x seed high", "", "{:.1f}")
    seed_epoch_s: float | None = col("seed epoch", "s", "{:.1f}")
    seed_basis: str | None = hidden("seed epoch basis")
    eval_loss: float | None = col("eval loss", "", "{:.4f}")
    seed_eval_loss: float | None = hidden("seed eval loss", "", "{:.4f}")
    seed_range: float | None = hidden("seeds' eval loss range", "", "{:.4f}")
    runner_up: str | None = hidden("runner-up")
    note: str | None = hidden("note")
    swift_version: str | None = hidden("ms-swift")
    command: str | None = hidden("command")
    sentence: str = hidden("sentence", default="")


def recommended_row(rec: Recommendation, classes: tuple[ClassAnswer, ...] | list[ClassAnswer],
                    sentence: str) -> RecommendedRow:
    """REC as one RecommendedRow; SENTENCE: the recommendation in words (analysis.present.recommend_view.sentence)."""
    d = rec.deciding
    xs, es = rec.x_seed_range(), rec.epoch_range()
    est = next((c.choice.estimate for c in classes if c.hw == rec.hw and c.choice is not None
                and c.choice.experiment == rec.experiment and c.choice.estimate is not None), None)
    if est is not None:  # the one estimator's figure: the class table's and plan's
        es = (est.low_s, est.high_s)
    return RecommendedRow(
        experiment=rec.experiment, hw=rec.hw, host=d.host if d else None, run=d.run if d else None,
        epoch_s=est.epoch_s if est else (d.epoch_s if d else None), epoch_low_s=es[0] if es else None,
        epoch_high_s=es[1] if es else None, host_epoch_s=d.epoch_s if d else None,
        startup_s=est.startup_s if est else None, hosts=len(rec.chosen),
        warm_epoch_s=d.warm_epoch_s if d else None, epoch_x_seed=d.epoch_x_seed if d else None,
        x_seed_low=xs[0] if xs else None, x_seed_high=xs[1] if xs else None,
        seed_epoch_s=d.seed.seconds if d and d.seed else None, seed_basis=d.seed.basis if d and d.seed else None,
        eval_loss=d.eval_loss if d else None, seed_eval_loss=d.seed_eval_loss if d else None,
        seed_range=d.seed_range if d else None, runner_up=rec.runner_up, note=rec.note,
        swift_version=rec.swift_version, command=rec.command, sentence=sentence)


# the full Markdown table of the recipes (`swiftbench tables`): every field but the run's labels and folder
RECIPE_FULL_TABLE = tuple(f.name for f in fields(RecipeRow) if f.name not in ("labels", "path"))
