"""Measured runs set against the seed article's published figures: the ratios, the article's own derivations, the
nearest published GPU class.

The article (seeds/ms_swift_hw_test.yaml) prints a time per "step" per GPU and tokens/s derived from it as
max_length tokens per step (its recipe's `--max_length`); its own step count and sample count are figures too. This
module turns those figures and the runs' measurements (analysis.measure) into numbers side by side: DataFrames and
dicts of numbers, which the report only formats. Published texts are returned as extracted ("\\n" where the
extraction broke a line).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from analysis.core.seeds import DEFAULT_SEEDS_DIR, published_recipe
from analysis.core.viewfield import col
from analysis.measure import steps, throughput
from analysis.parse.record import RunRecord
from experiments.base import hardware

SEED_EXPERIMENT = "seed"  # the matrix experiment that runs the article's recipe; published rows sit beside it
COMPARISON_COLUMNS = ["quantity", "published hw", "published", "published text", "our hw", "our run", "measured",
                      "unit", "measured / published", "comparison", "labels", "note"]


# ---------------------------------------------------------------------------------------- the figures


def _is_missing(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def value(pub: pd.DataFrame, hw: str | None, metric: str) -> float | None:
    """The legible value of METRIC for HW (None: the figures about every GPU), else None."""
    hit = pub[(pub["hw"] == hw) & (pub["metric"] == metric)] if hw else \
        pub[pub["hw"].isna() & (pub["metric"] == metric)]
    if hit.empty or _is_missing(hit.iloc[0]["value"]):
        return None
    return float(hit.iloc[0]["value"])


def text(pub: pd.DataFrame, hw: str | None, metric: str) -> str | None:
    """The extracted text of METRIC for HW (None: the figures about every GPU), legible or not."""
    hit = pub[(pub["hw"] == hw) & (pub["metric"] == metric)] if hw else \
        pub[pub["hw"].isna() & (pub["metric"] == metric)]
    return None if hit.empty else str(hit.iloc[0]["text"])


def hardware_with(pub: pd.DataFrame, metric: str, legible: bool = True) -> list[str]:
    """The GPU classes with a METRIC figure (LEGIBLE: with a legible value), in the order of the seed files."""
    part = pub[(pub["metric"] == metric) & pub["hw"].notna()]
    if legible:
        part = part[part["value"].notna()]
    return list(dict.fromkeys(part["hw"]))


def article_tokens_per_step(seeds_dir: str | Path | None = None) -> int:
    """Tokens per step the article's tokens/s assume: its recipe's --max_length (the internal checks
    speed.tokens_per_s_derivation recompute every printed fragment as max_length x 1000 / ms)."""
    return int(published_recipe(seeds_dir or DEFAULT_SEEDS_DIR)["max_length"])


@dataclass(frozen=True)
class ArticleEpoch:
    """The article's epoch: samples, global batch, samples / batch, optimizer steps (ceil), the published step count;
    with speed_facts, the step counts and training samples of our full-epoch runs at that batch."""

    samples: float | None
    batch: float | None
    samples_per_batch: float | None
    steps: int | None
    published_steps: float | None
    full_run_steps: tuple[int, ...] = ()
    full_run_train_samples: int | None = None


def epoch(pub: pd.DataFrame) -> ArticleEpoch:
    n, b = value(pub, None, "dataset_samples"), value(pub, None, "effective_batch_size")
    return ArticleEpoch(n, b, n / b if n and b else None, math.ceil(n / b) if n and b else None,
                        value(pub, None, "total_steps"))


# ------------------------------------------------------------------------------------------ the runs


def full_epoch(rec: RunRecord) -> bool:
    """A successful run that trained its whole schedule (not a cut run)."""
    return rec.ok and rec.complete and not rec.is_cut_run


def ms_per_step(rec: RunRecord) -> float | None:
    """Median steady ms per optimizer step (analysis.measure.steps.step_time)."""
    median = steps.step_time(rec).median
    return median * 1000 if median else None


def nearest(hw: str | None, pub: pd.DataFrame) -> tuple[str | None, str]:
    """The published class to compare HW with (the same class, else the one with the nearest dense BF16 peak), and
    how the comparison is labelled."""
    pub_hws = hardware_with(pub, "ms_per_step")
    if hw in pub_hws:
        return hw, "same hardware"
    spec = hardware.get(hw) if hw else None
    if hw is None:  # as a class without a spec
        return None, "no comparable published class"
    if not spec or not spec.bf16_dense_tflops or not pub_hws:
        return None, "no comparable published class"
    peak = spec.bf16_dense_tflops
    best = min(pub_hws, key=lambda h: (abs(math.log(peak / hardware.require(h).peak_tflops)),
                                       -hardware.require(h).peak_tflops))
    b = hardware.require(best)
    same = b.bf16_dense_tflops == peak
    return best, (f"cross-hardware: {short(hw)} measured vs {short(best)} published "
                  f"({'same' if same else 'nearest'} dense BF16 peak {b.bf16_dense_tflops:g} TFLOPS; "
                  f"memory {spec.memory_gb} vs {b.memory_gb} GB, bandwidth {spec.bandwidth_gbs} vs "
                  f"{b.bandwidth_gbs} GB/s)")


def short(hw: str) -> str:
    """A GPU class's name without the vendor ("H100 SXM5 80GB")."""
    spec = hardware.get(hw)
    return spec.name.replace("NVIDIA ", "") if spec else hw


