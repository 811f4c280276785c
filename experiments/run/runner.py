"""Run experiments: one `swift sft` run per experiment, each in its own never-overwritten run folder.

`swiftbench run-all --hw h200 ...` (or `python -m experiments.run.runner run-all ...`) executes
experiments/run/sft.ipynb through papermill once per experiment of the matrix, skipping experiments that already have a
complete run with the same inputs (resumable after a kill). The notebook calls prepare.prepare and execute.execute;
they can also be used without a notebook. With --claims it runs the claims audit's experiments and capacity searches
(experiments/recipes/catalog.py, experiments/recipes/plan.py) instead; a `combine` experiment runs the recipe that
`swiftbench claims resolve` wrote for it (catalog.read_resolved). The runner measures nothing and judges nothing:
it imports nothing from analysis/ (tests/test_layers.py).

Run folder: results/<hw>/<experiment>/<YYYYMMDD-HHMMSS>[-N]/ holding ms-swift's logging.jsonl and args.json
(--output_dir is a cache folder outside results/, .cache/checkpoints/..., whose logging.jsonl, args.json, runs/ ...
link here: checkpoints never land in results/; --add_version false), plus
  run.json       status (running | ok | failed), failure reason, inputs, labels, the runner and the training process
                 (`runner`, `training`: pid, process group, start time), and `resumes` (when, from which step, the
                 log lines before it, seconds to the first resumed step)
  env.json       GPU, driver, CUDA, topology, CPU, RAM, package versions (experiments.record.gpu.environment)
  command.sh     the exact command line and environment it ran with
  model_config.json  the model's config.json (shapes for MFU; weights never land here)
  nvml.csv       GPU samples once a second
  stdout.log     swift's output
  sft.ipynb      the executed notebook
The training runs under experiments/run/reaper.py (its own process group, stopped with whatever ends the runner: SIGINT,
SIGTERM, SIGHUP, or a SIGKILL that leaves the kernel, and so the supervisor, without a parent). An interrupted run
keeps its cache folder; the next run-all resumes it there from its last complete checkpoint (--resume_from_checkpoint),
in the same run folder. A finished run's cache folder is deleted: results hold no weights.

Stays whole: after the split by concern (spec, prepare, execute, folders, orphans, cache beside it) what is left is the
run loop, its locks and the CLI that starts it, a few lines over the bound.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import signal
import socket
import sys
import time
from pathlib import Path

from experiments.base import boundary, runfiles, runschema, userfiles
from experiments.base.errors import InputError
from experiments.base.runfolder import Fingerprint, Run
from experiments.launch import quick_stop
from experiments.recipes import catalog, recipes
from experiments.record import gpu
from experiments.run import reaper, rounds
from experiments.run.cache import find_resumable
from experiments.run.execute import RUNNER_ENV, progress_from_log
from experiments.run.folders import (
    experiment_runs,
    find_complete,
    find_finished,
    is_oom_status,
    new_run_dir,
    read_status,
    write_status,
)
from experiments.run.orphans import (
    STOPPING,
    check_orphans,
    follow_make,
    raise_interrupted,
    stop_run,
)
from experiments.run.spec import NOTEBOOK, PARALLEL, ROOT, RunSpec


def run_notebook(spec: RunSpec, run_dir: Path, progress: bool = True) -> None:
    """Execute experiments/run/sft.ipynb for one run; the executed copy lands in the run folder."""
    import papermill as pm

    params = {"hw": spec.hw, "experiment": spec.experiment, "model": spec.model, "data": spec.data or "",
              "max_steps": spec.max_steps or 0, "results_dir": str(spec.results_dir), "run_dir": str(run_dir),
              "force_hw": spec.force_hw, "timeout_s": spec.timeout_s or 0,
              "overrides_json": json.dumps(spec.overrides),
              # a resolved combination's launcher differs from its definition's: the notebook must not re-derive it
              "launcher_json": json.dumps(spec.launcher) if spec.launcher is not None else "",
              "gpus": spec.gpus, "parallel": spec.parallel, "plain": spec.plain, "profile": spec.profile}
    # the kernel inherits it: run.json names this process as the run's owner (whatever an ancestor had set)
    os.environ[RUNNER_ENV] = f"{os.getpid()}:{reaper.start_time(os.getpid()) or ''}"
    # the console shows training progress (watch_progress), not notebook cells; the kernel's own warnings (e.g.
    # ipykernel's "running over TCP without encryption") stay off it
    # papermill writes its copy again after every cell: under a temporary name, renamed into place only whole (a
    # full disk would leave sft.ipynb cut short, no JSON)
    tmp = run_dir / f".{runfiles.NOTEBOOK}.{os.getpid()}.tmp"
    try:
        with watch_progress(run_dir, spec, enabled=progress):
            pm.execute_notebook(str(NOTEBOOK), str(tmp), parameters=params, cwd=str(ROOT),
                                progress_bar=False, log_output=False, kernel_name="python3",
                                extra_arguments=["--IPKernelApp.log_level=CRITICAL"])
    finally:
        keep_whole_notebook(tmp, run_dir / runfiles.NOTEBOOK)


def keep_whole_notebook(tmp: Path, final: Path) -> None:
    """The executed notebook TMP renamed to FINAL when it is whole JSON (a failed cell's too), else removed."""
    try:
        json.loads(tmp.read_bytes())
        os.replace(tmp, final)
    except FileNotFoundError:
        return
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            tmp.unlink()


@contextlib.contextmanager
def watch_progress(run_dir: Path, spec: RunSpec, enabled: bool = True, period_s: float = 2.0):
    """A progress bar of optimizer steps (with s/step and the ETA) read from RUN_DIR's logging.jsonl while the
    notebook trains: what a user of a long run wants to see, instead of the notebook's cells."""
    if not enabled:
        yield
        return
    import threading

    from tqdm.auto import tqdm

    stop = threading.Event()
    bar = tqdm(total=spec.max_steps or None, desc=f"{spec.hw}/{spec.experiment}", unit="step", file=sys.stderr,
               dynamic_ncols=True, bar_format="{desc}: {n}/{total} steps [{elapsed}<{remaining}, {rate_inv_fmt}]")

    def poll():
        seen, step = 0, 0
        log = Path(run_dir) / runfiles.LOGGING
        while not stop.wait(period_s):
            new, total, seen = progress_from_log(log, seen)
            if total and bar.total != total:
                bar.total = total
                bar.refresh()
            if new > step:
                bar.update(new - step)
                step = new

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)
        bar.close()


