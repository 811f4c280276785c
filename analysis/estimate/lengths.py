"""A job's sample lengths and what its micro-batches hold: padded rows (batch x the batch's longest sample) or packed
rows (padding-free: the batch's samples end to end), as the planner's memory and time need them.

Lengths come from a file (one token count per line, or a JSON list), or from a mean and a longest sample: then a
gamma distribution with that mean and the recipe's data's spread (coefficient of variation, planner.yaml data),
cut at the longest. Micro-batches are drawn as the trainer's random sampler draws them, with a fixed seed, over the
epoch's samples; the figures are means and maxima over those draws (docs/planner.md).
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from analysis.estimate.constants import Constants
from analysis.estimate.workload import constants
from experiments.base.errors import InputError

SEED = 0
SYNTHETIC_SAMPLES = 4096  # lengths drawn where only a mean and a longest sample are known
EPOCH_DRAWS = 4           # shuffled epochs drawn for the batch statistics


@dataclass(frozen=True)
class Lengths:
    """Sample lengths in tokens (capped at max_length, as ms-swift truncates), with where they came from."""

    values: tuple[int, ...]
    source: str

    @property
    def longest(self) -> int:
        return max(self.values)

    @property
    def mean(self) -> float:
        return float(np.mean(self.values))


@dataclass(frozen=True)
class BatchStats:
    """What a micro-batch of B samples holds, over the drawn epochs: mean tokens the GPU processes (padded: B x the
    batch's longest; packed: the sum), the largest micro-batch (the memory peak's), and the mean of the sum over a
    micro-batch's rows of row length squared (attention's work)."""

    batch: int
    padding_free: bool
    mean_tokens: float
    max_tokens: int
    mean_row_sq: float


def read_lengths(path: str | Path, max_length: int | None = None) -> Lengths:
    """A file of sample lengths: one positive whole number per line, or a JSON list of them."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(path, f"cannot read the lengths file: {getattr(exc, 'strerror', None) or exc}") from None
    values: list[int] = []
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            raw = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise InputError(path, f"not a JSON list of lengths: {exc.msg}", exc.lineno) from None
        items = list(enumerate(raw if isinstance(raw, list) else [raw], start=1))
    else:
        items = [(i, line.strip()) for i, line in enumerate(text.splitlines(), start=1) if line.strip()]
    for line, item in items:
        try:
            value = int(item) if not isinstance(item, bool) else -1
        except (TypeError, ValueError):
            value = -1
        if value <= 0 or (isinstance(item, float) and not item.is_integer()):
            raise InputError(path, f"length {item!r} is not a positive whole number of tokens", line)
        values.append(value)
    if not values:
        raise InputError(path, "the lengths file holds no length")
    if max_length:
        values = [min(v, max_length) for v in values]
    return Lengths(tuple(values), f"{path} ({len(values)} samples)")


def synthetic(mean: float, longest: int, cv: float, source: str) -> Lengths:
    """Lengths with MEAN and at most LONGEST: a gamma distribution of coefficient of variation CV, cut at LONGEST,
    and LONGEST itself once (the job has a sample that long)."""
    if mean <= 0 or longest < mean:
        raise InputError(None, f"a mean length of {mean:g} and a longest sample of {longest} do not go together")
    rng = random.Random(SEED)  # a sample of lengths, not a range: drawn here, not in measure/stats.py
    shape = 1 / cv ** 2
    draws = np.clip(np.rint([rng.gammavariate(shape, mean / shape) for _ in range(SYNTHETIC_SAMPLES)]), 1,
                    longest).astype(int)
    # the cut lowers the mean: scale the draws back to it (bounded by the longest), then keep one longest sample
    for _ in range(8):
        draws = np.clip(np.rint(draws * mean / draws.mean()), 1, longest).astype(int)
    values = [*draws.tolist()[:-1], longest]
    return Lengths(tuple(int(v) for v in values), source)


def batch_stats(lengths: Lengths, batch: int, padding_free: bool, samples: int | None = None) -> BatchStats:
    """Micro-batches of BATCH samples drawn over SAMPLES samples (default: every length once) for EPOCH_DRAWS
    shuffled epochs; the last, short micro-batch of an epoch counts too."""
    values = list(lengths.values)
    n = samples or len(values)
    rng = random.Random(SEED)  # the sampler's order, not a range: drawn here, not in measure/stats.py
    tokens, sq, biggest = [], [], 0
    for _ in range(EPOCH_DRAWS):
        if n <= len(values):
            order = np.asarray(rng.sample(values, n))
        else:  # more samples than lengths: the lengths drawn again
            order = np.asarray(rng.choices(values, k=n))
        for i in range(0, n, batch):
            rows = order[i:i + batch]
            if padding_free:
                t = int(rows.sum())
                tokens.append(t)
                sq.append(float(t) ** 2)
            else:
                t = int(rows.max()) * len(rows)
                tokens.append(t)
                sq.append(len(rows) * float(rows.max()) ** 2)
            biggest = max(biggest, t)
    if not padding_free:  # the batch that holds the longest sample is padded to it
        biggest = max(biggest, lengths.longest * batch)
    return BatchStats(batch=batch, padding_free=padding_free, mean_tokens=float(np.mean(tokens)),
                      max_tokens=int(biggest), mean_row_sq=float(np.mean(sq)))


def job_lengths(max_length: int, seq_len: int | None = None, mean_len: float | None = None,
                lengths: Lengths | str | Path | None = None, c: Constants | None = None) -> Lengths:
    """The job's sample lengths: a lengths file (or Lengths) where given; a mean and a longest sample (--mean-len,
    --seq-len, the longest defaulting to max_length); --seq-len alone: every sample that long; nothing: the recipe's
    data (planner.yaml data: its mean, longest and spread)."""
    c = c or constants()
    if isinstance(lengths, Lengths):
        return Lengths(tuple(min(v, max_length) for v in lengths.values), lengths.source)
    if lengths is not None:
        return read_lengths(lengths, max_length)
    cv = float(c["data.recipe_length_cv"])
    if mean_len is not None:
        longest = min(seq_len or max_length, max_length)
        return synthetic(float(mean_len), longest, cv, f"mean {mean_len:g} tokens (--mean-len), longest {longest}"
                         f"{' (--seq-len)' if seq_len else ' (= --max-length)'}, spread of the recipe's data")
    if seq_len is not None:
        return Lengths((min(seq_len, max_length),), f"every sample {min(seq_len, max_length)} tokens (--seq-len; "
                                                    "pass --mean-len or --lengths for your data's spread)")
    longest = min(int(c["data.recipe_longest_sample"]), max_length)
    mean = min(float(c["data.recipe_mean_sample"]), longest)
    return synthetic(mean, longest, cv, f"the recipe's data (mean {mean:g}, longest {longest} tokens: planner.yaml "
                                        "data; pass --lengths FILE or --mean-len/--seq-len for yours)")
