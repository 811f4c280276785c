"""The results tree `results/<hw>/<experiment>/<run>/` as run records: one RunRecord per run folder, with labels.

The runner writes beside ms-swift's files: `env.json` (what ran where) and `run.json` (status: ok, failed
and why, cut or full, dummy weights or real, forced hardware label). This module is the only reader of them.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.parse import shared, sidefiles
from analysis.parse.logs import LOG_NAME, find_runs, gc_paused, read_log, resumes_of
from analysis.parse.record import RunRecord, record_from_log
from analysis.parse.runfile_rows import EnvJson, RunJson
from experiments.base import hardware, runfiles, treewalk, userfiles
from experiments.base.datafiles import read_json_object
from experiments.base.errors import InputError
from experiments.base.runfiles import digest
from experiments.base.runfolder import Env, GpuCheck, Launcher, Run, RunKey

ENV_NAME = runfiles.ENV_JSON
STATUS_NAME = runfiles.RUN_JSON
UNLABELLED = "unlabelled (no run.json or env.json: not made by the runner)"
PARTIAL = runfiles.PARTIAL  # the suffix of a run folder `swiftbench import` is still filling (.<run id>.partial)
SWIFT_RUN = re.compile(r"^v\d+-\d{8}-\d{6}$")  # the folder `swift sft` makes under output/<model>/


def read_env(run_dir: str | Path) -> EnvJson:
    """env.json of a run folder checked against its schema ({} when absent), with `hw` filled from the path when
    env.json lacks it: the parser's reader (experiments.base.runfiles.read_env_raw is the unchecked look)."""
    run_dir = Path(run_dir)
    env: EnvJson = shared.fields(runfiles.check(run_dir / ENV_NAME, read_json_object(run_dir / ENV_NAME) or {}))
    if Env.HW not in env:
        ident = identity(run_dir)
        if ident.hw:
            env = {**env, Env.HW: ident.hw}
    return env


def read_status(run_dir: str | Path) -> RunJson:
    """run.json of a run folder ({} when absent); a field of the wrong type or out of range is bad input."""
    return shared.fields(runfiles.check(Path(run_dir) / STATUS_NAME,
                                        read_json_object(Path(run_dir) / STATUS_NAME) or {}))


@dataclass(frozen=True)
class Identity:
    """hw / experiment / run id of a run folder as its path names them (None outside the layout)."""

    hw: str | None
    experiment: str | None
    run: str


def identity(run_dir: str | Path) -> Identity:
    """hw / experiment / run id from the `results/<hw>/<experiment>/<run>` layout, as the path names it (a run
    folder linked in from elsewhere is where the link is)."""
    run_dir = Path(os.path.abspath(run_dir))
    parts = run_dir.parts
    hw = parts[-3] if len(parts) >= 3 and hardware.get(parts[-3]) else None
    return Identity(hw, parts[-2] if hw else None, run_dir.name)


class Roots(tuple):
    """Several result roots read as one tree (the report's results_dir): collect() and scan() read them all, str()
    names them all, and Path() / os.fspath() give the first, the primary tree, where one folder is meant (resolved
    recipes, benchmark folders beside the runs)."""

    def __str__(self) -> str:
        return " + ".join(str(p) for p in self)

    def __fspath__(self) -> str:
        return str(self[0])


def roots_of(results_dir: str | Path | Sequence[str | Path]) -> list[Path]:
    """One results root or several (`swiftbench tables results other_results`) as a list of paths."""
    if isinstance(results_dir, (str, Path)):
        return [Path(results_dir)]
    return [Path(p) for p in results_dir]