def preflight(spec: RunSpec) -> None:
    """The GPU is what HW says (and there are enough of them) before anything starts: a mismatch is bad input (one
    line, exit 2) and leaves no failed run folder behind."""
    try:
        gpu.check_hardware(spec.hw, spec.force_hw, count=spec.gpus)
    except gpu.HardwareMismatch as exc:
        raise InputError(None, f"{spec.hw}/{spec.experiment}: {exc}") from None


LOCKS = ".locks"  # results/.locks/<hw>-<experiment>.lock: one runner per results folder and experiment at a time


@contextlib.contextmanager
def experiment_lock(spec: RunSpec):
    """Hold the lock of SPEC's experiment in its results folder (yields True), or yield False when another process
    holds it: two `run-all` on one results folder never train the same experiment at once. An OS file lock, so a
    killed runner leaves no stale lock behind, and a released one leaves no file (a killed runner's file is reused).
    Yields the OSError when the results folder cannot be written."""
    import fcntl

    folder = Path(spec.results_dir) / LOCKS
    path = folder / f"{spec.hw}-{spec.experiment}.lock"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        f = open(path, "a+")
    except OSError as exc:
        yield exc
        return
    with f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:  # the holder before us removed the file it had locked: ours is gone from the folder, lock anew
            same = os.stat(path).st_ino == os.fstat(f.fileno()).st_ino
        except FileNotFoundError:
            same = False
        if not same:
            f.close()
            with experiment_lock(spec) as held:
                yield held
            return
        f.seek(0)
        f.truncate()
        f.write(f"{os.getpid()} {socket.gethostname()}\n")
        f.flush()
        try:
            yield True
        finally:  # the file goes with the lock (else a refused pre-flight leaves results/.locks/*.lock behind)
            with contextlib.suppress(OSError):
                path.unlink()
            with contextlib.suppress(OSError):
                folder.rmdir()  # only when empty
            fcntl.flock(f, fcntl.LOCK_UN)


