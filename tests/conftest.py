import json
import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SHARED = Path(__file__).resolve().parents[1].parent / "shared"


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture
def results_tree(tmp_path) -> Path:
    """results/<hw>/<experiment>/<run>/ built from fixtures, with env.json as the runner writes it."""
    root = tmp_path / "results"
    for hw, exp, src in [("h200", "bs16", "h200_bs16"), ("h200", "seed", "v4_full"), ("a100", "seed", "v3_full"),
                         ("h100", "seed", "v4_killed")]:
        run = root / hw / exp / "run-20261130-000000"
        shutil.copytree(FIXTURES / src, run)
        (run / "env.json").write_text(json.dumps({"hw": hw, "gpu_name": hw.upper(), "packages": {"ms-swift": "4.6.0"}}))
        (run / "run.json").write_text(json.dumps({"status": "ok", "experiment": exp, "dummy_weights": True,
                                                  "offline_data": True}))
    return root


# The peak RSS of a child Python process, as it measures itself: VmHWM of /proc/self/status is its own address space's
# high-water mark. getrusage's ru_maxrss (the child's RUSAGE_SELF, or wait4's) is not: Linux carries the high-water
# mark of the address space exec replaced into it, so a child started from a large pytest process (subprocess
# starts it with vfork) reports the parent's peak. Prepend to `python -c` code; OWN_PEAK_MIB() gives MiB.
OWN_PEAK = ("def OWN_PEAK_MIB():\n"
            "    for line in open('/proc/self/status'):\n"
            "        if line.startswith('VmHWM:'):\n"
            "            return int(line.split()[1]) / 1024\n"
            "    import resource\n"
            "    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n")
