"""Building the report: input checks, papermill execution of the report notebook, nbconvert rendering, and the
`swiftbench report` command.

    python -m analysis.present.report.build --results results --baseline a10 --out report    (= make report)

executes notebooks/report.ipynb with papermill (parameters: results dir, baseline hardware, hardware list,
seeds dir, output dir) into OUT/report.ipynb and renders it with nbconvert into OUT/index.html, code hidden,
no script and no network resource. The notebook writes its figures as PNG files and its tables as CSV
files into OUT; the HTML loads the figures by relative path. Bad input (no such results folder, no run in
it, an unknown hardware key, a broken seed file) is one line on stderr and exit code 2. A run folder that cannot be
read (a broken run.json, a bad log) or lies outside the results layout is left out of the page with one line on
stderr, and the exit code is 3. A section that fails while the notebook runs fails the report: `report: failed:
<cell, exception>` on stderr, exit code 1, and no page.
"""
from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from analysis.core.seeds import DEFAULT_SEEDS_DIR, published_figures
from analysis.estimate import prices as price_tables
from analysis.parse.results import Scan, roots_of, run_folders, scan
from analysis.present.report.context import hardware_list
from experiments.base import boundary, hardware, paths, userfiles
from experiments.base.argparsing import first_paragraph
from experiments.base.errors import SKIPPED_EXIT, InputError