def _run_one(spec: RunSpec, console, progress: bool, claims_mode: bool = False) -> dict:
    """One experiment under its lock: skip it when another runner is on it or when it is done (claims: an OOM counts
    as done), else run the notebook once."""
    with experiment_lock(spec) as held:
        if isinstance(held, OSError):
            return _run_one_read_only(spec, console, held, claims_mode)
        if not held:
            lock = Path(spec.results_dir) / LOCKS / f"{spec.hw}-{spec.experiment}.lock"
            console.print(f"[yellow]busy[/] {spec.hw}/{spec.experiment}: another runner holds {lock} "
                          f"({lock.read_text().strip() or 'pid unknown'}); not started")
            return {"experiment": spec.experiment, "run_dir": None, "status": "busy", "outcome": "busy"}
        return _run_one_locked(spec, console, progress, claims_mode)


def _run_one_read_only(spec: RunSpec, console, error: OSError, claims_mode: bool) -> dict:
    """A results folder that cannot be written: an experiment already done is skipped, one that needs a run is bad
    input (one line, exit 2), not an OSError traceback."""
    for run_dir in reversed(experiment_runs(spec)):
        status = read_status(run_dir)
        if status.get(Run.KEY) == spec.key() and (status.get(Run.STATUS) == "ok"
                                                  or claims_mode and is_oom_status(status)):
            console.print(f"[green]skip[/] {spec.hw}/{spec.experiment}: complete run {run_dir} (read-only results)")
            return {"experiment": spec.experiment, "run_dir": str(run_dir), "status": "skipped",
                    "outcome": "ok" if status.get(Run.STATUS) == "ok" else "oom"}
    raise InputError(spec.results_dir, f"cannot write to the results folder ({error.strerror or error}): "
                                       f"{spec.hw}/{spec.experiment} needs a run")


def _run_one_locked(spec: RunSpec, console, progress: bool, claims_mode: bool = False) -> dict:
    name, hw = spec.experiment, spec.hw
    if claims_mode:
        finished = find_finished(spec)
        if finished is not None:
            what = "complete" if finished[1] == "ok" else "OOM"
            console.print(f"[green]skip[/] {hw}/{name}: {what} run {finished[0]}")
            return {"experiment": name, "run_dir": str(finished[0]), "status": "skipped", "outcome": finished[1]}
    elif not spec.repeat:
        done = find_complete(spec)
        if done is not None:
            console.print(f"[green]skip[/] {hw}/{name}: complete run {done}")
            return {"experiment": name, "run_dir": str(done), "status": "skipped", "outcome": "ok"}
    preflight(spec)
    resume = None if spec.repeat else find_resumable(spec)
    if resume is not None:  # the same folder, from its last checkpoint (prepare records the resume in run.json)
        run_dir = resume["run_dir"]
        write_status(run_dir, status="running", resume_request={"checkpoint": resume["checkpoint"],
                                                                 "step": resume["step"]})
        console.print(f"[bold]resume[/] {hw}/{name} from step {resume['step']} -> {run_dir}")
    else:
        run_dir = new_run_dir(spec)
        if spec.round is not None:  # before the notebook starts: a run cut short still says where it stood
            write_status(run_dir, round=spec.round)
        console.print(f"[bold]run[/] {hw}/{name}" + (" (plain swift sft)" if spec.plain else "")
                      + (f", round {spec.round['round']} of {spec.round['of']}" if spec.round else "")
                      + f" -> {run_dir}")
    try:
        STOPPING["run_dir"] = run_dir
        run_notebook(spec, run_dir, progress)
    except KeyboardInterrupt as exc:  # Ctrl-C, or a signal run_command turned into Interrupted (it stopped the run)
        signum = getattr(exc, "signum", signal.SIGINT)
        ignored = {}
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # a second signal must not cut the clean-up short
            with contextlib.suppress(ValueError):
                ignored[sig] = signal.signal(sig, signal.SIG_IGN)
        try:
            stop_run(run_dir, f"the runner got {signal.Signals(signum).name}")
        finally:
            for sig, handler in ignored.items():
                signal.signal(sig, handler)
        exc.run_dir = run_dir  # type: ignore[attr-defined]  # for main()'s getattr, on any KeyboardInterrupt
        raise
    except Exception as exc:  # noqa: BLE001 - the notebook records the reason in run.json; keep going
        status = read_status(run_dir)
        own_write = isinstance(exc, OSError)  # the runner's own write (papermill's copy): a full disk, a read-only one
        why = f"cannot write the run folder ({userfiles.reason(exc)})" if isinstance(exc, OSError) else \
            f"notebook: {type(exc).__name__}: {str(exc)[:300]}"
        if status.get(Run.STATUS) in (None, "running"):
            write_status(run_dir, status="failed", reason=why)  # the cut notebook is gone: its blocks are free
        if own_write:  # bad input of the command (docs/cli.md: a full disk is one line, exit 2), the run marked failed
            STOPPING["run_dir"] = None
            raise InputError(run_dir, f"{why}: the run is marked failed") from None
    STOPPING["run_dir"] = None
    status = read_status(run_dir)
    colour = "green" if status.get(Run.STATUS) == "ok" else "yellow" if claims_mode and is_oom_status(status) else "red"
    console.print(f"[{colour}]{status.get(Run.STATUS)}[/] {hw}/{name}"
                  + (f": {status.get(Run.REASON)}" if status.get(Run.REASON) else ""))
    outcome = "ok" if status.get(Run.STATUS) == "ok" else "oom" if is_oom_status(status) else "failed"
    state = "oom" if claims_mode and outcome == "oom" else status.get(Run.STATUS)
    return {"experiment": name, "run_dir": str(run_dir), "status": state, "outcome": outcome}


