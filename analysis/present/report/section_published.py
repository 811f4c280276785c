"""Published vs measured section: each published figure beside ours and what the published speed figures mean
(the numbers come from analysis.judge.answer.published; this module words and draws them)."""
from __future__ import annotations

import pandas as pd

from analysis.judge.answer import published as P
from analysis.measure import steps
from analysis.present import plots, view_render
from analysis.present.report import html as H
from analysis.present.report.context import Context

FORMATS = {"published": "{:,.4g}", "measured": "{:,.4g}", "measured / published": "{:.3f}"}


def comparison(ctx: Context) -> pd.DataFrame:
    """analysis.judge.answer.published.comparison_frame of the picked runs, extracted texts on one line."""
    comp = P.comparison_frame(ctx.picked, ctx.ok_records(), ctx.pub, ctx.seeds_dir, ctx.hardware)
    comp["published text"] = comp["published text"].map(H.breaks)
    return comp


def _printed(text: str | None) -> str:
    """What the article printed, in words: a figure the extraction split over lines is named piece by piece."""
    if H.missing(text):
        return "nothing legible printed"
    parts = [t.strip() for t in str(text).split("\n") if t.strip()]
    if len(parts) < 2:
        return f"printed '{H.e(str(text).strip())}'"
    return "printed " + " / ".join(f"'{H.e(t)}'" for t in parts) + SPLIT_MARK


SPLIT_MARK = "*"  # a figure the extraction split over lines: _tokens_per_step says once what the pieces are


def _tokens_per_step(facts: P.SpeedFacts) -> str:
    max_len = facts.max_length
    pieces = [f"{P.short(x.hw)} {max_len:,} x 1,000 / {x.ms:,.0f} = {x.tokens_per_s:,.0f} ({_printed(x.printed)})"
              for x in facts.published]
    split = any(SPLIT_MARK + ")" in p for p in pieces)
    return (f"<li><b>Tokens per step.</b> The published tokens/s are {max_len:,} / step time: " + "; ".join(pieces)
            + (" (*: the figure is printed over separate lines of the extracted text, its pieces shown; characters "
               "between them may be lost)" if split else "")
            + f". Each matches the legible characters of the article's column, so the article assumes every step "
            f"holds {max_len:,} tokens, i.e. max_length.</li>")


def _tokens_per_sample(t: P.TokensPerSample, max_length: int) -> str:
    batch = (f" {t.batch:.0f} samples (one optimizer step) hold about {t.per_global_batch:,.0f} tokens, close "
             f"to {max_length:,}." if t.batch and t.per_global_batch else "")
    return (f"<li><b>Tokens per sample.</b> The recipe's data averages {t.mean:.1f} tokens per sample "
            f"(train_tokens_mean of our runs, from ms-swift's dataset statistics; longest {t.max:.0f}). A "
            f"batch-1 forward-backward pass holds one sample, about {t.mean:.0f} tokens (samples are not "
            f"padded to max_length at batch 1): read per micro-step, the article's tokens/s are "
            f"{t.overstatement:.1f}x too high.{batch}</li>")


def _epoch(ep: P.ArticleEpoch) -> str:
    ours = (f" Our complete runs logged {', '.join(str(s) for s in ep.full_run_steps)} optimizer steps for "
            f"{ep.full_run_train_samples} training samples (after the eval split)." if ep.full_run_steps else "")
    return (f"<li><b>Steps per epoch.</b> {ep.samples:,.0f} samples / global batch {ep.batch:.0f} = "
            f"{ep.samples_per_batch:.2f}, so {ep.steps} optimizer steps per epoch, not the published "
            f"{ep.published_steps:.0f}; counting forward-backward passes gives {ep.samples:,.0f}, not "
            f"{ep.published_steps:.0f} either.{ours}</li>")


def _step(s: P.StepVsPublished) -> str:
    return (f"<li><b>What is a published step?</b> The article calls a step one forward-backward pass. Our "
            f"{P.short(s.hw)} seed run ({H.e('; '.join(s.labels))}): micro-step (one forward-backward of "
            f"one per-device batch) {s.micro_ms:,.1f} ms, optimizer step ({s.grad_accum} micro-steps) "
            f"{s.opt_ms:,.0f} ms. {P.short(s.published_hw)} is published at {s.published_ms:,.0f} ms per "
            f"step ({H.e(s.relation)}): our micro-step is {s.micro_over_published:.2f}x that, our optimizer "
            f"step {s.opt_over_published:.1f}x. The published step times are the size of a micro-step; read as "
            f"optimizer steps they would be {s.opt_over_published:.1f}x faster than what we measure.</li>")


def plain_statement(ctx: Context) -> str:
    """The paragraph on what the published speed figures mean, with the numbers."""
    facts = P.speed_facts(ctx.picked, ctx.ok_records(), ctx.pub, ctx.seeds_dir)
    out = []
    if facts.published:
        out.append(_tokens_per_step(facts))
    if facts.tokens_per_sample:
        out.append(_tokens_per_sample(facts.tokens_per_sample, facts.max_length))
    if facts.epoch:
        out.append(_epoch(facts.epoch))
    out += [_step(s) for s in facts.steps[:1]]
    if not out:
        return H.note("No published speed figures or no measured runs to compare.")
    rest = facts.steps[1:]
    return "<ul>" + "".join(out) + "</ul>" + H.fold(
        f"the same for the other {len(rest)} seed run{'s' if len(rest) != 1 else ''}",
        "<ul>" + "".join(_step(s) for s in rest) + "</ul>" if rest else "")


def not_in_article(ctx: Context) -> str:
    """A sentence per measured class the article did not test: its nearest published class."""
    out = []
    for hw in sorted({r.hw for r in P.seed_runs(ctx.picked)} - ctx.published_hw, key=ctx.hw_rank):
        ref, relation = P.nearest(hw, ctx.pub)
        if ref is not None and hw is not None:  # nearest gives a class only for a class
            out.append(f"The {P.short(hw)} is not in the article: its nearest published class is the "
                       f"{P.short(ref)} ({relation.split('(', 1)[-1].rstrip(')')}), and those rows are labelled as a "
                       "cross-hardware comparison.")
    return " ".join(out)


def published_section(ctx: Context) -> str:
    comp = comparison(ctx)
    parts = [
        "<p><b>What the published speed figures mean, with the numbers</b></p>",
        plain_statement(ctx),
        H.fold(f"each published figure beside ours ({len(comp)} rows; a ratio of 1 would mean agreement)",
               H.p(H.e(not_in_article(ctx))) + H.html_table(comp, FORMATS)),
        H.csv(ctx, comp, "published_vs_measured.csv"),
    ]
    pub_hw = P.hardware_with(ctx.pub, "ms_per_step")
    plot_rows = P.step_points(ctx.pub, ctx.picked)
    seeds = [r for r in P.seed_runs(ctx.picked) if steps.micro_step_ms(r)]
    if plot_rows:
        labels = ctx.labels_of(seeds) + " Grey: published (article), not measured here."
        fig = plots.published_vs_measured(view_render.to_frame(plot_rows, P.StepPoint),
                                          "Published step times beside our micro-step and optimizer step", labels)
        parts.append(H.figure(ctx, fig, "published_vs_measured.png",
                              f"Published ms per step ({', '.join(P.short(h) for h in pub_hw)}) and our seed runs per "
                              "micro-step and per optimizer step, log scale; a cross-hardware comparison where the "
                              "GPUs differ. " + labels))
    return H.join(parts)