NOTEBOOK = paths.NOTEBOOKS / "report.ipynb"
HTML_NAME = "index.html"
NOTEBOOK_NAME = "report.ipynb"
# nbconvert's lab template without its script tags (require.js, MathJax, mermaid come from a CDN): the page
# is static, loads nothing from the network and works from a file:// URL.
_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
"""


@dataclass(frozen=True)
class Built:
    """A built report: its page, the executed notebook, the seconds it took and the results folders it read."""

    html: Path
    notebook: Path
    seconds: float
    scan: Scan


class ReportFailed(RuntimeError):
    """The notebook failed while executing (not bad input)."""


def check_inputs(results: Path | list[Path], baseline: str, hardware_wanted: list[str], seeds: Path, out: Path,
                 notebook: Path = NOTEBOOK) -> Scan:
    """Raise InputError for anything that would make the report meaningless (checked before the kernel); the scan of
    the result root(s) says which run folders the report leaves out (analysis.parse.results.scan)."""
    hardware.require(baseline)
    for h in hardware_wanted:
        hardware.require(h)
    if out.exists() and not out.is_dir():
        raise InputError(out, "output path exists and is not a folder")
    if not notebook.is_file():
        raise InputError(notebook, "report notebook missing (python notebooks/make_report_notebook.py)")
    if not seeds.is_dir():
        raise InputError(seeds, "no such seeds folder")
    if not run_folders(results):
        raise InputError(str(results), "no run folders (run.json or logging.jsonl) below this folder")
    found = scan(results)
    published_figures(seeds)
    return found


def render_html(nb_path: Path, html_path: Path) -> Path:
    """nbconvert HTML with the code hidden and no script or network resource."""
    import nbformat
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    nb = nbformat.read(nb_path, as_version=4)
    nb.metadata["title"] = "swiftbench report"
    exporter = HTMLExporter(template_name="lab", extra_loaders=[DictLoader({"swiftbench.html.j2": _TEMPLATE})],
                            template_file="swiftbench.html.j2")
    exporter.exclude_input = True
    exporter.exclude_input_prompt = True
    exporter.exclude_output_prompt = True
    body, _ = exporter.from_notebook_node(nb)
    userfiles.write_atomic(html_path, body)  # a full disk leaves the last report whole
    return html_path


def build(results: str | Path | Sequence[str | Path] = "results", out: str | Path = "report",
          baseline: str = hardware.DEFAULT_BASELINE,
          hardware_wanted: str | list[str] = "", seeds: str | Path | None = None, timeout_s: int = 600,
          notebook: str | Path = NOTEBOOK, prices: str | Path | None = None) -> Built:
    """Execute the report notebook and render it; returns the paths and seconds taken. InputError for bad input,
    ReportFailed when a cell fails (nothing is rendered then)."""
    t0 = time.monotonic()
    roots = [Path(r).resolve() for r in roots_of(results)]  # several roots: one merged tree
    results = roots[0] if len(roots) == 1 else roots
    out, notebook = Path(out).resolve(), Path(notebook).resolve()
    seeds = Path(seeds).resolve() if seeds else DEFAULT_SEEDS_DIR
    hw = [hardware.user_key(h) for h in hardware_list(hardware_wanted)]
    baseline = hardware.user_key(baseline)
    found = check_inputs(results, baseline, hw, seeds, out, notebook)
    if prices:
        prices = Path(prices).resolve()
        price_tables.read_prices(prices)  # a bad price table is bad input: one line, exit 2, before the kernel
    missing = [m for m in ("papermill", "nbconvert", "nbformat", "ipykernel") if importlib.util.find_spec(m) is None]
    if missing:  # a plain `pip install .` has the tables, not the notebook stack
        raise InputError(None, f"the report needs {', '.join(missing)}: "
                               "pip install 'swiftbench[report]' (or make venv)")
    import papermill as pm

    out.mkdir(parents=True, exist_ok=True)
    nb_out = out / NOTEBOOK_NAME
    logging.getLogger("papermill").setLevel(logging.WARNING)
    root = str(paths.ROOT)
    entries = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join([root] + [p for p in entries if p != root])
    os.environ.setdefault("MPLBACKEND", "Agg")
    try:
        pm.execute_notebook(str(notebook), str(nb_out), cwd=root, progress_bar=False, log_output=False,
                            execution_timeout=timeout_s, extra_arguments=["--IPKernelApp.log_level=CRITICAL"],
                            parameters={"results_dir": [str(r) for r in roots] if len(roots) > 1 else str(results),
                                        "baseline": baseline,
                                        "hardware": ",".join(hw), "seeds_dir": str(seeds), "out_dir": str(out),
                                        "prices": str(prices) if prices else ""})
    except pm.PapermillExecutionError as exc:
        raise ReportFailed(f"notebook cell {exc.exec_count} failed: {exc.ename}: {exc.evalue} (see {nb_out})") from None
    html_path = render_html(nb_out, out / HTML_NAME)
    return Built(html_path, nb_out, time.monotonic() - t0, found)


# ----------------------------------------------------------------------------------------------- CLI


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", nargs="+", default=["results"],
                        help="results/<hw>/<experiment>/<run>/ (default results); several roots are merged")
    parser.add_argument("--baseline", default=hardware.DEFAULT_BASELINE,
                        help=f"hardware the speedup is relative to (default {hardware.DEFAULT_BASELINE})")
    parser.add_argument("--hardware", default="", help="comma-separated hardware classes to give a section "
                        f"(default {','.join(hardware.shown())}; classes with runs are always added)")
    parser.add_argument("--seeds", default=None, help="folder of published figures (default: the suite's seeds/)")
    parser.add_argument("--out", default="report", help="output folder (default report)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds one notebook cell may take")
    parser.add_argument("--prices", default=None, metavar="FILE",
                        help="price table for the cost columns (YAML 'h100: 2.5' per GPU-hour, optionally "
                             "'currency: EUR'; default: data/prices.yaml, dated list prices)")


def register(sub) -> None:
    """`swiftbench report` (for analysis.cli's SUBCOMMAND_MODULES)."""
    p = sub.add_parser("report", help="executed report notebook -> OUT/index.html")
    _add_arguments(p)
    p.set_defaults(func=run)


def run(args) -> int:
    """Entry of `swiftbench report`; InputError propagates to the CLI (one line, exit 2)."""
    try:
        info = build(args.results, args.out, args.baseline, args.hardware, args.seeds, args.timeout,
                     prices=args.prices)
    except ReportFailed as exc:
        print(f"report: failed: {exc}", file=sys.stderr)
        return 1
    for line in info.scan.lines():  # folders left out and copies counted once; exit 3 if any was left out
        print(f"report: {line}", file=sys.stderr)
    print(f"{info.html} ({info.seconds:.1f} s)")
    return SKIPPED_EXIT if info.scan.skipped else 0


class _OneLineParser(argparse.ArgumentParser):
    """Bad arguments as one line and exit code 2, like swiftbench's own parser."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def main(argv: list[str] | None = None) -> int:
    parser = _OneLineParser(prog="report", description=first_paragraph(__doc__))
    _add_arguments(parser)
    args = parser.parse_args(argv)
    return boundary.guarded("report", lambda: run(args), boundary.inputs_of(args))


if __name__ == "__main__":
    sys.exit(main())