def _run_search(name: str, hw: str, console, progress: bool, **kw) -> list[dict]:
    """A capacity search (experiments/recipes/claims/searches.yaml): probe per-device batches until one that trained
    sits next to an OOM."""
    results: list[dict] = []
    outcomes: dict[int, str] = {}
    while True:
        batch = catalog.next_probe(name, outcomes)
        if batch is None:
            break
        res = _run_one(RunSpec(hw=hw, experiment=catalog.probe_name(name, batch), **kw), console, progress, True)
        results.append(res)
        if res["outcome"] not in ("ok", "oom"):
            console.print(f"[red]stop[/] search {name}: probe bs {batch} failed for another reason than OOM")
            break
        outcomes[batch] = res["outcome"]
    ok = [b for b, o in outcomes.items() if o == "ok"]
    oom = [b for b, o in outcomes.items() if o == "oom"]
    console.print(f"[bold]{name}[/]: largest batch that trained {max(ok) if ok else None}, "
                  f"smallest that OOMed above it {min([b for b in oom if not ok or b > max(ok)], default=None)}")
    return results


def run_claims(hw: str, names: list[str], progress: bool = True, first_ok: bool = False, **kw) -> list[dict]:
    """Claims experiments (experiments/recipes/claims/): searches, combinations, blocked and package-gated ones.

    A combination (`combine`) runs its resolved recipe (catalog.read_resolved: written by `swiftbench claims resolve
    NAME --hw HW`); without one it is blocked. FIRST_OK: candidates in order (the fastest first); stop at the first
    one that trains (or trained before)."""
    import importlib.util

    from rich.console import Console

    console = Console(stderr=True)
    results = []

    def blocked(name: str, reason: str, why: str = "") -> None:
        console.print(f"[yellow]blocked[/] {hw}/{name}: {' '.join(reason.split())}{why}")
        results.append({"experiment": name, "status": "blocked", "reason": reason})

    for name in names:
        search = catalog.search(name)
        definition = search or catalog.experiment(name)
        if definition is None:
            raise InputError(catalog.CLAIMS_DIR, f"unknown claims experiment {name!r}")
        missing = [m for m in definition.get("requires") or [] if importlib.util.find_spec(m) is None]
        if missing:
            blocked(name, f"needs {', '.join(missing)}", " (not importable here)")
            continue
        if search is not None:
            if hw == "cpu" and search["launcher"].get("mem_cap_gib"):
                blocked(name, "a memory-cap search needs a CUDA device (on the CPU nothing is capped, nothing OOMs)")
                continue
            results += _run_search(name, hw, console, progress, **kw)
            continue
        if definition.get("blocked"):
            blocked(name, definition["blocked"])
            continue
        spec_kw = dict(kw)
        if definition.get("combine"):
            results_dir = kw.get("results_dir", "results")
            try:
                combo = catalog.read_resolved(results_dir, hw, name)
            except InputError as exc:  # a broken file blocks this combination, not the rest of the chain
                blocked(name, str(exc))
                continue
            if combo is None:
                blocked(name, f"run `swiftbench claims resolve {name} --hw {hw}` first",
                        f" (no {catalog.resolved_path(results_dir, hw, name)})")
                continue
            if combo["overrides"] is None:
                blocked(name, combo["reason"])
                continue
            console.print(f"{hw}/{name}: {combo['reason']} (resolved {combo.get('made') or '?'})")
            spec_kw["overrides"] = {**combo["overrides"], **(kw.get("overrides") or {})}
            spec_kw["launcher"] = dict(combo["launcher"] or {})
        results.append(_run_one(RunSpec(hw=hw, experiment=name, **spec_kw), console, progress, True))
        if first_ok and results[-1].get("outcome") == "ok":
            rest = names[names.index(name) + 1:]
            if rest:
                console.print(f"[green]first ok[/] {hw}/{name}: not running {', '.join(rest)}")
            break
    return results