@dataclass(frozen=True)
class SampleVsPublished:
    """The published ms per "step" of a class (one sample's forward-backward pass) and our ms per sample over it."""

    published_ms_per_sample: float | None
    ratio: float | None


def sample_vs_published(rec: RunRecord, pub: pd.DataFrame) -> SampleVsPublished:
    """The published ms per "step" of REC's class beside REC's ms per sample, and their ratio (measured /
    published): the same unit on both sides."""
    ms = value(pub, rec.hw, "ms_per_step") if rec.hw else None
    ours = steps.sample_ms(rec)
    return SampleVsPublished(ms, ours / ms if ms and ours else None)


# ----------------------------------------------------------------------------------- the comparisons


def seed_runs(picked: list[RunRecord]) -> list[RunRecord]:
    """The picked successful runs of the article's recipe that have a steady step time."""
    return [r for r in picked if r.ok and r.experiment == SEED_EXPERIMENT and steps.step_time(r).median]


def recipe_run(picked: list[RunRecord], ok_records: list[RunRecord]) -> RunRecord | None:
    """The run whose hardware-independent numbers (steps, samples, parameters) stand for the recipe: a full epoch,
    of the seed recipe first; else any successful run with a step time."""
    full = sorted([r for r in picked if full_epoch(r)], key=lambda r: r.experiment != SEED_EXPERIMENT)
    return full[0] if full else next(iter(ok_records), None)