def find_folders(results_dir: str | Path | Sequence[str | Path]) -> treewalk.Found:
    """Every run folder under the root(s) (a folder with run.json or logging.jsonl, failed runs too), each root's in
    order, read through symlinks (experiments.base.treewalk), with the folders that could not be listed and the links
    read once. A root that is no folder is bad input."""
    out = treewalk.Found()
    for root in roots_of(results_dir):
        if not root.is_dir():
            raise InputError(root, _not_a_folder(root))
        try:
            os.scandir(root).close()
        except OSError as exc:
            raise InputError(root, f"cannot be read ({userfiles.reason(exc)})") from None
        found = treewalk.folders_with(root, (STATUS_NAME, LOG_NAME))
        # results/anchors/ holds the published-workload runs (torchtune, not ms-swift): analysis.parse.anchor_run reads
        out.folders += [f for f in found.folders if _top(root, f) != ANCHORS_DIR]
        out.skipped += found.skipped
        out.notes += found.notes
    return out


ANCHORS_DIR = "anchors"


def _top(root: Path, folder: Path) -> str | None:
    """FOLDER's first part below ROOT (None where it is not below it)."""
    try:
        parts = folder.relative_to(root).parts
    except ValueError:
        return None
    return parts[0] if parts else None


def _not_a_folder(path: Path) -> str:
    """Why PATH, which is no folder, cannot be a results root, in words."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "no such results folder"
    except OSError as exc:
        return userfiles.reason(exc)
    what = "a file" if stat.S_ISREG(mode) else userfiles.kind_of(mode).split(", not ")[0]
    return f"{what}, not a results folder"


def run_folders(results_dir: str | Path | Sequence[str | Path]) -> list[Path]:
    """The run folders of find_folders."""
    return find_folders(results_dir).folders


def check_hardware(run_dir: Path, env: EnvJson, status: RunJson, folder_hw: str | None,
                   folder_experiment: str | None = None) -> None:
    """The folder's hardware class and experiment (results/<hw>/<experiment>/...) against what env.json and run.json
    say: env.json's `hw: a10` in a results/h200/ folder would make an A10 row (and the speed-up baseline) of an H200
    run, run.json's `experiment: bs16` in a seed/ folder a bs16 recipe row of a seed run. A GPU whose NVML name is
    another class's is bad input too, unless the runner recorded the label as forced (--force-hw)."""
    if folder_hw is None:
        return
    for path, data in ((run_dir / ENV_NAME, env), (run_dir / STATUS_NAME, status)):
        hw = data.get(Run.HW)  # env.json and run.json both name it
        if hw is not None and hw != folder_hw:
            raise InputError(path, f"hw {hw!r} but the folder is under {folder_hw}/: which GPU made this run is "
                                   "unclear")
    nested: list[dict] = [d for d in (status.get(Run.KEY), status.get(Run.SPEC)) if isinstance(d, dict)]
    for named in [dict(status), *nested]:
        experiment = named.get(Run.EXPERIMENT)
        if folder_experiment is not None and experiment is not None and experiment != folder_experiment:
            raise InputError(run_dir / STATUS_NAME, f"experiment {experiment!r} but the folder is under "
                                                    f"{folder_experiment}/: which recipe made this run is unclear")
    forced = status.get(Run.FORCED_HW) or (env.get(Env.GPU_CHECK) or {}).get(GpuCheck.FORCED)
    name = env.get(Env.GPU_NAME)
    matched = hardware.match_nvml(name) if name and not forced else None
    if matched is not None and matched != folder_hw:
        raise InputError(run_dir / ENV_NAME, f"gpu_name {name!r} is a {matched} GPU but the folder is under "
                                             f"{folder_hw}/ and run.json does not say the label was forced")


