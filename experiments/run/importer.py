"""`swiftbench import SWIFT_OUTPUT_DIR --hw a100 --experiment seed`: a user's own `swift sft` runs into results/.

`swift sft` writes `output/<model>/vN-<timestamp>/` with `logging.jsonl` and `args.json`; the tables read
`results/<hw>/<experiment>/<run>/` with the runner's `run.json` and `env.json` beside them. This copies each run
folder found under SWIFT_OUTPUT_DIR (its log and args, nothing else: checkpoints stay) into a new run folder and
writes a run.json and env.json that say it was imported, from where, and what nobody recorded (the GPU, the host,
the environment), so every table row of it says `imported`. It never overwrites: the run id ends in the first
digits of the log's sha256, so importing the same run twice finds it there and copies nothing, and the same log
under another hardware class or experiment is refused (one run counts once). It parses nothing either: `swiftbench
parse` and the tables read the copy as they read any run.

A copy is made under a `.partial` name and renamed into place whole, holding a lock on the results folder, so two
imports at once make one run folder, a run folder never lacks its log, and a full disk or a kill leaves at most a
`.partial` folder that the next import removes (the tables name it meanwhile). Copies keep their sources'
permission bits (a private log stays private).

A run counts as a recipes.yaml experiment only when its args.json is that recipe (model, tuner, batch, grad-accum,
max_length, LoRA rank, quantisation: recipes.recipe_mismatch), since the tables take the reference job (the epoch,
the seed recipe's speed per GPU) from those experiments. Any other run goes under a name of its own
(`--experiment myrun`), which the tables keep beside the matrix and never use for the reference job. Claims
experiments are refused: they are defined by the runner's launcher (memory cap, padding, cut), which a plain
`swift sft` run cannot show.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from experiments.base import hardware, runfiles, treewalk, userfiles
from experiments.base.datafiles import read_json_object
from experiments.base.errors import InputError
from experiments.base.runfolder import Args, Env, Run

LOG_NAME = runfiles.LOGGING
ARGS_NAMES = (runfiles.ARGS_JSON, runfiles.ARGS_JSON_1X)  # ms-swift 2.x+ / 1.x
SWIFT_RUN = re.compile(r"^v\d+-(\d{8}-\d{6})$")  # vN-YYYYMMDD-HHMMSS
UNKNOWN = ["gpu", "host", "environment (driver, CUDA, packages)", "tokens per step", "gpu samples (nvml.csv)",
           "profile"]
BLOCK = 1 << 20


def swift_runs(src: Path, results: Path | None = None) -> list[Path]:
    """The run folders under SRC (one holding logging.jsonl; a checkpoint's never), sorted, read through symlinks; a
    folder below SRC that cannot be listed is bad input (its runs would be left out unsaid). A RESULTS tree inside
    SRC is not searched: its run folders are this import's copies, not swift's runs."""
    if userfiles.present(src / LOG_NAME):
        return [src]
    found = treewalk.folders_with(src, (LOG_NAME,))
    if found.skipped:
        folder, why = found.skipped[0]
        raise InputError(folder, why)
    if results is None:
        return found.folders
    tree = results.resolve()
    return [f for f in found.folders if not f.resolve().is_relative_to(tree)]


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
    """The run folder under RESULTS that holds the log of this sha256 (by its run id's suffix), else None. A broken
    run.json there is bad input: whether it is this run cannot be told."""
    if not results.is_dir():
        return None
    for dest in sorted(results.glob(f"*/*/*-import-{sha[:8]}")):
        status = read_json_object(dest / runfiles.RUN_JSON) or {}
        if (status.get(Run.IMPORTED) or {}).get("log_sha256") == sha:
            return dest
    return None


def log_sha256(log: Path) -> str:
    """sha256 of a log, read in blocks from a regular file within its size cap (never the whole log in memory)."""
    h = hashlib.sha256()
    with userfiles.open_regular(log, runfiles.max_bytes(log)) as f:
        for block in iter(lambda: f.read(BLOCK), b""):
            h.update(block)
    return h.hexdigest()


def run_id(run: Path, sha: str) -> str:
    """<the swift folder's timestamp, else the log's mtime>-import-<8 hex digits of the log's sha256>."""
    m = SWIFT_RUN.match(run.name)
    stamp = m.group(1) if m else dt.datetime.fromtimestamp((run / LOG_NAME).stat().st_mtime).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-import-{sha[:8]}"


def _read_args(run: Path) -> dict | None:
    for name in ARGS_NAMES:
        if userfiles.present(run / name):
            args = userfiles.read_json(run / name, runfiles.max_bytes(name))
            if not isinstance(args, dict):
                raise InputError(run / name, "not a JSON object")
            return args
    return None


def checked(run: Path, hw: str, experiment: str, results: Path) -> tuple[str, dict, Path, bool]:
    """(log sha256, args, destination, already there) of one swift run folder, or bad input: an empty log, a
    destination holding another run, the log imported under another label, a label the run cannot have."""
    if userfiles.present(run / runfiles.RUN_JSON):
        raise InputError(run, "already a swiftbench run folder (it has run.json): copy it into a results tree, or "
                              "give its tree to `swiftbench tables`")
    log = run / LOG_NAME
    with userfiles.open_regular(log, runfiles.max_bytes(log)) as f:
        first = next((line for line in f if line.strip()), b"")
    if not first:
        raise InputError(log, "empty log file")
    try:
        is_object = isinstance(json.loads(first), dict)
    except (ValueError, RecursionError):
        is_object = False
    if not is_object:  # what the line holds is not quoted: the log may be a link to a file not meant to be shown
        raise InputError(log, "not an ms-swift log: its first line is no JSON object")
    sha = log_sha256(log)
    dest = results / hw / experiment / run_id(run, sha)
    if os.path.lexists(dest):
        if userfiles.present(dest / LOG_NAME) and log_sha256(dest / LOG_NAME) == sha:
            return sha, {}, dest, True
        raise InputError(dest, "exists and holds another run (nothing was overwritten)")
    other = already_imported(results, sha)
    if other == dest:  # another import renamed it into place since lexists() above (these checks run unlocked first)
        return sha, {}, dest, True
    if other is not None:
        raise InputError(log, f"already imported as {other.parent.parent.name}/{other.parent.name} "
                              f"({other}): one run counts once, under one label")
    args = _read_args(run)
    check_label(run, args, hw, experiment)
    return sha, args or {}, dest, False


@contextlib.contextmanager
def tree_lock(results: Path) -> Iterator[None]:
    """RESULTS locked against other imports (flock on the folder itself: no file of ours in the tree), so that two
    imports of one log at once make one run folder, and a `.partial` folder found while holding it is stale."""
    try:
        results.mkdir(parents=True, exist_ok=True)
        fd = os.open(results, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise InputError(results, f"cannot be used as the results folder ({userfiles.reason(exc)})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _copy(src: Path, dst: Path, sha: str | None = None) -> None:
    """SRC's bytes into DST (a new file, SRC's permission bits), fsynced; with SHA, bad input unless the bytes copied
    are the log that was checked (it changed meanwhile)."""
    h = hashlib.sha256()
    with userfiles.open_regular(src, runfiles.max_bytes(src)) as f, open(dst, "xb") as out:
        for block in iter(lambda: f.read(BLOCK), b""):
            h.update(block)
            out.write(block)
        out.flush()
        os.fsync(out.fileno())
        os.chmod(dst, os.stat(src).st_mode & 0o777)
    if sha is not None and h.hexdigest() != sha:
        raise InputError(src, "changed while it was imported: nothing was imported, try again")


def _write_json(path: Path, data: dict) -> None:
    with open(path, "x", encoding="utf-8") as f:
        f.write(json.dumps(data, indent=2) + "\n")
        f.flush()
        os.fsync(f.fileno())


def remove_stale_partials(folder: Path) -> None:
    """The `.<run id>.partial` folders an import killed midway left in FOLDER (call with tree_lock held: no import
    is filling one)."""
    for stale in folder.glob(f".*{runfiles.PARTIAL}") if folder.is_dir() else []:
        shutil.rmtree(stale, ignore_errors=True)


def import_run(run: Path, hw: str, experiment: str, results: Path) -> tuple[Path, bool]:
    """Copy one swift run folder into results/<hw>/<experiment>/<id>/ (call with tree_lock held); (folder, False) when
    it is already there. The copy is filled under a `.partial` name and renamed into place whole, so a run folder
    never exists without its log; a failure (a full disk) removes the partial folder."""
    sha, args, dest, there = checked(run, hw, experiment, results)
    if there:
        return dest, False
    files = [LOG_NAME] + [n for n in ARGS_NAMES if userfiles.present(run / n)]
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    imported = {"source": str(run.resolve()), "files": files, "at": now, "log_sha256": sha}
    status = {Run.STATUS: "ok", Run.HW: hw, Run.EXPERIMENT: experiment, Run.IMPORTED: imported, Run.UNKNOWN: UNKNOWN,
              Run.NOTES: ["imported from a plain `swift sft` output folder by `swiftbench import`: the hardware class "
                        "is what the user said; status ok says nothing about how the run ended (the log does)"]}
    version = args.get(Args.SWIFT_VERSION) if isinstance(args, dict) else None  # ms-swift 3+ writes it into args.json
    env = {Env.HW: hw, Env.IMPORTED: True, Env.UNKNOWN: UNKNOWN, Env.PACKAGES: {"ms-swift": version} if version else {}}
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_partials(dest.parent)
        tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=runfiles.PARTIAL, dir=dest.parent))
    except OSError as exc:
        raise InputError(dest.parent, f"cannot be written ({userfiles.reason(exc)})") from None
    try:
        os.chmod(tmp, 0o777 & ~_umask())
        for name in files:
            _copy(run / name, tmp / name, sha if name == LOG_NAME else None)
        _write_json(tmp / runfiles.ENV_JSON, env)
        _write_json(tmp / runfiles.RUN_JSON, status)
        os.rename(tmp, dest)  # whole or not at all
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError):
            raise InputError(exc.filename or dest, f"cannot be written ({userfiles.reason(exc)}): nothing was "
                                                   "imported") from None
        raise
    return dest, True


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def import_output(src: str | Path, hw: str, experiment: str,
                  results: str | Path = "results") -> list[tuple[Path, Path, bool]]:
    """Every swift run folder under SRC into RESULTS: [(source, run folder, newly copied)]. Safe beside another import
    into the same tree (tree_lock)."""
    src, results = Path(src), Path(results)
    hw = hardware.user_key(hw)
    if os.path.lexists(results) and not results.is_dir():
        raise InputError(results, "--results names something that is not a folder")
    if not src.is_dir():
        raise InputError(src, "no such folder")
    if userfiles.present(src / runfiles.RUN_JSON):
        raise InputError(src, "already a swiftbench run folder (it has run.json): copy it into a results tree, or "
                              "give its tree to `swiftbench tables`")
    runs = swift_runs(src, results)
    if not runs:
        raise InputError(src, f"no {LOG_NAME} in this folder or below it (swift sft writes "
                              "output/<model>/vN-<timestamp>/logging.jsonl)")
    first_of: dict[str, Path] = {}
    for run in runs:  # every run checked before any is copied: a refusal leaves the results tree as it was
        sha = checked(run, hw, experiment, results)[0]
        if sha in first_of:  # the second would be refused as already imported after the first was copied
            raise InputError(run / LOG_NAME, f"the same log as {first_of[sha] / LOG_NAME}: one run counts once; "
                                             "import one of the two folders")
        first_of[sha] = run
    with tree_lock(results):
        return [(run, *import_run(run, hw, experiment, results)) for run in runs]


def register(sub) -> None:
    p = sub.add_parser("import", help="copy plain `swift sft` output folders into a results tree, labelled imported",
                       description="Copy the runs of a `swift sft` output folder (vN-<timestamp>/logging.jsonl + "
                                   "args.json) into RESULTS/<hw>/<experiment>/<run>/ with a run.json and env.json that "
                                   "say they were imported; never overwrites.")
    p.add_argument("src", metavar="SWIFT_OUTPUT_DIR", help="swift's output folder (or one vN-... run folder in it)")
    p.add_argument("--hw", required=True, help="the GPU class the runs were made on (data/hardware.yaml)")
    p.add_argument("--experiment", required=True,
                   help="a recipes.yaml experiment (seed, bs16, ...) when args.json is exactly its recipe, else a name "
                        "of your own (myrun): kept beside the matrix, never the reference job")
    p.add_argument("--results", default="results", help="the results tree (default results)")
    p.set_defaults(func=run)


def run(args) -> int:
    for src, dest, new in import_output(args.src, args.hw, args.experiment, args.results):
        print(f"{'imported' if new else 'already there'}: {src} -> {dest}")
    return 0

