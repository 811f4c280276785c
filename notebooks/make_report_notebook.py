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
    ("markdown", """# swiftbench report: LoRA fine-tuning with ms-swift across GPUs

[Hardware](#Hardware) · [Speed](#Speed) · [Run-to-run spread](#Run-to-run-spread) · [Memory](#Memory) ·
[Convergence](#Convergence) · [Utilisation](#Utilisation) · [Published vs measured](#Published-vs-measured) ·
[Consistency of the published figures](#Consistency-of-the-published-figures) ·
[Claims](#Claims) · [Estimates vs measurements](#Estimates-vs-measurements) ·
[Files](#Files)"""),
    ("code", """# Parameters (papermill overrides these; swiftbench report passes absolute paths)
# hardware: comma-separated classes to give a section, empty for a10,rtx4090,a100,h100,h200 (and any with runs)
# seeds_dir: empty for the suite's seeds/
results_dir = "results"
baseline = "a10"
hardware = ""
seeds_dir = ""
out_dir = "report"
""", ["parameters"]),
    ("code", """from analysis.present.report import Report

rep = Report(results_dir, baseline=baseline, hardware_list=hardware, seeds_dir=seeds_dir or None, out_dir=out_dir)
rep.header()"""),
    ("markdown", """## Hardware

Per GPU class: what ran (recipe and environment), what was measured and what was not. A class without runs
shows the article's numbers only, labelled *published, not measured here*."""),
    ("code", "rep.hardware_sections()"),
    ("markdown", """## Speed

Speedup table and milliseconds per optimizer step / tokens per second with 95 % intervals."""),
    ("code", "rep.speed_section()"),
    ("markdown", "## Run-to-run spread"),
    ("code", "rep.spread_section()"),
    ("markdown", "## Memory"),
    ("code", "rep.memory_section()"),
    ("markdown", "## Convergence"),
    ("code", "rep.convergence_section()"),
    ("markdown", """## Utilisation

GPU utilisation, power and SM clock over time, MFU, energy per 1,000 trained tokens, and a GPU-bound /
host-bound verdict per run with its evidence."""),
    ("code", "rep.utilisation_section()"),
    ("markdown", "## Published vs measured"),
    ("code", "rep.published_section()"),
    ("markdown", "## Consistency of the published figures"),
    ("code", "rep.checks_section()"),
    ("markdown", """## Claims

Each claim of the seed documents with its verdict — holds / does not hold / inconclusive / cannot be tested here /
not run yet — and the numbers and run folders behind it; then every claim the documents make, with pointers to the
sections that hold relevant data."""),
    ("code", "rep.claims_section()"),
    ("markdown", "## Estimates vs measurements"),
    ("code", "rep.estimates_section()"),
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
