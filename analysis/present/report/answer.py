"""The answer section, the report's first screen: per GPU class, the seed recipe's time per sample and per optimizer
step, real tokens/s, peak memory against capacity, GPU-busy share, time and GPU-hours to finish its epoch, and the best
recipe that fits the class with its speed-up over the seed recipe; measured, published or predicted, each said so.

Every number is some stage's: measured rows analysis.measure (steps, throughput, profile), predicted rows the planner
(analysis.estimate.planner.estimate, its roofline figures), its error on our runs analysis.estimate.validate, the best
recipes the claims audit (analysis.judge), published rows the seeds. This module picks the rows and words them.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from analysis.core.seeds import published_recipe
from analysis.estimate import planner, recipe_gpus
from analysis.estimate.validate import planner_error
from analysis.judge import config
from analysis.judge import published as P
from analysis.measure import profile, steps, throughput
from analysis.parse.record import RunRecord
from analysis.present import plots
from analysis.present import tables as T
from analysis.present.recommend_view import money, seconds_text
from analysis.present.report import html as H
from analysis.present.report.context import Context
from experiments.base import hardware

# The GPU classes a reader asks about (the article's four, the 80 GB A100, the H100 and the H200 we measure on)
PREDICTED = ("a10", "rtx4090", "a100", "a100-80gb", "h100", "h200")
COLUMNS = ["GPU", "source", "ms / sample", "ms / step", "tokens/s", "peak / capacity GiB", "GPU busy",
           "epoch", "GPU\u2011h", "best recipe that fits · x seed recipe"]  # a non-breaking hyphen in GPU-h
CSV_COLUMNS = ["hw", "gpu", "source", "run", "host", "gpus", "labels", "ms_per_sample", "ms_per_step", "tokens_per_s",
               "peak_gib", "capacity_gib", "fits", "gpu_busy_frac", "epoch_steps", "epoch_s", "gpu_hours",
               "largest_batch", "best_recipe", "best_x_seed", "best_x_seed_hosts", "best_basis"]


def classes(ctx: Context) -> list[str]:
    """The classes with a row: the ones asked about, then any other with a measured seed-recipe run, by memory size
    and peak."""
    keys = [k for k in PREDICTED if hardware.get(k)] + [r.hw for r in P.seed_runs(ctx.picked) if r.hw]
    keys = [k for k in dict.fromkeys(keys) if k and hardware.get(k)]
    return sorted(keys, key=lambda k: (hardware.require(k)["memory_gb"], hardware.require(k)["bf16_dense_tflops"]))


# ------------------------------------------------------------------------------------------ the recipe


def recipe_kwargs(ctx: Context) -> dict:
    """The seed recipe as the planner takes it: the article's command (seeds/), the epoch's training samples and the
    longest sample from our seed runs where they logged them."""
    rec = published_recipe(ctx.seeds_dir)
    runs = P.seed_runs(ctx.picked)
    max_length = int(rec.get("max_length") or 2048)
    longest = max((r.train_tokens_max for r in runs if r.train_tokens_max), default=None)
    samples = max((r.train_samples for r in runs if r.train_samples), default=None) \
        or int(P.epoch(ctx.pub)["samples"] or 1500)
    return {"model": str(rec.get("model")), "method": rec.get("train_type") or rec.get("tuner_type") or "lora",
            "max_length": max_length, "seq_len": min(int(longest), max_length) if longest else None,
            "batch": int(rec.get("per_device_train_batch_size") or 1),
            "grad_accum": int(rec.get("gradient_accumulation_steps") or 1), "samples": int(samples),
            "epochs": int(rec.get("num_train_epochs") or 1), "lora_rank": int(rec.get("lora_rank") or 8)}


def predictions(ctx: Context) -> dict[str, dict]:
    """hw -> the planner's estimate of the seed recipe on that class (its roofline figures are the predicted row)."""
    plans = planner.estimate(hw=classes(ctx), results=ctx.results_dir, **recipe_kwargs(ctx))
    return {p["hw"]: p for p in plans}


# ------------------------------------------------------------------------------------------ best recipe


def class_best(ctx: Context) -> list[tuple[float, dict]]:
    """(card GB, the claims audit's row) of every `class_best` claim, smallest card first."""
    table = ctx.verdicts().set_index("id")
    out = [(float(c["rule"]["card_gb"]), {**table.loc[c["id"]].to_dict(), "id": c["id"]})
           for c in config.claims() if c["rule"]["kind"] == "class_best" and c["id"] in table.index]
    return sorted(out, key=lambda x: x[0])


