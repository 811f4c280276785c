"""The committed results tree as the tests read it: a copy of the files git tracks under results/, made once per test
process. A run a user imports into (or leaves in) the live results/ then changes no test's figures: the answer, the
README block and the findings tables are checked against what was committed with them (issue 43)."""
import atexit
import shutil
import subprocess
import tempfile
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LIVE = REPO / "results"


def _tracked() -> list[str] | None:
    """results/'s tracked files (paths relative to the repository), or None outside a git checkout."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--", "results"], cwd=REPO, capture_output=True, check=True,
                             timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    names = [n for n in out.decode().split("\0") if n]
    return names or None


@cache
def committed_results() -> Path:
    """The copy's results/ folder (its parent is a temporary folder of its own, removed when the process ends)."""
    base = Path(tempfile.mkdtemp(prefix="swiftbench-committed-"))
    atexit.register(shutil.rmtree, base, True)
    names = _tracked()
    if names is None:  # an exported tree (no git): its results/ is what was shipped
        shutil.copytree(LIVE, base / "results", symlinks=True)
    else:
        for name in names:
            src = REPO / name
            if not src.is_file():  # tracked but deleted in the work tree: the tests see it gone, as a user would
                continue
            dest = base / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest)
    return base / "results"


RESULTS = committed_results()
