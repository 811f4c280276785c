"""The time model held to published cross-GPU figures: one source's throughput on two GPU classes is a ratio the
model must predict from an H200 profile alone.

`anchor_checks(rec)` carries the reference run's step (time_model.yaml anchors.reference_run: the bs16 recipe,
padded rows and checkpointing on, as milabench's torchtune LoRA) to both classes of each pair and sets the predicted
time ratio beside the published throughput ratio. `derive_band` turns the errors found into the band every
predicted time carries (time_model.yaml `band`, which tests/test_time_model.py re-derives).
"""
from __future__ import annotations

import csv
from dataclasses import dataclass, fields
from pathlib import Path

from analysis.estimate import transfer
from analysis.estimate.anchor_transfer import AnchorPrediction
from analysis.parse.record import RunRecord
from experiments.base import hardware
from experiments.base.errors import InputError


@dataclass(frozen=True)
class AnchorCheck:
    """One published pair: FAST's throughput / SLOW's (published) beside the model's time on SLOW / time on FAST."""

    source: str
    pair: str
    fast_hw: str
    slow_hw: str
    published: float
    predicted: float
    comparable: bool  # the same kind of job (LoRA of a 7-8B model), not a proxy workload

    @property
    def error(self) -> float:
        """predicted / published - 1: above 0, the model puts the classes further apart than the source measured."""
        return self.predicted / self.published - 1


def anchors_file() -> Path:
    return hardware.DATA / str(transfer.model_constants()["anchors.file"])


@dataclass(frozen=True)
class Anchor:
    """One row of the anchors CSV: a source's published figure for one GPU class (batch: '' where none is given)."""

    source: str
    path: str
    model: str
    setting: str
    gpu: str
    batch: str
    metric: str
    value: float


ANCHOR_COLUMNS = [f.name for f in fields(Anchor)]


def read_anchors(path: str | Path | None = None) -> list[Anchor]:
    """The anchors CSV's rows (source, path, model, setting, gpu, batch, metric, value)."""
    path = Path(path) if path is not None else anchors_file()
    try:
        with path.open(encoding="utf-8", newline="") as fh:
            rows = list(csv.DictReader(fh))
    except OSError as exc:
        raise InputError(path, f"cannot read the anchors: {exc.strerror or exc}") from None
    out = []
    for i, row in enumerate(rows, start=2):
        missing = [c for c in ANCHOR_COLUMNS if row.get(c) is None]
        if missing:
            raise InputError(path, f"row {i}: no {', '.join(missing)}", i)
        try:
            value = float(row["value"])
        except (TypeError, ValueError):
            raise InputError(path, f"row {i}: value {row.get('value')!r} is not a number", i) from None
        out.append(Anchor(**{c: row[c] for c in ANCHOR_COLUMNS if c != "value"}, value=value))
    return out


def _value(rows: list[Anchor], source: str, gpu: str, batch: int | None) -> float:
    want = "" if batch is None else str(batch)
    hits = [r.value for r in rows if r.source == source and r.gpu == gpu and (r.batch or "") == want]
    if len(hits) != 1:
        raise InputError(anchors_file(), f"{len(hits)} rows of {source} {gpu} batch {batch or '-'} (want one)")
    return float(hits[0])


def reference_run(records: list[RunRecord]) -> RunRecord:
    """The committed run named in time_model.yaml anchors.reference_run (hw/experiment/run)."""
    name = str(transfer.model_constants()["anchors.reference_run"])
    for r in records:
        if f"{r.hw}/{r.experiment}/{r.run}" == name:
            return r
    raise InputError(transfer.TIME_MODEL_FILE, f"anchors.reference_run {name} is not among the runs read")


def anchor_checks(rec: RunRecord, rows: list[Anchor] | None = None) -> list[AnchorCheck]:
    """Each pair of time_model.yaml anchors.pairs: the published throughput ratio and REC's predicted time ratio."""
    rows = read_anchors() if rows is None else rows
    step = transfer.profile_step(rec)
    times: dict[str, float] = {}
    out = []
    for p in transfer.model_constants()["anchors.pairs"]:
        (fast_gpu, fast_batch), (slow_gpu, slow_batch) = p["fast"], p["slow"]
        fast_hw, slow_hw = p["classes"]
        for key in (fast_hw, slow_hw):
            if key not in times:
                times[key] = transfer.step_on(step, key).total_s
        published = _value(rows, p["source"], fast_gpu, fast_batch) / _value(rows, p["source"], slow_gpu, slow_batch)
        batches = f" (batch {fast_batch} / {slow_batch})" if fast_batch else ""
        out.append(AnchorCheck(source=p["source"], pair=f"{fast_gpu} / {slow_gpu}{batches}", fast_hw=fast_hw,
                               slow_hw=slow_hw, published=published, predicted=times[slow_hw] / times[fast_hw],
                               comparable=bool(p["comparable"])))
    return out


def derive_band(checks: list[AnchorCheck]) -> tuple[float, float]:
    """(low, high): the smallest and largest error over the checks, 0 included (a band holds its prediction)."""
    errors = [c.error for c in checks]
    return min([*errors, 0.0]), max([*errors, 0.0])


def derive_family_bands(checks: list[AnchorCheck], carried: list[AnchorPrediction],
                        band: tuple[float, float]) -> dict[str, tuple[float, float]]:
    """{family: (low, high)} over the published checks that involve a class of the family (CHECKS' pairs, CARRIED's
    predictions that count: a ratio involves both classes, an absolute figure only the class predicted, the run's own
    class being measured), never narrower than BAND (the cross-GPU band); a family without a check is absent."""
    errors: dict[str, list[float]] = {}
    for c in checks:
        for key in {c.fast_hw, c.slow_hw}:
            errors.setdefault(transfer.family(key), []).append(c.error)
    for p in carried:
        if p.counts:
            for key in ({p.src, p.dst} if p.basis == "ratio" else {p.dst}):
                errors.setdefault(transfer.family(key), []).append(float(p.band_error or 0.0))
    return {fam: (min([band[0], *errs]), max([band[1], *errs])) for fam, errs in sorted(errors.items())}