def same_host_pair(ctx: Context) -> dict | None:
    """The claims audit's same-host pair (the target_speedup rule): its numbers, when both runs shared a host."""
    table = ctx.verdicts().set_index("id")
    for c in config.claims():
        if c["rule"]["kind"] == "target_speedup" and c["id"] in table.index:
            n = table.loc[c["id"], "numbers"]
            if isinstance(n, dict) and n.get("hosts") == "same host" and n.get("ratio"):
                return n
    return None


def best_recipe(hw: str, bests: list[tuple[float, dict]], pair: dict | None) -> dict:
    """The best recipe that fits HW's memory (the class_best claim with the largest cap not above it) and its speed-up
    over the seed recipe: the same-host pair's where the pair ran that recipe, else the audit's with its host
    relation."""
    gb = float(hardware.require(hw)["memory_gb"])
    fitting = [row for cap, row in bests if cap <= gb]
    if not fitting:
        return {"text": "–", "recipe": None}
    row = fitting[-1]
    n = numbers if isinstance(numbers := row.get("numbers"), dict) else {}
    if not n.get("recipe"):
        return {"text": f"{row['verdict']} ({row['id']})", "recipe": None}
    name = n["recipe"]
    if pair and pair.get("combination") == n.get("overrides"):
        ratio, hosts, basis = pair["ratio"], "same host", "the same-host pair (paired steps)"
        low, high = pair.get("ratio_low"), pair.get("ratio_high")
    else:
        ratio, hosts, basis = n.get("ratio"), n.get("hosts") or "same host", f"claims audit {row['id']}"
        low, high = n.get("ratio_low"), n.get("ratio_high")
    text = f"{name} · {ratio:.1f}x ({hosts})" if ratio else name
    return {"text": text, "recipe": name, "ratio": ratio, "hosts": hosts, "basis": basis, "low": low, "high": high,
            "cap": n.get("cap_gib")}


# ------------------------------------------------------------------------------------------ rows


def _gpu(hw: str | None) -> str | None:
    return P.short(hw) if hw else hw  # no class: its None (or "") as it is