def read_run(run_dir: str | Path, status: RunJson | None = None) -> RunRecord:
    """The RunRecord of one run folder: run.json, env.json, and the log when there is one (a failed run without
    a log comes back failed, with its reason). STATUS: run.json's read_status where the caller has it."""
    run_dir = Path(run_dir)
    env = read_env(run_dir)
    status = read_status(run_dir) if status is None else status
    ident = identity(run_dir)
    if ident.hw is not None and status.get(Run.COMMAND) and not userfiles.present(run_dir / ENV_NAME):
        # the runner writes env.json before run.json names the command: without it the run's host and GPU are
        # unknown, and a row without its host would leave the recipe tables without a word (a folder outside the
        # results layout, given to parse, has no row to lose)
        raise InputError(run_dir / ENV_NAME, "missing, though run.json records the run's command (the runner "
                                             "writes env.json first): which host and GPU made this run is unknown")
    check_hardware(run_dir, env, status, ident.hw, ident.experiment)
    info: dict[str, Any] = dict(  # RunRecord's identity and status fields
        hw=ident.hw or env.get(Env.HW),
        experiment=status.get(Run.EXPERIMENT) or ident.experiment,
        run=ident.run,
        status=status.get(Run.STATUS, "ok"),
        failure=status.get(Run.REASON),
        labels=labels(env, status),
        env=env,
        run_status=status,
    )
    if not userfiles.present(run_dir / STATUS_NAME) and not userfiles.present(run_dir / ENV_NAME):
        info["labels"].append(UNLABELLED)
    if userfiles.present(run_dir / LOG_NAME):  # a FIFO, a folder or a loop by that name is bad input, not "no log"
        rec = record_from_log(read_log(run_dir, resumes=resumes_of(status)), **info)
        if rec.ok and not rec.complete:  # a log cut at step 30 read as a finished run, step 30's loss as final
            rec = dataclasses.replace(rec, labels=[*rec.labels, incomplete_label(rec)])
        return rec
    if info[Run.STATUS] == "ok":  # RunRecord's status is run.json's
        info.update(status="failed", failure="no logging.jsonl")
    return RunRecord(path=str(run_dir), **info, **vars(sidefiles.read(run_dir, resumed=bool(resumes_of(status)))))


def collect(results_dir: str | Path | Sequence[str | Path]) -> list[RunRecord]:
    """Records of every run folder under the root(s) (failed runs too, with their reason), a run found twice counted
    once; folders that cannot be read or used are left out (scan() says which and why)."""
    return scan(results_dir).records


@dataclass
class Scan:
    """The runs of one or more result roots, and what the merge did: SKIPPED folders (unreadable, or outside the
    <hw>/<experiment>/<run> layout; the commands exit 3 on these) and NOTES (copies counted once, unlabelled runs)."""

    records: list[RunRecord] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """One line per skipped folder and per note, for stderr."""
        return [userfiles.shown(f"skipped {d}: {why}") for d, why in self.skipped] + \
            [userfiles.shown(f"note: {n}") for n in self.notes]


def _status_or_none(run_dir: Path) -> RunJson | None:
    """read_status, or None where run.json is broken (reading the run says so, with its line)."""
    try:
        return read_status(run_dir)
    except (InputError, OSError, UnicodeDecodeError):
        return None


def _why_unused(run_dir: Path, status: RunJson | None) -> str | None:
    """Why a run folder is outside what the tables and the report read, else None (STATUS: _status_or_none's)."""
    try:
        str(run_dir).encode("utf-8")
    except UnicodeEncodeError:  # bytes that are no UTF-8 in a name: no table, JSON or report can hold it
        return "its path is not UTF-8 text: rename the folder"
    if run_dir.name.startswith(".") and run_dir.name.endswith(PARTIAL):
        return ("an unfinished `swiftbench import` (stopped before its folder was complete): delete it and import "
                "again")
    ident = identity(run_dir)
    if ident.hw is None:
        plain = not userfiles.present(run_dir / STATUS_NAME) and not userfiles.present(run_dir / ENV_NAME)
        if plain or SWIFT_RUN.match(run_dir.name):
            return ("a plain ms-swift output folder, not a results/<hw>/<experiment>/<run> folder: bring it in with "
                    "`swiftbench import <its output folder> --hw HW --experiment NAME`")
        return (f"not in the <hw>/<experiment>/<run> layout ({run_dir.parent.parent.name!r} is not a class of "
                "data/hardware.yaml)")
    experiment = str(ident.experiment)  # set with hw
    imported = status.get(Run.IMPORTED) if status is not None else None
    if imported is not None:  # swiftbench import: a recipe's name only where args.json is that recipe
        return imported_label_problem(run_dir, experiment)
    if experiment not in known_experiments():
        return (f"experiment {experiment!r} is neither in experiments/recipes/recipes.yaml nor a claims experiment "
                "(experiments/recipes/claims/)")
    return None