def comparison_frame(picked: list[RunRecord], ok_records: list[RunRecord], pub: pd.DataFrame,
                     seeds_dir: str | Path | None = None, hw_order: list[str] | None = None) -> pd.DataFrame:
    """Each published figure beside ours, one row per quantity (COMPARISON_COLUMNS). PICKED: one run per (hw,
    experiment); OK_RECORDS: every successful run with a step time (a fallback for the recipe's numbers)."""
    order = hw_order or []
    rank: dict[str | None, int] = {h: i for i, h in enumerate(order)}
    tokens_per_step = article_tokens_per_step(seeds_dir)
    rows = []
    for r in sorted(seed_runs(picked), key=lambda r: rank.get(r.hw, len(order))):
        ref, relation = nearest(r.hw, pub)
        if ref is None:
            continue
        pub_ms = value(pub, ref, "ms_per_step")
        opt_ms, micro = ms_per_step(r), steps.micro_step_ms(r)
        if pub_ms is None or opt_ms is None:  # neither is: ref has a legible step time, r a steady one (seed_runs)
            continue
        base = {"our hw": r.hw, "our run": f"{r.experiment} · {r.run}", "labels": "; ".join(r.labels),
                "published hw": ref, "comparison": relation}
        rows.append({**base, "quantity": "ms per step: published step vs our micro-step (one forward-backward of one "
                     "sample)", "published": pub_ms, "published text": text(pub, ref, "ms_per_step"),
                     "measured": micro, "unit": "ms", "measured / published": micro / pub_ms if micro else None})
        rows.append({**base, "quantity": f"ms per step: published step vs our optimizer step ({r.samples_per_step} "
                     "samples)", "published": pub_ms, "published text": text(pub, ref, "ms_per_step"),
                     "measured": opt_ms, "unit": "ms", "measured / published": opt_ms / pub_ms})
        article_tok = tokens_per_step * 1000 / pub_ms
        tok = throughput.throughput(r).tokens_per_s
        rows.append({**base, "quantity": "tokens/s (published column illegible; the article's own formula "
                     f"{tokens_per_step} x 1000 / ms gives the value shown)", "published": article_tok,
                     "published text": text(pub, ref, "tokens_per_s"), "measured": tok, "unit": "tokens/s",
                     "measured / published": tok / article_tok if tok else None})
        rows.append({**base, "quantity": "peak memory", "published": value(pub, ref, "peak_mem_gib"),
                     "published text": text(pub, ref, "peak_mem_gib")
                     or "illegible (no character of the peak-memory column survives)",
                     "measured": r.peak_mem_gib, "unit": "GiB", "measured / published": None})
    # Hardware-independent numbers of the recipe.
    any_run = recipe_run(picked, ok_records)
    if any_run is not None:
        base = {"our hw": any_run.hw, "our run": f"{any_run.experiment} · {any_run.run}",
                "labels": "; ".join(any_run.labels), "published hw": "all",
                "comparison": "hardware-independent (the recipe)"}
        steps_pub = value(pub, None, "total_steps")
        if full_epoch(any_run):
            rows.append({**base, "quantity": "optimizer steps of one epoch", "published": steps_pub,
                         "published text": text(pub, None, "total_steps"), "measured": any_run.global_steps,
                         "unit": "steps",
                         "measured / published": (any_run.global_steps or 0) / steps_pub if steps_pub else None})
        n_samples = (any_run.train_samples or 0) + (any_run.val_samples or 0)
        pub_samples = value(pub, None, "dataset_samples")
        if n_samples:
            rows.append({**base, "quantity": "samples (train + eval split)", "published": pub_samples,
                         "published text": text(pub, None, "dataset_samples"), "measured": n_samples,
                         "unit": "samples", "measured / published": n_samples / pub_samples if pub_samples else None})
        if any_run.trainable_pct is not None:
            per_gpu = ", ".join(f"{h} '{text(pub, h, 'lora_adapter_share_pct')}'"
                                for h in hardware_with(pub, "lora_adapter_share_pct", legible=False))
            prose = text(pub, None, "lora_adapter_share_range_pct")
            rows.append({**base, "quantity": "LoRA trainable parameters, % of all (ms-swift model_parameter_info)",
                         "published": None,
                         "published text": f"per GPU row: {per_gpu}" + (f"; prose '{prose}'" if prose else ""),
                         "measured": any_run.trainable_pct, "unit": "%", "measured / published": None,
                         "note": f"{any_run.trainable_params / 1e6:.4f} M of {any_run.total_params / 1e6:.1f} M"
                         if any_run.trainable_params and any_run.total_params else None})
        if any_run.train_tokens_mean:
            rows.append({**base, "quantity": "tokens per sample (mean of the training set)",
                         "published": tokens_per_step,
                         "published text": f"implied by tokens/s = {tokens_per_step} x 1000 / ms",
                         "measured": any_run.train_tokens_mean, "unit": "tokens",
                         "measured / published": any_run.train_tokens_mean / tokens_per_step})
    return pd.DataFrame(rows, columns=COMPARISON_COLUMNS)


@dataclass(frozen=True)
class PublishedTokens:
    """One published class: its ms per step, the tokens/s that gives at max_length (x 1000 / ms), the printed text."""

    hw: str
    ms: float
    tokens_per_s: float
    printed: str | None


@dataclass(frozen=True)
class TokensPerSample:
    """Our runs' mean tokens per sample, the longest, max_length / that mean (how much the article's tokens/s
    overstate a one-sample step), the global batch and the tokens it holds (batch x mean)."""

    mean: float
    max: float
    overstatement: float
    batch: float | None
    per_global_batch: float | None


@dataclass(frozen=True)
class StepVsPublished:
    """A seed run's micro-step and optimizer step beside the nearest published step time."""

    hw: str
    labels: list[str]
    micro_ms: float
    opt_ms: float
    grad_accum: int | None
    published_hw: str
    relation: str
    published_ms: float
    micro_over_published: float
    opt_over_published: float


@dataclass(frozen=True)
class SpeedFacts:
    """The numbers behind "what the published speed figures mean": the article's tokens per step (max_length) and
    per published class what it gives; our tokens per sample; the article's epoch against our full runs; per picked
    seed run, its steps beside the nearest published step."""

    max_length: int
    published: list[PublishedTokens]
    tokens_per_sample: TokensPerSample | None
    epoch: ArticleEpoch | None
    steps: list[StepVsPublished]


