"""The report page as the notebook sees it: `Report`, one method per section, each returning the section's HTML.

The notebook's cells stay thin (notebooks/make_report_notebook.py): `Report(...)` loads the shared context once
(context.py) and each method renders one section module with it, writing that section's CSV and PNG files.
"""
from __future__ import annotations

from pathlib import Path

from analysis.present.report import (
    answer,
    checks,
    claims,
    convergence,
    estimates,
    files,
    header,
    section_hardware,
    section_memory,
    section_published,
    section_utilisation,
    speed,
    spread,
)
from analysis.present.report.context import Context
from experiments.base import hardware


def _html(text: str):
    from IPython.display import HTML

    return HTML(text)


class Report:
    """Everything the notebook shows, one method per section; each returns an IPython HTML object and writes its
    tables (CSV) and figures (PNG) into the output folder."""

    def __init__(self, results_dir: str | Path, baseline: str = hardware.DEFAULT_BASELINE,
                 hardware_list: str | list = "",
                 seeds_dir: str | Path | None = None, out_dir: str | Path = "report", prices: str | Path | None = None):
        self.ctx = Context.load(results_dir, baseline, hardware_list, seeds_dir, out_dir, prices)

    def header(self):
        return _html(header.header(self.ctx))

    def answer_section(self):
        return _html(answer.answer_section(self.ctx))

    def definitions(self):
        return _html(header.definitions(self.ctx))

    def hardware_sections(self):
        return _html(section_hardware.hardware_sections(self.ctx))

    def speed_section(self):
        return _html(speed.speed_section(self.ctx))

    def spread_section(self):
        return _html(spread.spread_section(self.ctx))

    def memory_section(self):
        return _html(section_memory.memory_section(self.ctx))

    def convergence_section(self):
        return _html(convergence.convergence_section(self.ctx))

    def utilisation_section(self):
        return _html(section_utilisation.utilisation_section(self.ctx))

    def published_section(self):
        return _html(section_published.published_section(self.ctx))

    def checks_section(self):
        return _html(checks.checks_section(self.ctx))

    def claims_section(self):
        return _html(claims.claims_section(self.ctx))

    def estimates_section(self):
        return _html(estimates.estimates_section(self.ctx))

    def files_section(self):
        return _html(files.files_section(self.ctx))