def run_all(hw: str, experiments: list[str] | None = None, progress: bool = True, gpus: list[int] | None = None,
            parallels: list[str] | None = None, repeats: int | None = None, plain: list[str] | None = None,
            plain_rounds: int | None = None, **kw) -> list[dict]:
    """Every experiment of the matrix for HW; complete ones are skipped, failed ones are kept and re-tried. An
    experiment may be NAME@STEPS (a cut run). REPEATS: that many interleaved rounds of them on this host
    (experiments/run/rounds.py), every run a new one, with the plain twins of PLAIN beside theirs."""
    from rich.console import Console

    console = Console(stderr=True)
    items = [rounds.parse_item(n) for n in (experiments or recipes.experiments())]
    if repeats:
        return _run_rounds(hw, items, repeats, set(plain or []), console, progress, plain_rounds, **kw)
    if plain:
        raise InputError(None, "--plain needs --repeats (a plain run is the harness's check, paired with its twin)")
    counts = list(gpus or [1])
    layouts = list(parallels or ["ddp"])
    # one experiment's GPU counts one right after the other: a scaling ratio wants runs made close together
    specs = [RunSpec(hw=hw, experiment=name, gpus=n, parallel=par, **{**kw, "max_steps": steps or kw.get("max_steps")})
             for name, steps in items for n in counts for par in layouts]
    return [_run_one(spec, console, progress) for spec in specs]


def _run_rounds(hw: str, items: list[tuple[str, int | None]], repeats: int, plain: set[str], console,
                progress: bool, plain_rounds: int | None = None, **kw) -> list[dict]:
    """REPEATS interleaved rounds of ITEMS on this host; after each run its host probe goes into its run.json."""
    from experiments.record import host

    plan = rounds.rounds(items, repeats, plain, plain_rounds)
    set_name = rounds.set_id(host.fingerprint()[Fingerprint.HOST_ID])
    device = "cpu" if hw == "cpu" else "cuda"
    console.print(f"[bold]set[/] {set_name}: {repeats} rounds of "
                  + ", ".join(it.label for it in plan[0]))
    results = []
    for r, runs in enumerate(plan):
        for slot, item in enumerate(runs):
            spec = RunSpec(hw=hw, experiment=item.experiment, plain=item.plain,
                           **{**kw, "repeat": True, "max_steps": item.steps or kw.get("max_steps")},
                           round=rounds.place(set_name, r, repeats, slot, item))
            res = _run_one(spec, console, progress)
            if res.get("run_dir"):  # this run's after-probe is the next one's before-probe (env.json): one measurement
                after = {**host.probe_in_child(device, rounds.PROBE_BUDGET_S), "taken": time.time()}
                write_status(Path(res["run_dir"]), probe_after=after)
                os.environ[host.FRESH_PROBE_ENV] = json.dumps(after)
            results.append(res)
    os.environ.pop(host.FRESH_PROBE_ENV, None)
    return results


