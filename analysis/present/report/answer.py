"""The answer section, the report's first screen: the recommended recipe (analysis.judge.answer.recommend: its sentence,
the command to paste, its full epochs per host against the seed recipe's), each GPU class's recipe with its epoch and
cost (analysis.judge.answer.classes), then the seed recipe per class: measured, predicted and published, each said so.

Every number is some stage's: measured rows analysis.measure (steps, throughput, profile), predicted rows the planner
(analysis.estimate.planner.estimate), its error on our runs analysis.estimate.validate, the recommendation and the
class's recipe analysis.judge, published rows the seeds. This module picks the rows and words them.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from analysis.core.seeds import published_recipe
from analysis.estimate import planner
from analysis.estimate import prices as price_tables
from analysis.estimate.validate import PlannerError, planner_error
from analysis.judge.answer import published as P
from analysis.judge.answer import seed_table, view
from analysis.judge.answer.classes import ClassAnswer
from analysis.judge.answer.recommend import Recommendation
from analysis.judge.answer.seed_table import SeedRow
from analysis.judge.answer.view import ClassRow, RecipeRow
from analysis.parse.record import RunRecord
from analysis.present import plots, recommend_view, view_render
from analysis.present import tables as T
from analysis.present.recommend_view import band_text, seconds_text
from analysis.present.report import html as H
from analysis.present.report.context import Context
from experiments.base import hardware


def classes(ctx: Context) -> list[str]:
    """The classes with a row: the ones asked about, then any other with a measured seed-recipe run, by memory size
    and peak."""
    keys = hardware.shown() + [r.hw for r in P.seed_runs(ctx.picked) if r.hw]
    keys = [k for k in dict.fromkeys(keys) if k and hardware.get(k)]
    return sorted(keys, key=lambda k: (hardware.require(k).memory_gb, hardware.require(k).bf16_dense_tflops))


# ------------------------------------------------------------------------------------------ the recipe


@dataclass(frozen=True)
class SeedRecipe:
    """The seed recipe as the planner takes it (its keyword arguments, by field name)."""

    model: str
    method: str
    max_length: int
    seq_len: int | None
    batch: int
    grad_accum: int
    samples: int
    epochs: int
    lora_rank: int
    mean_len: int | None = None  # the runs' mean sample length (as --from-args reads it), so that plan's data matches


def seed_recipe(ctx: Context) -> SeedRecipe:
    """The article's command (seeds/), the epoch's training samples and the longest sample from our seed runs where
    they logged them."""
    rec = published_recipe(ctx.seeds_dir)
    runs = P.seed_runs(ctx.picked)
    max_length = int(rec.get("max_length") or 2048)
    longest = max((r.train_tokens_max for r in runs if r.train_tokens_max), default=None)
    means = [r.train_tokens_mean for r in runs if r.train_tokens_mean]
    samples = max((r.train_samples for r in runs if r.train_samples), default=None) \
        or int(P.epoch(ctx.pub).samples or 1500)
    return SeedRecipe(model=str(rec.get("model")), method=rec.get("train_type") or rec.get("tuner_type") or "lora",
                      max_length=max_length, seq_len=min(int(longest), max_length) if longest else None,
                      batch=int(rec.get("per_device_train_batch_size") or 1),
                      grad_accum=int(rec.get("gradient_accumulation_steps") or 1), samples=int(samples),
                      epochs=int(rec.get("num_train_epochs") or 1), lora_rank=int(rec.get("lora_rank") or 8),
                      mean_len=round(sum(means) / len(means)) if means and longest else None)


def predictions(ctx: Context) -> dict[str, planner.PlanRow]:
    """hw -> the planner's estimate of the seed recipe on that class (the predicted row: its time, as `plan`'s)."""
    plans = planner.estimate(hw=classes(ctx), results=ctx.results_dir, **asdict(seed_recipe(ctx)))
    return {p.hw: p for p in plans}


# ------------------------------------------------------------------------------------------ rows


def _minutes(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    return f"{seconds / 3600:.1f} h" if seconds >= 5400 else f"{seconds / 60:.1f} min"


@dataclass(frozen=True)
class ClassCell:
    """The class's recipe (analysis.judge.answer.classes) as the seed table's last cell shows it."""

    text: str
    recipe: str | None = None
    epoch_s: float | None = None
    how: str | None = None


def answer_rows(ctx: Context) -> list[SeedRow]:
    """Per class: its measured seed-recipe runs (one per host), the planner's prediction, the article's figure
    (analysis.judge.answer.seed_table's SeedRows)."""
    plans = predictions(ctx)
    per_class = {c.hw: c for c in ctx.answer().classes}
    measured = P.seed_runs(ctx.picked)
    rows: list[SeedRow] = []
    for hw in classes(ctx):
        cap = planner.capacity_gib(hardware.require(hw))
        best = class_cell(per_class.get(hw))
        runs = sorted([r for r in measured if r.hw == hw], key=lambda r: (r.host_id is None, r.host_id or "", r.run))
        rows += [seed_table.measured_row(r, cap, best.recipe, best.epoch_s) for r in runs]
        if hw in plans:
            rows.append(seed_table.predicted_row(plans[hw], best.recipe, best.epoch_s))
        pub = seed_table.published_row(hw, P.value(ctx.pub, hw, "ms_per_step"), cap)
        if pub:
            rows.append(pub)
    return rows


CSV_FIELDS = tuple(f.name for f in fields(SeedRow) if f.name != "detail")  # answer.csv: every figure, not the words


def class_cell(c: ClassAnswer | None) -> ClassCell:
    """The class's recipe (analysis.judge.answer.classes) as the seed table's last cell shows it."""
    ch = c.choice if c else None
    if ch is None:
        return ClassCell("no matrix recipe shown to fit")
    how = "measured" if ch.measured else f"modelled, {band_text(ch.epoch_s, ch.low_s, ch.high_s)}"
    return ClassCell(f"{ch.experiment} · {seconds_text(ch.epoch_s)} ({how})", ch.experiment, ch.epoch_s, how)


def _best_cell(best: ClassCell) -> str:
    if not best.recipe:
        return H.e(best.text or "–")
    return (f"<b>{H.e(best.recipe)}</b><br>{H.e(seconds_text(best.epoch_s))}<br>"
            f"<small>{H.e(best.how)}</small>")


_F = {f.name: f for f in fields(SeedRow)}
# the table's columns: fields shown by view_render.cell; the composite ones below word their heads from the fields'
VALUE_FIELDS = ("ms_per_sample", "ms_per_step", "tokens_per_s")
PEAK_HEAD = f"{_F['peak_gib'].metadata['label']} / {view_render.head(_F['capacity_gib'])}"
EPOCH_HEAD = f"{_F['steady_extrapolated_s'].metadata['label']} / {_F['planner_epoch_s'].metadata['label']}"
BEST_HEAD = f"{_F['class_recipe'].metadata['label']} · {_F['class_recipe_epoch_s'].metadata['label']}"
HEADS = [view_render.head(_F["gpu"]), view_render.head(_F["source"]), *(view_render.head(_F[n]) for n in VALUE_FIELDS),
         PEAK_HEAD, view_render.head(_F["gpu_busy_frac"]), EPOCH_HEAD, view_render.head(_F["gpu_hours"]), BEST_HEAD]


def _td(head: str, text: str) -> str:
    return f'<td data-col="{H.e(head)}">{H.e(text)}</td>'


def table_html(rows: list[SeedRow], best: dict[str, ClassCell]) -> str:
    """The answer table: one group of rows per class (measured, predicted, published), the class and its best
    recipe (BEST: per class) once per group; rows say their class and source in data attributes."""
    head = "".join(f"<th>{H.e(c)}</th>" for c in HEADS)
    body = []
    for i, r in enumerate(rows):
        first = i == 0 or rows[i - 1].hw != r.hw
        n = sum(1 for x in rows if x.hw == r.hw)
        tds = []
        if first:
            tds.append(f'<td rowspan="{n}" class="sb-gpu" data-col="{H.e(HEADS[0])}">{H.e(r.gpu)}<br><small>'
                       f'{H.e(hardware.require(r.hw).memory_gb)} GB</small></td>')
        detail = {"measured": r.detail, "predicted": "planner" if r.fits in (None, True)
                  else "planner · does NOT fit", "published": "article"}[r.source]
        tds.append(f'<td data-col="{H.e(HEADS[1])}">{H.e(r.source)} <small>{H.e(detail)}</small></td>')
        tds += [_td(view_render.head(_F[n]), H.fmt(getattr(r, n), _F[n].metadata["fmt"])) for n in VALUE_FIELDS]
        peak = "illegible" if r.source == "published" else H.fmt(r.peak_gib, _F["peak_gib"].metadata["fmt"])
        tds.append(_td(PEAK_HEAD, f"{peak} / {_F['capacity_gib'].metadata['fmt'].format(r.capacity_gib)}"))
        tds.append(_td(view_render.head(_F["gpu_busy_frac"]),
                       H.fmt(r.gpu_busy_frac, _F["gpu_busy_frac"].metadata["fmt"])))
        epoch = r.steady_extrapolated_s if r.steady_extrapolated_s is not None else r.planner_epoch_s
        tds.append(_td(EPOCH_HEAD, _minutes(epoch)))
        tds.append(_td(view_render.head(_F["gpu_hours"]), H.fmt(r.gpu_hours, _F["gpu_hours"].metadata["fmt"])))
        if first:
            tds.append(f'<td rowspan="{n}" class="sb-best" data-col="best">'
                       f'{_best_cell(best[r.hw] if r.source != "published" else ClassCell(""))}</td>')
        cls = f"sb-{r.source}" + (" sb-group" if first else "")
        body.append(f'<tr class="{cls}" data-hw="{H.e(r.hw)}" data-source="{H.e(r.source)}">'
                    + "".join(tds) + "</tr>")
    return (f'<table class="sb-table sb-answer" id="answer-table"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table>")


def short_labels(runs: list[RunRecord]) -> str:
    """The measured runs' labels in one short line: those all share, then the cut runs' lengths and the hosts."""
    if not runs:
        return "Labels: none (no measured run)."
    common = [lab for lab in runs[0].labels if all(lab in r.labels for r in runs[1:])]
    cuts = sorted({r.max_steps for r in runs if r.is_cut_run and r.max_steps})
    other = sorted({lab for r in runs for lab in r.labels if lab not in common and not lab.startswith("cut run")})
    hosts = sorted({r.host_id[:8] if r.host_id else "?" for r in runs})
    return ("Labels: " + "; ".join(common + other)
            + (f"; cut runs ({', '.join(map(str, cuts))} steps)" if cuts else "")
            + f"; hosts {', '.join(hosts)} (?: before host fingerprints).")


def error_text(err: PlannerError) -> str:
    """The planner's error on our runs, in words."""
    st, pk, cut, fits = err.step, err.peak_full, err.peak_cut, err.fits
    parts = []
    if st.n and st.low is not None and st.high is not None and st.median_abs is not None:
        parts.append(f"step time {st.low:+.0%} to {st.high:+.0%} (median |error| {st.median_abs:.0%}, "
                     f"{st.n} runs)")
    if pk.n and pk.low is not None and pk.high is not None:
        span = (f"{pk.low:+.0%}" if round(pk.low, 2) == round(pk.high, 2)
                else f"{pk.low:+.0%} to {pk.high:+.0%}")
        parts.append(f"peak memory {span} on the {pk.n} full epochs")
    if cut.n:
        parts.append(f"never more than 10 % under the peak of {cut.ok} of {cut.n} cut runs")
    if fits.n:
        parts.append(f"fits / does not fit right for {fits.ok} of {fits.n} capped runs")
    return "; ".join(parts) if parts else "no run to check it against"


# ------------------------------------------------------------------------------------------ the recommendation


FIRST_SCREEN_CLASSES = ("gpu", "recipe", "fits", "peak_gib", "epoch_s", "gpu_hours", "cost", "obtained")  # fields


def classes_table_html(classes: list[ClassAnswer]) -> str:
    """Each GPU class's recipe: the answer's view (analysis.judge.answer.view.ClassRow), the first screen's narrower
    columns (README's table words how each figure was obtained; here the row's tooltip); classes.csv holds every
    field."""
    if not classes:
        return ""
    return view_render.to_html(view.class_rows(classes), ClassRow, table_id="recommended-gpus",
                               css="sb-table sb-answer", columns=FIRST_SCREEN_CLASSES, title=("fit_basis", "basis"))


def recipes_table_html(rec: Recommendation) -> str:
    """Every matrix recipe's full epochs per host (the answer's view: analysis.judge.answer.view.RecipeRow, hosts
    lettered as in README), against the host's seed epoch: the hosts with a seed epoch first, the others folded
    below."""
    rows = view.recipe_rows(rec)
    if not rows:
        return ""
    seeded = [r for r in rows if r.seed_epoch_s is not None]
    other = [r for r in rows if r.seed_epoch_s is None]
    def scroll(part: list) -> str:  # a wide table scrolls in its box, the page keeps its width
        return f'<div class="sb-scroll">{view_render.to_html(part, RecipeRow)}</div>' if part else ""

    return scroll(seeded) + H.fold(f"{len(other)} more full epochs on hosts without a seed epoch (no same-host ratio)",
                                   scroll(other))


def your_runs_html(ctx: Context) -> str:
    """The runs of experiments of the user's own (analysis.judge.answer.your_runs): metrics, labels, the nearest matrix
    recipe and the flags that differ; nothing where there are none."""
    df = T.your_runs_table(ctx.records)
    if df.empty:
        return ""
    return ("<h3>Your runs</h3>" + H.html_table(df, {"ms_per_step": "{:,.0f}", "tokens_per_s": "{:,.0f}",
                                                     "peak_gib": "{:.1f}", "mfu": "{:.1%}",
                                                     "final_eval_loss": "{:.4f}"})
            + H.csv(ctx, df, "your_runs.csv"))


def recommendation_html(ctx: Context) -> str:
    """The first screen: the sentence, then the command to paste beside each GPU class's recipe."""
    ans = ctx.answer()
    rec, classes = ans.recommendation, list(ans.classes)
    command = (f"<pre class=\"sb-command\"><code>{H.e(rec.command)}</code></pre>" if rec.command else "")
    left = (f"<h3>The recommended recipe ({H.e(rec.experiment)}), ms-swift {H.e(rec.swift_version or '')}: paste it "
            "(<code>pip install .</code> here gives <code>swiftbench plugin</code>)</h3>" + command) if command else ""
    others: dict[str, list] = {}
    for c in classes:  # a class whose recipe is not the recommended one: its own command, one click away
        if c.choice is not None and c.command and c.choice.experiment != rec.experiment:
            others.setdefault(c.choice.experiment, []).append(c)
    for recipe, group in others.items():
        names = " and ".join(P.short(c.hw) for c in group)
        left += H.fold(f"The command for the {H.e(names)} (recipe {H.e(recipe)}; "
                       f"{H.e(group[0].choice.fit_basis if group[0].choice else '')} on the H200)",
                       f"<pre class=\"sb-command\"><code>{H.e(group[0].command)}</code></pre>")
    right = ("<h3>Each GPU class's recipe (hover a row: how it was obtained)</h3>" + classes_table_html(classes)
             if classes else "")
    return H.join([
        f'<p class="sb-box" id="recommendation"><b>{H.e(recommend_view.sentence(rec, classes))}</b></p>',
        f'<div class="sb-command-row"><div class="sb-command-col">{left}</div>'
        f'<div class="sb-classes-col">{right}</div></div>' if left or right else "",
    ])


def recipes_detail_html(ctx: Context) -> str:
    """Below the seed recipe's table: every matrix recipe's epochs per host, the orders the runs do not settle, how
    each figure was obtained, and the user's own runs."""
    ans = ctx.answer()
    rec, classes = ans.recommendation, list(ans.classes)
    source = price_tables.price_source(ctx.prices)
    prices = (f"Prices: <code>{H.e(ctx.prices.name if ctx.prices else 'none')}</code>"
              + (f" ({H.e(source)})" if source else "") + "; yours with <code>--prices FILE</code>.")
    note = ("<i>epoch</i>: train_runtime of the recipe's full epochs on a host (ms-swift's clock: every step, "
            "eval and save; the median of its runs there, their range beside it; the warm figure, later runs with "
            "compiled code and kernels cached, is recipes_by_job_time.csv's warm_epoch_s); "
            "<i>start-up</i>: the run's wall time outside it (model load, data, final save). A recipe is ranked above "
            "another only by runs of one host; the seed recipe's epoch on a host without a full one is its cut run's "
            "steady step x the epoch's steps (a lower bound). Other classes: the time model carries the H200 run's "
            "steps there kernel by kernel (docs/time-model.md) with its band; the fit is the runs' logged peak "
            "(capped runs: trained under the class's allocator cap). " + prices)
    lines = recommend_view.undetermined_lines(rec)
    return H.join([
        "<h3>Matrix recipes' full epochs per host</h3>" + recipes_table_html(rec),
        H.note("Orders the runs do not settle: " + "; ".join(lines) + ".") if lines else "",
        H.note(note),
        your_runs_html(ctx),
        H.csv(ctx, view_render.to_frame(view.class_rows(classes), ClassRow), "classes.csv"),
        H.csv(ctx, view_render.to_frame(view.recipe_rows(rec), RecipeRow), "recipes_by_job_time.csv"),
    ])


def answer_section(ctx: Context) -> str:
    rows = answer_rows(ctx)
    df = view_render.to_frame(rows, SeedRow, columns=CSV_FIELDS)
    per_class = {c.hw: c for c in ctx.answer().classes}
    best = {hw: class_cell(per_class.get(hw)) for hw in classes(ctx)}
    err = planner_error(ctx.estimates())
    kw = seed_recipe(ctx)
    measured = P.seed_runs(ctx.picked)
    labels = short_labels(measured)
    epoch_steps = next((r.epoch_steps for r in rows if r.epoch_steps), None)
    fig = plots.answer_figure(df, "The seed recipe per GPU class: ms per sample", labels + " Predicted: the "
                              "planner's time (as `plan`). Published: the article (its 'step' is one sample).")
    figure = H.figure(ctx, fig, "answer.png", "ms per sample per GPU class: measured here, predicted by the planner, "
                      "published by the article. " + labels)
    recipe = (f"the seed recipe: {H.e(kw.model.split('/')[-1])} LoRA r{kw.lora_rank}, batch {kw.batch} x "
              f"grad-accum {kw.grad_accum}, max_length {kw.max_length}, one epoch of {kw.samples:,} samples"
              + (f" = {epoch_steps} optimizer steps" if epoch_steps else ""))
    note = (f"<b>Planner error on the runs we made</b> (estimate / measured - 1): {H.e(error_text(err))}; see "
            "Estimates vs measurements. <b>measured</b>: here, one row per host "
            f"({H.e(labels.removeprefix('Labels: '))}); <b>predicted</b>: the planner for the same recipe (its time "
            "as `swiftbench plan` prints it, the one estimator's: measured, or the H200 profile carried over; the "
            "memory model; analysis/estimate/planner.py; most of each predicted step is its host overhead, "
            "measured on the H200's hosts: no prediction for another GPU has been checked on that GPU); "
            "<b>published</b>: the ms-swift hardware article, ms per sample only (its tokens/s assume "
            "2,048 tokens a sample; its memory column is illegible). <i>steady x steps</i>: a measured run's steady "
            "median step x the epoch's steps (warm-up, evaluations and saves left out); <i>planner's epoch</i>: the "
            "planner's; <i>GPU-h</i> x your price per GPU-hour = its cost (the recommended recipe's table above prices "
            "it); <i>GPU busy</i>: share of a step the GPU computes (measured: two profiled steps; predicted: the "
            "roofline's). <i>the class's recipe</i>: the fastest matrix recipe shown to fit the class's memory "
            "(the recommendation's table above), with its epoch there.")
    return H.join([
        recommendation_html(ctx),
        H.p(f"For {recipe}: what each GPU class gives. Then the claims, the details of speed, memory and loss, "
            "published against measured, utilisation, the planner's validation and the environment."),
        '<div class="sb-answer-row"><div class="sb-answer-table">' + table_html(rows, best)
        + f'<p class="sb-note">{note}</p></div><div class="sb-answer-figure">{figure}</div></div>',
        H.csv(ctx, df, "answer.csv"),
        recipes_detail_html(ctx),
    ])