def speed_facts(picked: list[RunRecord], ok_records: list[RunRecord], pub: pd.DataFrame,
                seeds_dir: str | Path | None = None) -> SpeedFacts:
    max_len = article_tokens_per_step(seeds_dir)
    ep = epoch(pub)
    published = []
    for h in hardware_with(pub, "ms_per_step"):
        ms = value(pub, h, "ms_per_step")
        if ms is None:  # never: hardware_with keeps legible values only
            continue
        published.append(PublishedTokens(h, ms, max_len * 1000 / ms, text(pub, h, "tokens_per_s")))
    per_sample = None
    means = [r.train_tokens_mean for r in ok_records if r.train_tokens_mean]
    if means:
        mean = sum(means) / len(means)
        per_sample = TokensPerSample(mean, max(r.train_tokens_max or 0 for r in ok_records), max_len / mean, ep.batch,
                                     ep.batch * mean if ep.batch else None)
    ours = None
    if ep.samples and ep.batch and ep.published_steps:
        full = [r for r in ok_records if full_epoch(r) and r.samples_per_step == ep.batch]
        ours = replace(ep, full_run_steps=tuple(sorted({r.global_steps for r in full if r.global_steps is not None})),
                       full_run_train_samples=full[0].train_samples if full else None)
    rows = []
    for r in picked:
        if not (r.ok and r.experiment == SEED_EXPERIMENT and steps.micro_step_ms(r)):
            continue
        ref, relation = nearest(r.hw, pub)
        if ref is None or r.hw is None:  # nearest gives a class only for a class
            continue
        p = value(pub, ref, "ms_per_step")
        micro, opt = steps.micro_step_ms(r), ms_per_step(r)
        if p is None or micro is None or opt is None:  # never: a legible ref, and r has a micro-step (checked above)
            continue
        rows.append(StepVsPublished(r.hw, list(r.labels), micro, opt, r.grad_accum, ref, relation, p, micro / p,
                                    opt / p))
    return SpeedFacts(max_len, published, per_sample, ours, rows)


@dataclass(frozen=True)
class StepPoint:
    """One bar of the published-vs-measured figure: the article's ms per step of a class, or a seed run's micro-step
    or optimizer step (a typed view: analysis.present.view_render renders it)."""

    name: str = col("bar", default="")
    ms: float | None = col("step", "ms", "{:,.1f}")
    kind: str = col("which step", default="")


def step_points(pub: pd.DataFrame, picked: list[RunRecord]) -> tuple[StepPoint, ...]:
    """The article's step time per class, then each picked seed run's micro-step and optimizer step."""
    out = [StepPoint(f"{h} published", value(pub, h, "ms_per_step"), "published step")
           for h in hardware_with(pub, "ms_per_step")]
    for r in seed_runs(picked):
        if steps.micro_step_ms(r):
            out += [StepPoint(f"{r.name} micro-step", steps.micro_step_ms(r), "our micro-step"),
                    StepPoint(f"{r.name} optimizer step", ms_per_step(r), "our optimizer step")]
    return tuple(out)


LINE_BREAK = "⏎"  # marks a line break of a seed's extracted text, where characters may have been lost


@dataclass(frozen=True)
class PublishedRow:
    """One figure the article publishes for a GPU class: its metric, the value (or, where illegible, the text as
    extracted, its line breaks as LINE_BREAK), unit, legibility and meaning (the seeds' published figures)."""

    id: str = col("id", default="")
    metric: str = col("metric", default="")
    value_text: str = col("value or extracted text", default="")
    unit: str | None = col("unit")
    legible: str | None = col("legible")
    meaning: str | None = col("meaning")


def published_rows(pub: pd.DataFrame, hw: str) -> tuple[PublishedRow, ...]:
    """PUB's figures for HW, in its order."""
    def shown(v, t) -> str:
        if v is not None and not (isinstance(v, float) and math.isnan(v)):
            return f"{v:g}"
        return f"illegible: '{None if t is None or t != t else str(t).replace(chr(10), LINE_BREAK)}'"

    return tuple(PublishedRow(id=r["id"], metric=r["metric"], value_text=shown(r["value"], r["text"]), unit=r["unit"],
                              legible=r["legible"], meaning=r["meaning"])
                 for r in pub[pub["hw"] == hw].to_dict("records"))