def register(sub) -> None:
    """`run-all` (for analysis.cli's SUBCOMMAND_MODULES, and `python -m experiments.run.runner run-all`)."""
    r = sub.add_parser("run-all", help="every experiment of the matrix for one hardware class (or --claims)",
                       description="Run every experiment of the matrix (experiments/recipes/recipes.yaml) "
                                   "for one hardware "
                                   "class, or with --claims the claims audit's experiments; complete runs are skipped.")
    r.add_argument("--hw", required=True, help="a class of data/hardware.yaml, or auto (the GPU's, from NVML)")
    r.add_argument("--model", default="Qwen/Qwen2.5-7B-Instruct",
                   help="hub id (default), a local model folder, 'dummy' (random weights, exact shapes)")
    r.add_argument("--data", default=None, help="folder with local stand-ins of the hub datasets")
    r.add_argument("--max-steps", type=int, default=None, help="cut runs of N optimizer steps")
    r.add_argument("--quick", action="store_true",
                   help=f"quick runs: just enough steps to estimate the full run, in {quick_stop.BUDGET_S:g} s each "
                        "(model load included; experiments/launch/quick_stop.py)")
    r.add_argument("--budget", default=None, metavar="SECONDS", help="quick runs of this budget each (180 or 180s)")
    r.add_argument("--experiments", default=None,
                   help="comma-separated subset of experiments/recipes/recipes.yaml (with --claims: claims experiments "
                        "and searches of experiments/recipes/claims/, or plan:N for the plan's command N; "
                        "default: the whole plan)")
    r.add_argument("--claims", action="store_true",
                   help="run claims experiments (experiments/recipes/claims/) instead of the matrix")
    r.add_argument("--results", default="results",
                   help="the results tree the run folders go into, results/<hw>/<experiment>/<run>/ (default results)")
    r.add_argument("--force-hw", action="store_true", help="run even if the GPU is not HW (labelled forced)")
    r.add_argument("--timeout", type=float, default=None, help="seconds per run before it is killed")
    r.add_argument("--set", action="append", default=[], metavar="FLAG=VALUE",
                   help="extra swift flag for every run (part of the run's identity)")
    r.add_argument("--first-ok", action="store_true",
                   help="with --claims: stop at the first experiment that trains (candidates, fastest first); "
                        "plan commands marked first_ok do this by themselves")
    r.add_argument("--gpus", default="1",
                   help="GPUs per run, or a comma-separated sweep (1,2,4): the global batch is kept (grad-accum / N)")
    r.add_argument("--parallel", default="ddp",
                   help="ddp, zero2, zero3 or a comma-separated list (zero*: ms-swift's DeepSpeed configs)")
    r.add_argument("--kill-orphans", action="store_true",
                   help="stop a training an earlier, killed runner left running on this host (default: report it "
                        "and start nothing)")
    r.add_argument("--repeat", action="store_true",
                   help="run each experiment again, in a new run folder, even where a complete run exists (a second "
                        "run on a host measures its warm caches: compiled code, page cache)")
    r.add_argument("--repeats", type=int, default=None, metavar="N",
                   help="N interleaved rounds of --experiments on this host (A B C, B C A, ...), every run new, each "
                        "with a host probe before and after it (experiments/run/rounds.py); NAME@STEPS: a cut run")
    r.add_argument("--plain", default=None, metavar="NAMES",
                   help="with --repeats: these experiments also run as the printed command alone (bash command.sh, "
                        "no launcher) beside their launcher run, ABBA: the harness's overhead")
    r.add_argument("--plain-rounds", type=int, default=None, metavar="K",
                   help="with --plain: the plain twins in the first K rounds only (K=2 is one ABBA)")
    r.add_argument("--profile", action="store_true",
                   help="profile two steps of every matrix run (recipes.yaml `profile`); such a run's epoch holds the "
                        "profiler's cost and is not a timed run")
    r.add_argument("--no-progress", action="store_true",
                   help="no progress bar of optimizer steps per run (for logs and pipes); the run folders are the same")
    r.set_defaults(func=run_command)


