"""README.md is a newcomer's page (issue 31): short, no host ids, no device-call diary, its answer block the tool's
own output; the dated findings that moved out of it are checked against the tools here."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from committed import committed_results

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
FINDINGS = ROOT / "results" / "findings"
HOST_ID = re.compile(r"\b[0-9a-f]{12}\b")
BEGIN, END = "<!-- answer:begin -->", "<!-- answer:end -->"


def _cli(*args: str) -> str:
    return subprocess.run([sys.executable, "-m", "analysis.cli", *args], capture_output=True, text=True, check=True,
                          cwd=ROOT).stdout


@pytest.fixture(scope="module")
def compact() -> str:
    return _cli("tables", str(committed_results()), "--compact")


def _readme() -> str:
    return README.read_text(encoding="utf-8")


def _answer_block(text: str) -> list[str]:
    assert text.count(BEGIN) == 1 and text.count(END) == 1, "README.md needs one answer block"
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n").splitlines()


def _outside_answer(text: str) -> str:
    head, rest = text.split(BEGIN, 1)
    return head + rest.split(END, 1)[1]


def test_readme_answer_block_is_the_tools_answer():
    """The block holds exactly what `swiftbench tables results --answer` prints: the recommendation sentence, the
    same-host recipe rows and the recommended recipe per GPU class, nothing typed by hand."""
    printed = _cli("tables", str(committed_results()), "--answer").strip("\n").splitlines()
    assert printed and _answer_block(_readme()) == printed, \
        "README.md's answer block is stale: paste `python -m analysis.cli tables results --answer`"
    assert printed[0].startswith("For this job") and "x sooner" in printed[0]


def test_matrix_findings_tables_match_committed_results(compact):
    text = (FINDINGS / "matrix_h200_2026-12-02.md").read_text(encoding="utf-8")
    for line in compact.splitlines():
        if line.startswith("|"):
            assert line in text, f"results/findings/matrix_h200_2026-12-02.md is stale; regenerate its tables: {line}"


def test_readme_names_the_test_command_ci_runs():
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    assert "`make test`" in _readme()


def test_readme_is_short():
    assert len(_readme().splitlines()) <= 250


def test_readme_has_no_device_call_diary():
    hits = re.findall(r"\bcall \d+", _readme(), flags=re.IGNORECASE)
    assert not hits, f"device calls belong in results/calls/ and results/findings/, not README.md: {hits}"


def test_readme_has_no_host_id_outside_the_answer_block():
    hits = HOST_ID.findall(_outside_answer(_readme()))
    assert not hits, f"host ids belong in results/findings/, not README.md: {hits}"


def test_readme_has_no_host_id():
    assert not HOST_ID.findall(_readme())


LINK = re.compile(r"\]\(([^)\s#]+\.md)(?:#[^)]*)?\)")


def _links(path: Path) -> set[Path]:
    return {(path.parent / target).resolve() for target in LINK.findall(path.read_text(encoding="utf-8"))
            if "://" not in target}


def test_every_linked_page_exists():
    pages = [README, *sorted((ROOT / "docs").glob("*.md")), *sorted(FINDINGS.glob("*.md"))]
    missing = [f"{p.relative_to(ROOT)} -> {t}" for p in pages for t in _links(p) if not t.exists()]
    assert not missing, missing


def test_every_guide_and_finding_is_linked_from_readme_or_the_index():
    linked = _links(README) | _links(ROOT / "docs" / "index.md")
    pages = [*sorted((ROOT / "docs").glob("*.md")), *sorted(FINDINGS.glob("*.md"))]
    orphans = [str(p.relative_to(ROOT)) for p in pages if p.resolve() not in linked and p.name != "index.md"]
    assert not orphans, f"not linked from README.md or docs/index.md: {orphans}"


def test_findings_are_named_theme_hw_date():
    for p in FINDINGS.glob("*.md"):
        assert re.fullmatch(r"[a-z0-9-]+_[a-z0-9]+_\d{4}-\d\d-\d\d\.md", p.name), p.name


def test_every_device_call_folder_has_its_provenance():
    calls = sorted(p for p in (ROOT / "results" / "calls").iterdir() if p.is_dir())
    assert calls and all((p / "README.md").is_file() for p in calls), [p.name for p in calls
                                                                         if not (p / "README.md").is_file()]


def test_issue_18_table_is_what_the_claims_audit_says():
    """The same-host 20x rows (issue 18) in their findings file are the audit's own figures on the committed runs: a
    change to an experiment's definition that drops its run from the claims (a launcher option changed) fails here."""
    by_id = {r["id"]: r for r in json.loads(_cli("claims", str(committed_results()), "--json"))}
    text = (FINDINGS / "claims-20x_h200_2026-12-01.md").read_text(encoding="utf-8")
    expected = {"fast-best-20x": "does not hold", "fast-compile-noliger-20x": "does not hold",
                "fast-nocudnn-20x": "inconclusive", "fast-flex-20x": "inconclusive",
                "fast-compile-nocudnn-20x": "holds"}
    for cid, verdict in expected.items():
        row = by_id[cid]
        n = row["numbers"]
        assert row["verdict"] == verdict and n["hosts"] == "same host", row
        assert f"**{n['ratio']:.2f}x** ({n['ratio_low']:.2f}-{n['ratio_high']:.2f})" in text, cid
        assert f"| {n['tokens_per_s']:,.0f} |" in text and f"| {n['seed_tokens_per_s']:,.1f} |" in text, cid


def test_findings_quote_the_audits_headline_ratio():
    """The 26x line of the 20x finding is the audit's same-host figure for the compiled recipe, not a number typed
    by hand."""
    n = {r["id"]: r for r in json.loads(_cli("claims", str(committed_results()), "--json"))}[
        "fast-compile-nocudnn-20x"]["numbers"]
    text = (FINDINGS / "claims-20x_h200_2026-12-01.md").read_text(encoding="utf-8")
    assert f"**{n['ratio']:.2f}x** ({n['ratio_low']:.2f}-{n['ratio_high']:.2f})" in text