def imported_label_problem(run_dir: Path, experiment: str) -> str | None:
    """Why an imported run cannot be read under EXPERIMENT, else None: under a recipes.yaml experiment its args.json
    must be that recipe (an older import may not be), a claims experiment it cannot be, any other name is its own."""
    from experiments.recipes import catalog, recipes

    if experiment in matrix_experiments():
        args = next((read_json_object(run_dir / n) for n in (runfiles.ARGS_JSON, runfiles.ARGS_JSON_1X)
                     if (run_dir / n).is_file()), None)
        differ = recipes.recipe_mismatch(experiment, args) if isinstance(args, dict) else ["no args.json"]
        if differ:
            return (f"imported as {experiment!r} but not its recipe ({'; '.join(differ)}): move it to a folder of "
                    "its own name (results/<hw>/myrun/) so it cannot redefine the reference job")
    elif catalog.experiment(experiment) is not None:
        return f"imported as the claims experiment {experiment!r}, which only the runner's launcher can make"
    return None


def skip_reason(run_dir: Path, exc: Exception) -> str:
    """The reading error, its file named relative to the run folder."""
    if isinstance(exc, InputError):
        where = exc.path or ""
        try:
            where = str(Path(where).relative_to(run_dir))
        except ValueError:
            pass
        return f"{where}{f':{exc.line}' if exc.line is not None else ''}: {exc.message}"
    return f"{type(exc).__name__}: {exc}"


def read_runs(run_dirs: Sequence[Path], skipped: list[tuple[Path, str]] | None = None) -> list[RunRecord]:
    """read_run of each folder; with SKIPPED (a list), a folder that is bad input is appended there with its reason
    and left out, else its InputError stops everything."""
    out = []
    with gc_paused(), shared.sharing():  # as in scan(): no cycles to collect, equal values held once
        for run_dir in run_dirs:
            try:
                out.append(read_run(run_dir))
            except (InputError, OSError, UnicodeDecodeError) as exc:
                if skipped is None:
                    raise
                skipped.append((Path(run_dir), skip_reason(Path(run_dir), exc)))
    return out


def scan(results_dir: str | Path | Sequence[str | Path]) -> Scan:
    """Read every run folder of the root(s) as the tables and the report use them, and say what was not used.

    A folder that cannot be read (broken run.json or env.json, a log that is bad input, not UTF-8, unreadable, a
    folder that cannot be listed) or that lies outside the layout (a plain ms-swift output folder, an unknown hardware
    class or experiment, an unfinished import) is skipped with its reason; a folder with the same
    run.json/env.json/logging.jsonl bytes as one already read (the same run copied into two roots) is counted once;
    a folder with only ms-swift's files is an unlabelled run; a link to a folder already read is said and read once.
    A folder the last scan of this process read, unchanged since (the same files, sizes and times), is not read
    again (_FOLDERS: `tables` reads its tree, then the planner reads it again for its measured steps)."""
    out = Scan()
    found = find_folders(results_dir)
    out.skipped += found.skipped
    out.notes += found.notes
    seen: dict[str | None, Path] = {}  # digest: None for a folder without identity files
    cache: dict[str, tuple[tuple, _Folder]] = {}
    with gc_paused(), shared.sharing():  # records hold no cycles; the collector's passes over thousands of them
        _scan_folders(found.folders, cache, seen, out)  # took a fifth of the scan
    _FOLDERS.clear()  # the last scan's folders only: memory stays one tree's
    _FOLDERS.update(cache)
    return out