def run_command(a) -> int:
    """`run-all` with parsed arguments: 0 when every run is ok / skipped / OOM (claims) / blocked, else 1.
    Bad input raises InputError."""
    from experiments.base import hardware

    if a.hw == "auto":  # the class of the GPU NVML shows (a fleet job need not know which card it got)
        a.hw = gpu.detect_hw()
    a.hw = hardware.user_key(a.hw)
    names = a.experiments.split(",") if a.experiments else None
    if a.claims:
        from experiments.recipes import plan

        first_ok = a.first_ok or plan.plan_first_ok(names)
        names = plan.expand(names)
    else:
        first_ok = False
        for n in names or []:
            recipes.flags(rounds.parse_item(n)[0])
    if a.data and not Path(a.data).is_dir():
        raise InputError(a.data, "data folder does not exist")
    check_inputs(a)
    overrides = set_overrides(a.set)
    common = dict(progress=not a.no_progress, model=a.model, data=a.data, max_steps=a.max_steps,
                  results_dir=a.results, force_hw=a.force_hw, timeout_s=a.timeout, overrides=overrides,
                  budget_s=quick_stop.budget_of(a.quick, a.budget), repeat=a.repeat)
    if getattr(a, "profile", False):
        common["profile"] = True
    if (a.repeats or a.plain) and a.claims:
        raise InputError(None, "--repeats/--plain apply to the matrix, not to --claims")
    counts = _int_list(a.gpus, "--gpus")
    layouts = [p.strip() for p in a.parallel.split(",") if p.strip()]
    for p in layouts:
        if p not in PARALLEL:
            raise InputError(None, f"--parallel {p!r}: use one of {', '.join(PARALLEL)}")
    if a.claims and (counts != [1] or layouts != ["ddp"]):
        raise InputError(None, "--gpus/--parallel apply to the matrix; a claims experiment sets its own")
    from rich.console import Console

    follow_make()
    STOPPING.update(run_dir=None, done=False)
    check_orphans(a.results, getattr(a, "kill_orphans", False), Console(stderr=True))  # before anything starts
    handlers = {}
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # a clean stop: the training goes with the runner
        with contextlib.suppress(ValueError):
            handlers[sig] = signal.signal(sig, raise_interrupted)
    try:
        if a.claims:
            results = run_claims(a.hw, names or [], first_ok=first_ok, **common)  # a list: plan.expand's
        else:
            results = run_all(a.hw, names, gpus=counts, parallels=layouts, repeats=a.repeats,
                              plain=[x.strip() for x in a.plain.split(",") if x.strip()] if a.plain else None,
                              plain_rounds=a.plain_rounds,
                              **common)
    except KeyboardInterrupt as exc:
        name = signal.Signals(getattr(exc, "signum", signal.SIGINT)).name
        run_dir = getattr(exc, "run_dir", None)
        print(f"run-all: stopped by {name}" + (f"; {run_dir}: training stopped, run marked failed: interrupted "
                                               f"(run-all again resumes it from its last checkpoint)"
                                               if run_dir else ""), file=sys.stderr)
        return 128 + int(getattr(exc, "signum", signal.SIGINT))
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    return 0 if all(r["status"] in ("ok", "skipped", "oom", "blocked") for r in results) else 1


# swift flags the runner sets for every run (where outputs go, what is trained, resuming, the GPU layout): --set may
# not change them, or checkpoints land in results/ and a run is read as another; the option that does it instead
RUNNER_FLAGS = {**{flag: None for flag in recipes.RUN_FLAGS}, "model": "--model", "dataset": "--data",
                "max_steps": "--max-steps", "resume_from_checkpoint": None, "logging_dir": None,
                "deepspeed": "--parallel"}


_FLAG_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# values ms-swift (transformers' TrainingArguments) refuses only after the run has started: refused here first.
# The step intervals take a ratio of the run below 1 and a whole number above it; the sizes a whole number >= 1.
_STEP_INTERVALS = ("logging_steps", "eval_steps", "save_steps")
_WHOLE_SIZES = ("per_device_train_batch_size", "per_device_eval_batch_size", "gradient_accumulation_steps")


