"""`swiftbench import SWIFT_OUTPUT_DIR --hw a100 --experiment seed`: a user's own `swift sft` runs into results/.

`swift sft` writes `output/<model>/vN-<timestamp>/` with `logging.jsonl` and `args.json`; the tables read
`results/<hw>/<experiment>/<run>/` with the runner's `run.json` and `env.json` beside them. This copies each run
folder found under SWIFT_OUTPUT_DIR (its log and args, nothing else: checkpoints stay) into a new run folder and
writes a run.json and env.json that say it was imported, from where, and what nobody recorded (the GPU, the host,
the environment), so every table row of it says `imported`. It never overwrites: the run id ends in the first
digits of the log's sha256, so importing the same run twice finds it there and copies nothing, and the same log
under another hardware class or experiment is refused (one run counts once). It parses nothing either: `swiftbench
parse` and the tables read the copy as they read any run.

A run counts as a recipes.yaml experiment only when its args.json is that recipe (model, tuner, batch, grad-accum,
max_length, LoRA rank, quantisation: recipes.recipe_mismatch), since the tables take the reference job (the epoch,
the seed recipe's speed per GPU) from those experiments. Any other run goes under a name of its own
(`--experiment myrun`), which the tables keep beside the matrix and never use for the reference job. Claims
experiments are refused: they are defined by the runner's launcher (memory cap, padding, cut), which a plain
`swift sft` run cannot show.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import shutil
from pathlib import Path

from experiments.base import hardware, runfiles
from experiments.base.errors import InputError

LOG_NAME = runfiles.LOGGING
ARGS_NAMES = (runfiles.ARGS_JSON, runfiles.ARGS_JSON_1X)  # ms-swift 2.x+ / 1.x
SWIFT_RUN = re.compile(r"^v\d+-(\d{8}-\d{6})$")  # vN-YYYYMMDD-HHMMSS
UNKNOWN = ["gpu", "host", "environment (driver, CUDA, packages)", "tokens per step", "gpu samples (nvml.csv)",
           "profile"]


def swift_runs(src: Path) -> list[Path]:
    """The run folders under SRC (one holding logging.jsonl; a checkpoint's never), sorted."""
    if (src / LOG_NAME).is_file():
        return [src]
    return sorted(p.parent for p in src.rglob(LOG_NAME)
                  if not any(part.startswith("checkpoint-") for part in p.parent.relative_to(src).parts))


OWN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def check_label(run: Path, args: dict | None, hw: str, experiment: str) -> None:
    """Bad input unless EXPERIMENT may label this run: a recipes.yaml experiment whose recipe ARGS is, or a name of
    the user's own (a folder name that is neither a claims experiment nor a hardware class)."""
    from experiments.recipes import catalog, recipes

    if experiment in recipes.experiments(matrix_only=False):
        if args is None:
            raise InputError(run, f"no args.json: nothing shows this run is the {experiment!r} recipe; import it under "
                                  "a name of its own (--experiment myrun)")
        differ = recipes.recipe_mismatch(experiment, args)
        if differ:
            raise InputError(run, f"not the {experiment!r} recipe ({'; '.join(differ)}), so it cannot stand for it "
                                  "in the tables: import it under a name of its own (--experiment myrun)")
        return
    if catalog.experiment(experiment) is not None:
        raise InputError(None, f"{experiment!r} is a claims experiment (a memory cap, padding or cut set by the "
                               "runner, which a plain swift sft run cannot show): import it under a name of its own")
    if not OWN_NAME.match(experiment) or hardware.get(experiment.lower()) is not None:
        raise InputError(None, f"experiment name {experiment!r}: use letters, digits, '.', '_' or '-' (not a "
                               "hardware class), e.g. --experiment myrun")


def already_imported(results: Path, sha: str) -> Path | None:
    """The run folder under RESULTS that holds the log of this sha256 (by its run id's suffix), else None."""
    for dest in sorted(results.glob(f"*/*/*-import-{sha[:8]}")):
        status = json.loads((dest / runfiles.RUN_JSON).read_text(encoding="utf-8")) \
            if (dest / runfiles.RUN_JSON).is_file() else {}
        if (status.get("imported") or {}).get("log_sha256") == sha:
            return dest
    return None


def run_id(run: Path, log_bytes: bytes) -> str:
    """<the swift folder's timestamp, else the log's mtime>-import-<8 hex digits of the log's sha256>."""
    m = SWIFT_RUN.match(run.name)
    stamp = m.group(1) if m else dt.datetime.fromtimestamp((run / LOG_NAME).stat().st_mtime).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-import-{hashlib.sha256(log_bytes).hexdigest()[:8]}"


def checked(run: Path, hw: str, experiment: str, results: Path) -> tuple[bytes, dict, Path, bool]:
    """(log bytes, args, destination, already there) of one swift run folder, or bad input: an empty log, a
    destination holding another run, the log imported under another label, a label the run cannot have."""
    log_bytes = (run / LOG_NAME).read_bytes()
    if not log_bytes.strip():
        raise InputError(run / LOG_NAME, "empty log file")
    dest = results / hw / experiment / run_id(run, log_bytes)
    if dest.exists():
        if (dest / LOG_NAME).is_file() and (dest / LOG_NAME).read_bytes() == log_bytes:
            return log_bytes, {}, dest, True
        raise InputError(dest, "exists and holds another run (nothing was overwritten)")
    sha = hashlib.sha256(log_bytes).hexdigest()
    other = already_imported(results, sha)
    if other is not None:
        raise InputError(run / LOG_NAME, f"already imported as {other.parent.parent.name}/{other.parent.name} "
                                         f"({other}): one run counts once, under one label")
    args = None
    for name in ARGS_NAMES:
        if (run / name).is_file():
            try:
                args = json.loads((run / name).read_text(encoding="utf-8"))
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise InputError(run / name, f"not valid JSON: {exc}") from None
            if not isinstance(args, dict):
                raise InputError(run / name, "not a JSON object")
            break
    check_label(run, args, hw, experiment)
    return log_bytes, args or {}, dest, False


def import_run(run: Path, hw: str, experiment: str, results: Path) -> tuple[Path, bool]:
    """Copy one swift run folder into results/<hw>/<experiment>/<id>/; (folder, False) when it is already there."""
    log_bytes, args, dest, there = checked(run, hw, experiment, results)
    if there:
        return dest, False
    sha = hashlib.sha256(log_bytes).hexdigest()
    files = [LOG_NAME] + [n for n in ARGS_NAMES if (run / n).is_file()]
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    imported = {"source": str(run.resolve()), "files": files, "at": now,
                "log_sha256": sha}
    status = {"status": "ok", "hw": hw, "experiment": experiment, "imported": imported, "unknown": UNKNOWN,
              "notes": ["imported from a plain `swift sft` output folder by `swiftbench import`: the hardware class "
                        "is what the user said; status ok says nothing about how the run ended (the log does)"]}
    version = args.get("swift_version") if isinstance(args, dict) else None  # ms-swift 3+ writes it into args.json
    env = {"hw": hw, "imported": True, "unknown": UNKNOWN, "packages": {"ms-swift": version} if version else {}}
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.partial")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    for name in files:
        shutil.copyfile(run / name, tmp / name)
    (tmp / runfiles.ENV_JSON).write_text(json.dumps(env, indent=2) + "\n", encoding="utf-8")
    (tmp / runfiles.RUN_JSON).write_text(json.dumps(status, indent=2) + "\n", encoding="utf-8")
    os.rename(tmp, dest)  # whole or not at all; a folder that appeared meanwhile is not replaced (rename fails)
    return dest, True


def import_output(src: str | Path, hw: str, experiment: str,
                  results: str | Path = "results") -> list[tuple[Path, Path, bool]]:
    """Every swift run folder under SRC into RESULTS: [(source, run folder, newly copied)]."""
    src, results = Path(src), Path(results)
    hardware.require(hw)
    if not src.is_dir():
        raise InputError(src, "no such folder")
    if (src / runfiles.RUN_JSON).is_file():
        raise InputError(src, "already a swiftbench run folder (it has run.json): copy it into a results tree, or "
                              "give its tree to `swiftbench tables`")
    runs = swift_runs(src)
    if not runs:
        raise InputError(src, f"no {LOG_NAME} in this folder or below it (swift sft writes "
                              "output/<model>/vN-<timestamp>/logging.jsonl)")
    for run in runs:  # every run checked before any is copied: a refusal leaves the results tree as it was
        checked(run, hw, experiment, results)
    return [(run, *import_run(run, hw, experiment, results)) for run in runs]


def register(sub) -> None:
    p = sub.add_parser("import", help="copy plain `swift sft` output folders into a results tree, labelled imported",
                       description="Copy the runs of a `swift sft` output folder (vN-<timestamp>/logging.jsonl + "
                                   "args.json) into RESULTS/<hw>/<experiment>/<run>/ with a run.json and env.json that "
                                   "say they were imported; never overwrites.")
    p.add_argument("src", metavar="SWIFT_OUTPUT_DIR", help="swift's output folder (or one vN-... run folder in it)")
    p.add_argument("--hw", required=True, help="the GPU class the runs were made on (analysis/data/hardware.yaml)")
    p.add_argument("--experiment", required=True,
                   help="a recipes.yaml experiment (seed, bs16, ...) when args.json is exactly its recipe, else a name "
                        "of your own (myrun): kept beside the matrix, never the reference job")
    p.add_argument("--results", default="results", help="the results tree (default results)")
    p.set_defaults(func=run)


def run(args) -> int:
    for src, dest, new in import_output(args.src, args.hw, args.experiment, args.results):
        print(f"{'imported' if new else 'already there'}: {src} -> {dest}")
    return 0