def _scan_folders(folders: list[Path], cache: dict, seen: dict, out: Scan) -> None:
    """scan()'s loop: each folder skipped, counted once, or read into OUT."""
    for run_dir in folders:
        folder = _cached_folder(run_dir, cache)
        if folder.why is not None:
            out.skipped.append((run_dir, folder.why))
            continue
        if folder.digest in seen:
            out.notes.append(f"{run_dir} is the same run as {seen[folder.digest]} (identical run.json, env.json and "
                             "logging.jsonl): counted once")
            continue
        rec = folder.read(run_dir)
        if rec is None:
            out.skipped.append((run_dir, folder.error or "not read"))
            continue
        seen[folder.digest] = run_dir
        if UNLABELLED in rec.labels:
            out.notes.append(f"{run_dir}: {UNLABELLED}; read as an unlabelled run")
        out.records.append(rec)


@dataclass
class _Folder:
    """What scan() makes of one run folder: why it is not used (the layout, or an error), else its digest and, once
    read, its record."""

    why: str | None = None
    digest: str | None = None
    record: RunRecord | None = None
    error: str | None = None
    status: RunJson | None = None  # run.json as read for the layout check (read once)

    def read(self, run_dir: Path) -> RunRecord | None:
        """The folder's record (read_run, once); None with ERROR set when it cannot be read."""
        if self.record is None and self.error is None:
            try:
                self.record = read_run(run_dir, self.status)
            except (InputError, OSError, UnicodeDecodeError) as exc:
                self.error = skip_reason(run_dir, exc)
        return self.record


_FOLDERS: dict[str, tuple[tuple, _Folder]] = {}  # run folder -> (its entries' signature, what scan made of it)


