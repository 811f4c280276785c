"""The report: an executed notebook whose first screen answers which GPU class (measured, predicted, published) and
which recipe; then claims, details, published vs measured, utilisation, the planner's validation and the environment.

    python -m analysis.present.report.build --results results --baseline a10 --out report    (swiftbench report)

Modules, one concern each: context (the data every section shares, loaded once), html (tables, escaping, the CSS of
report.css), one module per section (header, answer, claims, speed, memory, convergence, published, checks,
utilisation, spread, estimates, hardware, files), page (`Report`, the notebook's facade) and build (papermill +
nbconvert + CLI).
`Report` is imported lazily, so `swiftbench report --help` loads no section.
"""
from __future__ import annotations


def __getattr__(name: str):
    if name == "Report":
        from analysis.present.report.page import Report

        return Report
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
