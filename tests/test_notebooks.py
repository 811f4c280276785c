"""The committed notebooks are what their generator scripts write: regenerate each into a temp file and compare."""
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]

NOTEBOOKS = [("experiments/run/make_notebook.py", "experiments/run/sft.ipynb"),
             ("notebooks/make_report_notebook.py", "notebooks/report.ipynb")]


def _cells(nb) -> list[tuple]:
    return [(c.cell_type, c.source, tuple(c.metadata.get("tags", []))) for c in nb.cells]


@pytest.mark.parametrize("script,committed", NOTEBOOKS)
def test_committed_notebook_is_what_its_script_writes(tmp_path, script, committed):
    out = tmp_path / Path(committed).name
    p = subprocess.run([sys.executable, str(ROOT / script), str(out)], capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.strip() == str(out)
    built = nbformat.read(out, as_version=4)
    nb = nbformat.read(ROOT / committed, as_version=4)
    assert _cells(nb) == _cells(built), f"{committed} is stale: run python {script}"
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")
    assert sum("parameters" in c.metadata.get("tags", []) for c in nb.cells) == 1


def test_experiment_notebook_parses_in_another_process():
    """The experiment notebook shows metrics through `swiftbench parse` in a subprocess, never by importing an
    analysis stage (the experiments layer stays below them)."""
    nb = nbformat.read(ROOT / "experiments" / "run" / "sft.ipynb", as_version=4)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert '"-m", "analysis.cli", "parse", str(run_path)' in code
    assert "from analysis" not in code and "import analysis" not in code
    assert "summarise" not in code