def _signature(run_dir: Path) -> tuple:
    """What a run folder's reading depends on: each entry's name, size, times and inode (a rewritten file differs in
    one of them). Empty when the folder cannot be listed (never the same as a listing)."""
    out: list[tuple] = []
    try:
        with os.scandir(run_dir) as it:
            for entry in it:
                try:
                    st = entry.stat()
                    out.append((entry.name, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
                except OSError:
                    out.append((entry.name, None, None, None, None))
    except OSError:
        return ()
    return tuple(sorted(out, key=lambda e: e[0]))


def _cached_folder(run_dir: Path, cache: dict[str, tuple[tuple, _Folder]]) -> _Folder:
    """_read_folder of RUN_DIR, or what the last scan made of it where its files are unchanged."""
    sig = _signature(run_dir)
    key = str(run_dir)
    hit = _FOLDERS.get(key)
    folder = hit[1] if hit is not None and sig and hit[0] == sig else _read_folder(run_dir)
    cache[key] = (sig, folder)
    return folder


def _read_folder(run_dir: Path) -> _Folder:
    """Why RUN_DIR is not used, else its digest (its record is read when scan() keeps it: a copy is not read)."""
    status = _status_or_none(run_dir) if identity(run_dir).hw is not None else None
    why = _why_unused(run_dir, status)
    if why is not None:
        return _Folder(why=why)
    try:
        return _Folder(digest=digest(run_dir), status=status)
    except (InputError, OSError, UnicodeDecodeError) as exc:
        return _Folder(why=skip_reason(run_dir, exc))


def records_under(path: str | Path, skipped: list[tuple[Path, str]] | None = None) -> list[RunRecord]:
    """Records of PATH as `swiftbench parse` takes it: a run folder, a parent of several, or a logging.jsonl.
    Folders the runner made get their env.json and run.json; plain ms-swift output folders are read as they are.
    With SKIPPED (a list) and PATH a parent of runs, a run that is bad input is appended there with its reason and
    the others are read; PATH that is itself one run stays bad input."""
    out = []
    one_run = os.path.isfile(path) or os.path.lexists(Path(path) / LOG_NAME)  # no stat error: find_runs says it
    with gc_paused(), shared.sharing():  # as in scan(): no cycles to collect, equal values held once
        for run_path in find_runs(path, skipped if not one_run else None):
            run_dir = run_path.parent if run_path.is_file() else run_path
            try:
                if userfiles.present(run_dir / STATUS_NAME) or userfiles.present(run_dir / ENV_NAME):
                    out.append(read_run(run_dir))
                else:
                    rec = record_from_log(read_log(run_path))
                    out.append(dataclasses.replace(rec, env=read_env(run_dir)))
            except (InputError, OSError, UnicodeDecodeError) as exc:
                if skipped is None or one_run:
                    raise
                skipped.append((run_dir, skip_reason(run_dir, exc)))
    return out


INCOMPLETE = "incomplete log"


def incomplete_label(rec: RunRecord) -> str:
    """The label of a run whose run.json says ok but whose log lacks ms-swift's end-of-training summary (cut, or a
    killed run's log under a hand-edited run.json): its last loss is no final loss."""
    of = f" of {rec.max_steps}" if rec.max_steps else ""
    return (f"{INCOMPLETE} (ends at step {rec.global_steps}{of} without ms-swift's end-of-training summary, though "
            "run.json says ok)")


def labels(env: EnvJson, status: RunJson) -> list[str]:
    """How a number was obtained, in words that go on every table row and figure."""
    out = []
    if status.get(Run.DUMMY_WEIGHTS) or env.get(Env.DUMMY_WEIGHTS):
        out.append("dummy weights")
    if status.get(Run.OFFLINE_DATA):
        out.append("offline data samples")
    if status.get(Run.MAX_STEPS):
        out.append(f"cut run ({status[Run.MAX_STEPS]} steps)")
    launcher = (status.get(Run.KEY) or {}).get(RunKey.LAUNCHER) or {}
    if launcher.get(Launcher.STOP_AFTER):
        out.append(f"cut run (stopped after step {launcher[Launcher.STOP_AFTER]} of the full schedule)")
    if launcher.get(Launcher.MEM_CAP_GIB):
        out.append(f"allocator capped at {launcher[Launcher.MEM_CAP_GIB]:g} GiB")
    if status.get(Run.FORCED_HW):
        out.append(f"forced hw label (GPU was {env.get(Env.GPU_NAME, '?')})")
    version = (env.get(Env.PACKAGES) or {}).get("ms-swift")
    if version:
        out.append(f"ms-swift {version}")
    if status.get(Run.IMPORTED):  # swiftbench import: a plain `swift sft` output folder; GPU, host and env unknown
        out.append("imported")
    return out


@functools.lru_cache(maxsize=1)
def matrix_experiments() -> frozenset[str]:
    """The hardware matrix's experiments (experiments/recipes/recipes.yaml, matrix: true): what the speed and
    convergence tables compare across GPUs. Claims experiments have their own tables."""
    from experiments.recipes import recipes

    return frozenset(recipes.experiments(matrix_only=False))


def is_matrix(rec: RunRecord) -> bool:
    return rec.experiment in matrix_experiments()


@functools.lru_cache(maxsize=1)
def known_experiments() -> frozenset[str]:
    """Every experiment a run may belong to: the recipes' and the claims audit's (experiments/recipes/claims/)."""
    from experiments.recipes import catalog

    return matrix_experiments() | frozenset(catalog.load()["experiments"])


def latest_per_group(records: list[RunRecord]) -> list[RunRecord]:
    """One record per (hw, experiment, host id, GPU layout): the successful run with the most steps (the least cut),
    newest first
    among equals; else the newest failed one. Runs from two hosts stay two rows (a host-bound step moves with the
    host); runs made before host fingerprints share one group. The tables show these; the report lists every run."""
    groups: dict[tuple, list[RunRecord]] = {}
    for r in records:
        groups.setdefault((r.hw, r.experiment, r.host_id, r.layout), []).append(r)
    out = []
    for _, runs in sorted(groups.items(), key=lambda kv: tuple(str(k) for k in kv[0])):
        ok = [r for r in runs if r.ok]
        out.append(sorted(ok or runs, key=lambda r: (r.global_steps or 0, r.run))[-1])
    return out