def _minutes(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    return f"{seconds / 3600:.1f} h" if seconds >= 5400 else f"{seconds / 60:.1f} min"


def _host(rec: RunRecord) -> str:
    return rec.host_id[:8] if rec.host_id else "host ?"


def measured_row(rec: RunRecord, capacity: float, best: dict) -> dict:
    st = steps.step_time(rec)["median"]
    ep = steps.epoch_time(rec)
    gpus = rec.world_size or 1
    extra = [f"{gpus} GPUs" if gpus > 1 else None,
             f"{rec.global_steps} steps" if rec.is_cut_run and rec.global_steps else None,
             "forced" if any(lab.startswith("forced") for lab in rec.labels) else None]
    named = [x for x in extra if x]
    return {"hw": rec.hw, "gpu": _gpu(rec.hw), "source": "measured", "run": rec.run, "host": rec.host_id, "gpus": gpus,
            "labels": "; ".join(rec.labels), "detail": " · ".join([_host(rec)] + named),
            "ms_per_sample": steps.sample_ms(rec), "ms_per_step": st * 1000 if st else None,
            "tokens_per_s": throughput.throughput(rec).tokens_per_s, "peak_gib": rec.peak_mem_gib,
            "capacity_gib": capacity, "fits": None, "gpu_busy_frac": profile.busy_fraction(rec),
            "epoch_steps": ep["steps"], "epoch_s": ep["seconds"], "gpu_hours": ep["gpu_hours"], "largest_batch": None,
            "best": best}


def predicted_row(p: dict, best: dict) -> dict:
    roof = p["roofline"]
    return {"hw": p["hw"], "gpu": _gpu(p["hw"]), "source": "predicted", "run": None, "host": None, "gpus": 1,
            "labels": "planner (analysis/estimate/planner.py): roofline time, memory model",
            "detail": "planner" + ("" if p["fits"] else "; does NOT fit"),
            "ms_per_sample": roof["ms_per_sample"], "ms_per_step": roof["step_time_s"] * 1000,
            "tokens_per_s": roof["tokens_per_s"], "peak_gib": p["logged_peak_gib"], "capacity_gib": p["capacity_gib"],
            "fits": p["fits"], "gpu_busy_frac": roof["gpu_busy_frac"], "epoch_steps": p["steps"],
            "epoch_s": roof["total_time_s"], "gpu_hours": roof["total_time_s"] / 3600, "largest_batch": p["max_batch"],
            "best": best}


def published_row(ctx: Context, hw: str, capacity: float) -> dict | None:
    ms = P.value(ctx.pub, hw, "ms_per_step")
    if ms is None:
        return None
    return {"hw": hw, "gpu": _gpu(hw), "source": "published", "run": "seeds/ms_swift_hw_test.yaml", "host": None,
            "labels": "published (ms-swift hardware article; its 'step' is one sample)", "detail": "article",
            "ms_per_sample": ms, "ms_per_step": None, "tokens_per_s": None, "peak_gib": None,
            "capacity_gib": capacity, "fits": None, "gpu_busy_frac": None, "epoch_steps": None, "epoch_s": None,
            "gpu_hours": None, "largest_batch": None, "best": {"text": "", "recipe": None}}


def answer_rows(ctx: Context) -> list[dict]:
    """Per class: its measured seed-recipe runs (one per host), the planner's prediction, the article's figure."""
    plans = predictions(ctx)
    bests, pair = class_best(ctx), same_host_pair(ctx)
    measured = P.seed_runs(ctx.picked)
    rows = []
    for hw in classes(ctx):
        cap = planner.capacity_gib(hardware.require(hw))
        best = best_recipe(hw, bests, pair)
        runs = sorted([r for r in measured if r.hw == hw], key=lambda r: (r.host_id is None, r.host_id or "", r.run))
        rows += [measured_row(r, cap, best) for r in runs]
        if hw in plans:
            rows.append(predicted_row(plans[hw], best))
        pub = published_row(ctx, hw, cap)
        if pub:
            rows.append(pub)
    return rows


def frame(rows: list[dict]) -> pd.DataFrame:
    """The rows as the CSV keeps them."""
    out = []
    for r in rows:
        b = r["best"]
        out.append({**{k: r.get(k) for k in CSV_COLUMNS if k in r}, "best_recipe": b.get("recipe"),
                    "best_x_seed": b.get("ratio"), "best_x_seed_hosts": b.get("hosts"), "best_basis": b.get("basis")})
    return pd.DataFrame(out, columns=CSV_COLUMNS)


def _cells(r: dict) -> dict:
    peak = "illegible" if r["source"] == "published" else H.fmt(r["peak_gib"], "{:.1f}")
    return {
        "ms / sample": H.fmt(r["ms_per_sample"], "{:,.0f}"),
        "ms / step": H.fmt(r["ms_per_step"], "{:,.0f}"), "tokens/s": H.fmt(r["tokens_per_s"], "{:,.0f}"),
        "peak / capacity GiB": f"{peak} / {r['capacity_gib']:.0f}", "GPU busy": H.fmt(r["gpu_busy_frac"], "{:.0%}"),
        "epoch": _minutes(r["epoch_s"]), "GPU\u2011h": H.fmt(r["gpu_hours"], "{:.2f}"),
    }


def _best_cell(best: dict) -> str:
    if not best.get("recipe"):
        return H.e(best.get("text") or "–")
    ratio = f"{best['ratio']:.1f}x" if best.get("ratio") else ""
    rng = (f" ({best['low']:.1f}-{best['high']:.1f})" if best.get("low") and best.get("high") else "")
    return f"<b>{H.e(best['recipe'])}</b><br>{H.e(ratio + rng)}<br><small>{H.e(best['hosts'])}</small>"


def table_html(rows: list[dict]) -> str:
    """The answer table: one group of rows per class (measured, predicted, published), the class and its best
    recipe once per group; rows say their class and source in data attributes."""
    head = "".join(f"<th>{H.e(c)}</th>" for c in COLUMNS)
    body = []
    for i, r in enumerate(rows):
        cells = _cells(r)
        first = i == 0 or rows[i - 1]["hw"] != r["hw"]
        n = sum(1 for x in rows if x["hw"] == r["hw"])
        tds = []
        for c in COLUMNS:
            if c == "GPU":
                if first:
                    tds.append(f'<td rowspan="{n}" class="sb-gpu" data-col="GPU">{H.e(r["gpu"])}<br><small>'
                               f'{H.e(hardware.require(r["hw"])["memory_gb"])} GB</small></td>')
            elif c == "source":
                detail = {"measured": r["detail"], "predicted": "planner" if r["fits"] in (None, True)
                          else "planner · does NOT fit", "published": "article"}[r["source"]]
                tds.append(f'<td data-col="source">{H.e(r["source"])} <small>{H.e(detail)}</small></td>')
            elif c.startswith("best recipe"):
                if first:
                    tds.append(f'<td rowspan="{n}" class="sb-best" data-col="best">{_best_cell(r["best"])}</td>')
            else:
                tds.append(f'<td data-col="{H.e(c)}">{H.e(cells[c])}</td>')
        cls = f"sb-{r['source']}" + (" sb-group" if first else "")
        body.append(f'<tr class="{cls}" data-hw="{H.e(r["hw"])}" data-source="{H.e(r["source"])}">'
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


def error_text(err: dict) -> str:
    """The planner's error on our runs, in words."""
    st, pk, cut, fits = err["step"], err["peak_full"], err["peak_cut"], err["fits"]
    parts = []
    if st["n"]:
        parts.append(f"step time {st['low']:+.0%} to {st['high']:+.0%} (median |error| {st['median_abs']:.0%}, "
                     f"{st['n']} runs)")
    if pk["n"]:
        span = (f"{pk['low']:+.0%}" if round(pk["low"], 2) == round(pk["high"], 2)
                else f"{pk['low']:+.0%} to {pk['high']:+.0%}")
        parts.append(f"peak memory {span} on the {pk['n']} full epochs")
    if cut["n"]:
        parts.append(f"never more than 10 % under the peak of {cut['ok']} of {cut['n']} cut runs")
    if fits["n"]:
        parts.append(f"fits / does not fit right for {fits['right']} of {fits['n']} capped runs")
    return "; ".join(parts) if parts else "no run to check it against"


# ------------------------------------------------------------------------------------------ the recommendation


def recommendation(ctx: Context) -> dict:
    """analysis.present.tables.recommendation of the report's runs (made once)."""
    if "recommendation" not in ctx._cache:
        root = ctx.results_dir if isinstance(ctx.results_dir, Path) else None  # several roots: the planner reads none
        ctx._cache["recommendation"] = T.recommendation(ctx.records, ctx.prices, root)
    return ctx._cache["recommendation"]


def gpu_table_html(rows: list[dict]) -> str:
    """The recommended recipe per GPU class: fit, epoch, GPU-hours, price and cost (none where it does not fit)."""
    if not rows:
        return ""
    head = ["GPU", "fits? peak / capacity GiB", "epoch", "GPU\u2011h", "price / GPU\u2011h", "cost", "time from"]
    body = []
    for r in rows:
        fit = ("fits" if r["fits"] else "does NOT fit") + f" {r['needs_gib']:.1f} / {r['capacity_gib']:.1f}"
        cells = [_gpu(r["hw"]), fit, seconds_text(r["epoch_s"]), H.fmt(r["gpu_hours"], "{:.3f}"),
                 money(r["price_per_gpu_hour"], r["currency"]), money(r["cost"], r["currency"]),
                 r["source"] + (f", host {r['host'][:8]}" if r.get("host") else "")]
        body.append("<tr>" + "".join(f"<td>{H.e(c)}</td>" for c in cells) + "</tr>")
    return ('<table class="sb-table sb-answer" id="recommended-gpus"><thead><tr>'
            + "".join(f"<th>{H.e(c)}</th>" for c in head) + f"</tr></thead><tbody>{''.join(body)}</tbody></table>")


def recipes_table_html(rows: list[dict]) -> str:
    """Every full-epoch matrix recipe per host by time to finish the job, start-up beside it, steady tokens/s: the
    hosts with a full-epoch seed run first (their x seed is a same-host ratio), the others folded below."""
    df = pd.DataFrame(rows, columns=T.RECIPE_COLUMNS)
    if df.empty:
        return ""
    df = df.sort_values(["x_seed", "train_runtime_s"], ascending=[False, True], na_position="last")
    df["host"] = df["host"].map(lambda h: h[:8] if isinstance(h, str) else "?")
    df["experiment"] = [f"{x} ★" if rec else x for x, rec in zip(df["experiment"], df["recommended"])]
    df["eval loss (seed's)"] = [f"{a:.4f}" + (f" ({b:.4f})" if not H.missing(b) else "")
                                for a, b in zip(df["eval_loss"], df["seed_eval_loss"])]
    cols = ["experiment", "host", "train_runtime_s", "load_s", "tokens_per_s", "x_seed", "eval loss (seed's)",
            "loss_counts"]
    spec: dict[str, Any] = {"formats": {"train_runtime_s": "{:.1f}", "load_s": "{:.1f}", "tokens_per_s": "{:,.0f}",
                        "x_seed": "{:.1f}x"},
            "columns": cols,
            "rename": {"train_runtime_s": "epoch s", "load_s": "start-up s", "tokens_per_s": "steady tokens/s",
                       "x_seed": "x seed (epoch)", "loss_counts": "in band"}}
    paired, other = df[df["same_host_seed"]], df[~df["same_host_seed"]]
    return (H.html_table(paired, **spec) if not paired.empty else "") + H.fold(
        f"{len(other)} more full epochs on hosts without a full-epoch seed run (no same-host ratio)",
        H.html_table(other, **spec) if not other.empty else "")


def recommendation_html(ctx: Context) -> str:
    rec = recommendation(ctx)
    source = recipe_gpus.price_source(ctx.prices)
    prices = (f"Prices: <code>{H.e(ctx.prices.name if ctx.prices else 'none')}</code>"
              + (f" ({H.e(source)})" if source else "") + "; yours with <code>--prices FILE</code>.")
    note = ("<i>epoch</i>: train_runtime of the whole epoch (ms-swift's clock: every step, eval and save); "
            "<i>start-up</i>: the run's wall time outside it (model load, data, final save). The recipe is the "
            "matrix recipe whose full-epoch run finished soonest against a full-epoch seed run of the same host, "
            "eval loss within the seed band. Other classes: the planner's time for the recipe's batch and "
            "checkpointing (it models no padding-free rows or Liger kernels), the fit from the run's logged peak. "
            + prices)
    pick = rec["pick"]
    title = f"The recommended recipe ({H.e(pick['experiment'])}) per GPU class" if pick.get("experiment") else ""
    return H.join([
        f'<p class="sb-box" id="recommendation"><b>{H.e(rec["sentence"])}</b></p>',
        # one above the other: side by side, the GPU table's `time from` column (what each row rests on) was cut
        (f"<h3>{title}</h3>" if title else "") + gpu_table_html(rec["gpus"]),
        "<h3>Matrix recipes by time to finish the job (full epochs)</h3>" + recipes_table_html(rec["recipes"]),
        H.note(note),
        H.csv(ctx, pd.DataFrame(rec["gpus"], columns=T.GPU_COLUMNS), "recommended_gpus.csv"),
        H.csv(ctx, pd.DataFrame(rec["recipes"], columns=T.RECIPE_COLUMNS), "recipes_by_job_time.csv"),
    ])


def answer_section(ctx: Context) -> str:
    rows = answer_rows(ctx)
    df = frame(rows)
    err = planner_error(ctx.estimates())
    kw = recipe_kwargs(ctx)
    measured = P.seed_runs(ctx.picked)
    labels = short_labels(measured)
    epoch_steps = next((r["epoch_steps"] for r in rows if r.get("epoch_steps")), None)
    fig = plots.answer_figure(df, "The seed recipe per GPU class: ms per sample", labels + " Predicted: the "
                              "planner's roofline. Published: the article (its 'step' is one sample).")
    figure = H.figure(ctx, fig, "answer.png", "ms per sample per GPU class: measured here, predicted by the planner, "
                      "published by the article. " + labels)
    recipe = (f"the seed recipe: {H.e(kw['model'].split('/')[-1])} LoRA r{kw['lora_rank']}, batch {kw['batch']} x "
              f"grad-accum {kw['grad_accum']}, max_length {kw['max_length']}, one epoch of {kw['samples']:,} samples"
              + (f" = {epoch_steps} optimizer steps" if epoch_steps else ""))
    note = (f"<b>Planner error on the runs we made</b> (estimate / measured - 1): {H.e(error_text(err))}; see "
            "Estimates vs measurements. <b>measured</b>: here, one row per host "
            f"({H.e(labels.removeprefix('Labels: '))}); <b>predicted</b>: the planner for the same recipe (roofline "
            "time, memory model; analysis/estimate/planner.py; most of each predicted step is its host overhead, "
            "measured on the H200's hosts: no prediction for another GPU has been checked on that GPU); "
            "<b>published</b>: the ms-swift hardware article, ms per sample only (its tokens/s assume "
            "2,048 tokens a sample; its memory column is illegible). <i>epoch</i>: the epoch at the steady median "
            "step; <i>GPU-h</i> x your price per GPU-hour = its cost (the recommended recipe's table above prices "
            "it); <i>GPU busy</i>: share of a step the GPU computes (measured: two profiled steps; predicted: the "
            "roofline's). <i>best recipe</i>: the fastest recipe that trained within the class's memory, run on the "
            "H200 under an allocator cap of that size (the H200's speed with the class's memory), x its speed-up over "
            "the seed recipe (95 % range), same host where a same-host pair ran it.")
    return H.join([
        recommendation_html(ctx),
        H.p(f"For {recipe}: what each GPU class gives. Then the claims, the details of speed, memory and loss, "
            "published against measured, utilisation, the planner's validation and the environment."),
        '<div class="sb-answer-row"><div class="sb-answer-table">' + table_html(rows)
        + f'<p class="sb-note">{note}</p></div><div class="sb-answer-figure">{figure}</div></div>',
        H.csv(ctx, df, "answer.csv"),
    ])
