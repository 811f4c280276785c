"""The committed runs' files the time estimator reads, copied into data/committed-runs/ so that an installed wheel
answers `swiftbench plan` as the checkout does (the planner reads ./results where it exists, else this copy:
experiments.base.paths.default_results).

Per run folder of every hardware class (results/<hw>/<experiment>/<run>/), only the files the parser reads for the
estimator (FILES); the heavy side files (GPM counters, NVML samples, tfevents, images, the notebook, the console
output) stay in results/. The copies are byte for byte, so the copy is the same tree to the parser. `make
estimator-data` writes it (python -m analysis.parse.packaged); tests/test_packaged_runs.py fails when it differs from
results/, so it is committed with the results it summarises.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from experiments.base import hardware, paths, runfiles

# What analysis.parse reads of a run folder for the planner: the runner's records, ms-swift's arguments and log, the
# launcher's token counts, profile, options and schedule, and the model's shapes.
FILES = (runfiles.ARGS_JSON, runfiles.RUN_JSON, runfiles.ENV_JSON, runfiles.LOGGING, runfiles.PROFILE_JSON,
         runfiles.TOKENS, runfiles.MODEL_CONFIG, runfiles.LAUNCH_JSON, runfiles.SCHEDULE)
DEST = paths.PACKAGED_RUNS


def wanted(results: str | Path) -> dict[str, Path]:
    """{path relative to the copy's root: source file} of every FILES file in a run folder <hw>/<experiment>/<run>/
    of RESULTS whose <hw> is a known class (results/calls, findings and resolved hold no runs)."""
    root = Path(results)
    out = {}
    for hw_dir in sorted(p for p in root.iterdir() if p.is_dir() and hardware.get(p.name)):
        for name in FILES:
            for f in sorted(hw_dir.glob(f"*/*/{name}")):
                if f.is_file():
                    out[f.relative_to(root).as_posix()] = f
    return dict(sorted(out.items()))


def differences(results: str | Path, dest: str | Path = DEST) -> list[str]:
    """What DEST lacks, has beyond, or holds otherwise than RESULTS' wanted files (empty: the copy is current)."""
    want = wanted(results)
    dest = Path(dest)
    have = {f.relative_to(dest).as_posix(): f for f in dest.rglob("*") if f.is_file()} if dest.is_dir() else {}
    out = [f"missing {rel}" for rel in want if rel not in have]
    out += [f"not in {results}: {rel}" for rel in have if rel not in want]
    out += [f"differs: {rel}" for rel in want if rel in have and have[rel].read_bytes() != want[rel].read_bytes()]
    return out


def write(results: str | Path, dest: str | Path = DEST) -> int:
    """Replace DEST with RESULTS' wanted files (written beside it, then swapped in); returns the bytes copied."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".runs-", dir=dest.parent))
    total = 0
    for rel, src in wanted(results).items():
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, tmp / rel)
        total += src.stat().st_size
    if dest.exists():
        shutil.rmtree(dest)
    tmp.rename(dest)
    return total


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m analysis.parse.packaged", description=__doc__.splitlines()[0])
    p.add_argument("results", nargs="?", default="results")
    p.add_argument("--dest", default=str(DEST))
    args = p.parse_args(argv)
    n = write(args.results, args.dest)
    print(f"{args.dest}: {len(wanted(args.results))} files, {n / 2**20:.1f} MiB from {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
