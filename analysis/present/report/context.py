"""The data every report section shares, loaded once: run records, tables, published figures, seeds, utilisation,
the output folder and the files written into it.
"""
from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from analysis.core.seed_rows import SeedFile
from analysis.core.seeds import DEFAULT_SEEDS_DIR, published_figures
from analysis.estimate import prices as price_tables
from analysis.judge.answer import run_tables as RT
from analysis.judge.answer.classes import Answer, answer
from analysis.judge.answer.published import short
from analysis.judge.audit.seed_checks import load_seeds
from analysis.measure import steps
from analysis.measure import utilisation_view as UV
from analysis.parse.record import RunRecord
from analysis.parse.results import Roots, collect, is_matrix, latest_per_group
from analysis.present import plots, view_render
from analysis.present.tables import convergence_table
from experiments.base import hardware
from experiments.base.hardware import DEFAULT_BASELINE


def hardware_list(value: str | list[str] | tuple[str, ...] | None) -> list[str]:
    """'a10, h200' or ['a10', 'h200'] -> ['a10', 'h200'] (empty entries dropped)."""
    items = value.split(",") if isinstance(value, str) else list(value or [])
    return [h.strip() for h in items if h and h.strip()]


@dataclass
class Context:
    """Inputs of the report (results, seeds, baseline, hardware classes) and what is derived from them once."""

    results_dir: Path
    seeds_dir: Path
    out: Path
    baseline: str
    hardware: list[str]                 # the classes that get a section: the wanted ones, then any with runs
    records: list[RunRecord]            # every run of the results tree (the claims runs too)
    matrix: list[RunRecord]             # the runs of the hardware matrix's experiments
    picked: list[RunRecord]             # one matrix run per (hw, experiment): the tables' rows
    speed: pd.DataFrame                 # the speed table of the picked runs (speed_rows as a frame)
    conv: pd.DataFrame                  # analysis.present.tables.convergence_table of the picked runs
    pub: pd.DataFrame                   # the seeds' published figures
    seeds: dict[str, SeedFile]          # every seed file by name
    util: pd.DataFrame                  # the utilisation table of the matrix runs (util_rows as a frame)
    prices: Path | None = None          # the price table for costs (data/prices.yaml unless given)
    speed_rows: tuple = ()              # the speed table's typed rows (analysis.judge.answer.run_tables.SpeedRow)
    util_rows: tuple = ()               # the utilisation table's (analysis.measure.utilisation_view)
    files: list[str] = field(default_factory=list)  # written into OUT, in order
    _cache: dict = field(default_factory=dict, repr=False)  # stage outputs two sections share, made once

    @classmethod
    def load(cls, results_dir: str | Path, baseline: str = DEFAULT_BASELINE,
             hardware_wanted: str | list[str] = "",
             seeds_dir: str | Path | None = None, out_dir: str | Path = "report",
             prices: str | Path | None = None) -> Context:
        baseline = hardware.user_key(baseline)
        wanted = [hardware.user_key(h) for h in hardware_list(hardware_wanted)] or hardware.shown()
        for h in wanted:
            hardware.require(h)
        results_dir = Path(results_dir) if isinstance(results_dir, (str, Path)) else Roots(map(Path, results_dir))
        seeds_dir = Path(seeds_dir) if seeds_dir else DEFAULT_SEEDS_DIR
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        records = collect(results_dir)
        matrix = [r for r in records if is_matrix(r)]  # claims runs: the Claims section
        picked = latest_per_group(matrix)
        plots.setup()
        pub = published_figures(seeds_dir)
        speed_rows = RT.speed_rows(picked, pub, baseline)
        util_rows = UV.utilisation_views(matrix)
        return cls(
            results_dir=results_dir, seeds_dir=seeds_dir, out=out, baseline=baseline,
            hardware=wanted + sorted({r.hw for r in matrix if r.hw and r.hw not in wanted}),
            records=records, matrix=matrix, picked=picked,
            speed=view_render.to_frame(speed_rows, RT.SpeedRow), speed_rows=speed_rows,
            conv=convergence_table(results_dir, seeds_dir, records=picked),
            pub=pub, seeds=load_seeds(seeds_dir), util=view_render.to_frame(util_rows, UV.UtilisationView),
            util_rows=util_rows,
            prices=Path(prices) if prices else price_tables.DEFAULT_PRICES)

    # ------------------------------------------------------------------------------------ the runs

    @property
    def picked_ids(self) -> set[tuple]:
        return {(r.hw, r.experiment, r.run) for r in self.picked}

    def in_tables(self, rec: RunRecord) -> bool:
        return (rec.hw, rec.experiment, rec.run) in self.picked_ids

    def ok_records(self) -> list[RunRecord]:
        """Successful matrix runs with a steady step time."""
        return [r for r in self.matrix if r.ok and steps.step_time(r).median]

    def hw_rank(self, hw) -> int:
        return self.hardware.index(hw) if hw in self.hardware else len(self.hardware)

    def labels_of(self, records: list[RunRecord]) -> str:
        return plots.labels_text([(r.name, r.labels) for r in records])

    @property
    def published_hw(self) -> set[str]:
        return set(self.pub["hw"].dropna())

    def capacities(self) -> list[tuple[float, str]]:
        """(GiB, 'A10 / GeForce RTX 4090: 24 GB = 22.4 GiB') per capacity of the hardware table, in the planner's
        unit (analysis.estimate.planner.capacity_gib): the answer's capacities and the memory axis are one number."""
        from analysis.estimate.planner import capacity_gib

        groups: dict[float, list[str]] = {}
        marketed: dict[float, float] = {}
        for key, spec in hardware.table().items():
            if spec.memory_gb:
                gib = round(capacity_gib(spec), 2)
                groups.setdefault(gib, []).append(short(key))
                marketed[gib] = float(spec.memory_gb)
        return [(gib, f"{' / '.join(names)}: {marketed[gib]:g} GB = {gib:.1f} GiB")
                for gib, names in sorted(groups.items())]

    def verdicts(self) -> pd.DataFrame:
        """The claims audit's table over every run of the results tree (the answer and the Claims section)."""
        if "verdicts" not in self._cache:
            from analysis.judge.audit.verdicts import claims_table

            # ms-swift, imported to read its argument list, logs to stderr and tqdm warns on import: the report page
            # would show both as error boxes
            with contextlib.redirect_stderr(io.StringIO()):
                self._cache["verdicts"] = claims_table(self.results_dir, seeds_dir=self.seeds_dir,
                                                       records=self.records)
        return self._cache["verdicts"]

    def answer(self) -> Answer:
        """The recommendation and each class's recipe (analysis.judge.answer.classes.answer), made once."""
        if "answer" not in self._cache:
            self._cache["answer"] = answer(self.records, self.prices)
        return self._cache["answer"]

    def estimates(self) -> pd.DataFrame:
        """The planner's estimates beside the measurements (the answer's planner error, the planner section)."""
        if "estimates" not in self._cache:
            from analysis.estimate.validate import estimates_vs_measurements

            self._cache["estimates"] = estimates_vs_measurements(self.results_dir)
        return self._cache["estimates"]

    # ---------------------------------------------------------------------------------- the files

    def _wrote(self, name: str) -> None:
        if name not in self.files:
            self.files.append(name)

    def write_csv(self, df: pd.DataFrame, name: str) -> Path:
        path = self.out / name
        df.to_csv(path, index=False)
        self._wrote(name)
        return path

    def write_figure(self, fig, name: str) -> Path:
        path = plots.save(fig, self.out / name)
        self._wrote(name)
        return path
