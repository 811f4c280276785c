"""Writes notebooks/report.ipynb (the papermill report notebook) from the cells below.

Kept as code so the notebook's source is reviewable in diffs; re-run after editing:
`python notebooks/make_report_notebook.py [OUT]` (default OUT: notebooks/report.ipynb). The cells stay thin: each
calls one method of `analysis.present.report.Report`, which returns the section's HTML and writes its CSV and PNG
files. `python -m analysis.present.report.build` (swiftbench report, make report) executes it and renders
report/index.html.
"""
import sys
from pathlib import Path

import nbformat as nbf

CELLS = [
    ("markdown", """# swiftbench: which GPU for LoRA fine-tuning with ms-swift

[The answer](#The-answer) · [Claims](#Claims) · [Speed](#Speed) · [Memory](#Memory) · [Convergence](#Convergence) ·
[Published vs measured](#Published-vs-measured) · [Consistency](#Consistency-of-the-published-figures) ·
[Utilisation](#Utilisation) · [Run-to-run spread](#Run-to-run-spread) ·
[Planner](#Estimates-vs-measurements) · [Hardware and environment](#Hardware-and-environment) · [Files](#Files)"""),
    ("code", """# Parameters (papermill overrides these; swiftbench report passes absolute paths)
# hardware: comma-separated classes to give a section, empty for a10,rtx4090,a100,h100,h200 (and any with runs)
# seeds_dir: empty for the suite's seeds/; prices: empty for data/prices.yaml (dated list prices)
results_dir = "results"
baseline = "a10"
hardware = ""
seeds_dir = ""
out_dir = "report"
prices = ""
""", ["parameters"]),
    ("code", """from analysis.present.report import Report

rep = Report(results_dir, baseline=baseline, hardware_list=hardware, seeds_dir=seeds_dir or None, out_dir=out_dir,
             prices=prices or None)
rep.header()"""),
    ("markdown", "## The answer"),
    ("code", "rep.answer_section()"),
    ("code", "rep.definitions()"),
    ("markdown", "## Claims"),
    ("code", "rep.claims_section()"),
    ("markdown", "## Speed"),
    ("code", "rep.speed_section()"),
    ("markdown", "## Memory"),
    ("code", "rep.memory_section()"),
    ("markdown", "## Convergence"),
    ("code", "rep.convergence_section()"),
    ("markdown", "## Published vs measured"),
    ("code", "rep.published_section()"),
    ("markdown", "## Consistency of the published figures"),
    ("code", "rep.checks_section()"),
    ("markdown", "## Utilisation"),
    ("code", "rep.utilisation_section()"),
    ("markdown", "## Run-to-run spread"),
    ("code", "rep.spread_section()"),
    ("markdown", "## Estimates vs measurements"),
    ("code", "rep.estimates_section()"),
    ("markdown", "## Hardware and environment"),
    ("code", "rep.hardware_sections()"),
    ("markdown", "## Files"),
    ("code", "rep.files_section()"),
]


def build() -> nbf.NotebookNode:
    nb = nbf.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    for kind, src, *tags in CELLS:
        cell = nbf.v4.new_markdown_cell(src) if kind == "markdown" else nbf.v4.new_code_cell(src)
        if tags:
            cell.metadata["tags"] = tags[0]
        nb.cells.append(cell)
    # Stable cell ids keep the generated file identical from one run to the next (reviewable diffs).
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:02d}"
    return nb


NOTEBOOK = Path(__file__).resolve().parent / "report.ipynb"


def write(path: str | Path = NOTEBOOK) -> Path:
    """Write the notebook to PATH (default: notebooks/report.ipynb); returns the path."""
    path = Path(path)
    nbf.write(build(), path)
    return path


if __name__ == "__main__":
    print(write(sys.argv[1] if len(sys.argv) > 1 else NOTEBOOK))
