"""README's results tables are exactly what `swiftbench tables results --compact` prints from results/."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_tables_match_committed_results():
    out = subprocess.run([sys.executable, "-m", "analysis.cli", "tables", str(ROOT / "results"), "--compact"],
                         capture_output=True, text=True, check=True, cwd=ROOT).stdout
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for line in out.splitlines():
        if line.startswith("|"):
            assert line in readme, f"README.md is stale; regenerate its tables: {line}"


def test_readme_names_the_test_command_ci_runs():
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    assert "`make test`" in (ROOT / "README.md").read_text(encoding="utf-8")