def owned_flag(flag: str) -> str | None:
    """The runner's flag that ms-swift reads FLAG as, else None: its parser (argparse, allow_abbrev) takes a prefix
    of one flag for that flag (--output_di is --output_dir), and no ms-swift flag is a prefix of an owned one (4.6.0),
    so a prefix of an owned flag is that flag or an error of ms-swift's."""
    if flag in RUNNER_FLAGS:
        return flag
    return next((own for own in RUNNER_FLAGS if own.startswith(flag)), None)


def _value_problem(flag: str, value: str) -> str | None:
    """Why ms-swift would refuse VALUE for FLAG once the run has started, else None."""
    if flag not in _STEP_INTERVALS and flag not in _WHOLE_SIZES:
        return None
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if flag in _WHOLE_SIZES:
        return None if math.isfinite(number) and number >= 1 and number == int(number) else "a whole number >= 1"
    if not (math.isfinite(number) and number > 0):
        return "a number > 0 (a ratio of the run below 1)"
    if number > 1 and number != int(number):
        return "a whole number above 1 (a ratio of the run below it)"
    return None


def set_overrides(items: list[str]) -> dict[str, str]:
    """--set FLAG=VALUE items as {flag: value}; bad input for an item without '=' or a flag name, a flag the runner
    owns (or a prefix ms-swift would read as one), or a value ms-swift would refuse once the run had started."""
    overrides = {}
    for item in items:
        k, sep, v = item.partition("=")
        flag = k.strip().lstrip("-").replace("-", "_")
        if not sep or not _FLAG_NAME.fullmatch(flag):
            raise InputError(None, f"--set wants FLAG=VALUE, got {item!r}")
        own = owned_flag(flag)
        if own is not None:
            instead = f"; use {RUNNER_FLAGS[own]}" if RUNNER_FLAGS[own] else ""
            read = "" if own == flag else f" (ms-swift reads --{flag} as --{own})"
            raise InputError(None, f"--set {flag}: the runner sets --{own} for every run{read} "
                                   f"({', '.join(sorted(RUNNER_FLAGS))} are its own){instead}")
        why = _value_problem(flag, v.strip())
        if why:
            raise InputError(None, f"--set {flag}={v.strip()}: ms-swift wants {why}")
        overrides[k.lstrip("-")] = v
    return overrides


def check_inputs(a) -> None:
    """What run-all can check before anything starts, so that bad input is one line (exit 2), not a failed run
    folder: --timeout and --max-steps are positive, the model is dummy / a model folder / a hub id, the data folder
    holds every local stand-in."""
    from experiments.offline import localdata
    from experiments.run.prepare import check_model

    if a.timeout is not None and not (math.isfinite(a.timeout) and a.timeout > 0):
        raise InputError(None, f"--timeout wants seconds > 0, got {a.timeout:g}")
    if a.max_steps is not None and a.max_steps < 1:
        raise InputError(None, f"--max-steps wants a whole number >= 1, got {a.max_steps}")
    if a.max_steps is not None and a.max_steps > runschema.STEPS:  # run.json's bound: tables would refuse the folder
        shown = f"{a.max_steps:,}" if a.max_steps < 10**30 else f"a {len(str(a.max_steps))}-digit number"
        raise InputError(None, f"--max-steps wants a whole number from 1 to {runschema.STEPS:,}, got {shown}")
    check_model(a.model)
    if a.data:
        localdata.check_data_dir(a.data)


def _int_list(text: str, flag: str) -> list[int]:
    try:
        out = [int(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise InputError(None, f"{flag} wants whole numbers like 1,2,4, got {text!r}") from None
    if not out or any(n < 1 for n in out):
        raise InputError(None, f"{flag} wants whole numbers >= 1, got {text!r}")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.run.runner", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    register(sub)
    a = p.parse_args(argv)
    return boundary.guarded("runner", lambda: a.func(a), boundary.inputs_of(a))


if __name__ == "__main__":
    sys.exit(main())
