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


def test_issue_18_table_is_what_the_claims_audit_says():
    """README's same-host 20x rows (issue 18) are the audit's own figures on the committed runs: a change to an
    experiment's definition that drops its run from the claims (a launcher option changed) fails here."""
    import json

    out = subprocess.run([sys.executable, "-m", "analysis.cli", "claims", str(ROOT / "results"), "--json"],
                         capture_output=True, text=True, check=True, cwd=ROOT).stdout
    by_id = {r["id"]: r for r in json.loads(out)}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    expected = {"fast-best-20x": "does not hold", "fast-compile-noliger-20x": "does not hold",
                "fast-nocudnn-20x": "inconclusive", "fast-flex-20x": "inconclusive",
                "fast-compile-nocudnn-20x": "holds"}
    for cid, verdict in expected.items():
        row = by_id[cid]
        n = row["numbers"]
        assert row["verdict"] == verdict and n["hosts"] == "same host", row
        assert f"**{n['ratio']:.2f}x** ({n['ratio_low']:.2f}-{n['ratio_high']:.2f})" in readme, cid
        assert f"| {n['tokens_per_s']:,.0f} |" in readme and f"| {n['seed_tokens_per_s']:,.1f} |" in readme, cid
