"""Run experiments: one `swift sft` run per experiment, each in its own never-overwritten run folder.

`swiftbench run-all --hw h200 ...` (or `python -m experiments.runner run-all ...`) executes experiments/sft.ipynb
through papermill once per experiment of the matrix, skipping experiments that already have a complete run with the
same inputs (resumable after a kill). The notebook calls `prepare` and `execute` below; they can also be used
without a notebook. With --claims it runs the claims audit's experiments and capacity searches
(experiments/catalog.py, experiments/plan.py) instead; a `combine` experiment runs the recipe that
`swiftbench claims resolve` wrote for it (catalog.read_resolved). The runner measures nothing and judges nothing:
it imports only analysis.core and experiments.

Run folder: results/<hw>/<experiment>/<YYYYMMDD-HHMMSS>[-N]/ holding ms-swift's logging.jsonl and args.json
(output_dir is the run folder, --add_version false), plus
  run.json       status (running | ok | failed), failure reason, inputs, labels
  env.json       GPU, driver, CUDA, topology, CPU, RAM, package versions (experiments.gpu.environment)
  command.sh     the exact command line and environment it ran with
  model_config.json  the model's config.json (shapes for MFU; weights never land here)
  nvml.csv       GPU samples once a second
  stdout.log     swift's output
  sft.ipynb      the executed notebook
Checkpoint folders (adapter weights and optimizer states) are deleted after the run: results hold no
weights.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from analysis.core.errors import InputError
from experiments import catalog, gpu, recipes

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = Path(__file__).resolve().parent / "sft.ipynb"
CACHE = ROOT / ".cache"
DUMMY = "dummy"          # the architecture-exact random-weight stand-in of the recipe's model
DUMMY_TINY = "dummy:tiny"  # a tiny Qwen2-shaped model for CPU smoke tests
OOM_PATTERNS = ("CUDA out of memory", "OutOfMemoryError", "torch.OutOfMemoryError", "CUBLAS_STATUS_ALLOC_FAILED")


@dataclass
class RunSpec:
    """What one run is asked to do; everything that decides whether an earlier run already did it."""

    hw: str
    experiment: str
    model: str = "Qwen/Qwen2.5-7B-Instruct"
    data: str | None = None          # folder of local data files standing in for the hub datasets
    max_steps: int | None = None     # a cut run when set
    results_dir: str = "results"
    force_hw: bool = False
    timeout_s: float | None = None
    overrides: dict = field(default_factory=dict)  # extra swift flags (claims experiments, CPU dtype)
    recipe: str | None = None        # recipes.yaml experiment the flags start from (None: `experiment` itself)
    launcher: dict | None = None     # run through experiments/launch.py with these options (None: `swift sft`)

    def __post_init__(self):
        """A claims experiment (experiments/claims/) brings its recipe, overrides, launcher, steps and limit;
        what the caller gave explicitly wins (a CLI --max-steps, --set FLAG=VALUE, --timeout)."""
        if self.recipe is not None:
            return
        if self.experiment in recipes.load()["experiments"]:  # a matrix run: measured through the launcher
            if self.launcher is None:
                self.launcher = recipes.launcher(self.experiment)
            return
        definition = catalog.experiment(self.experiment)
        if definition is None:
            return
        self.recipe = definition["recipe"]
        self.overrides = {**(definition.get("overrides") or {}), **(self.overrides or {})}
        if self.launcher is None:
            self.launcher = dict(definition.get("launcher") or {})
        self.max_steps = self.max_steps or definition.get("max_steps")
        self.timeout_s = self.timeout_s or definition.get("timeout_s")

    @property
    def recipe_name(self) -> str:
        return self.recipe or self.experiment

    def key(self) -> dict:
        """Two runs with equal keys measure the same thing: the second is skipped."""
        key = {"experiment": self.experiment, "recipe": recipes.recipe_hash(self.recipe_name),
               "model": self.model, "data": "local" if self.data else "hub",
               "max_steps": self.max_steps or None, "overrides": self.overrides or {}}
        if self.recipe is not None:
            key["recipe_name"] = self.recipe
        if self.launcher is not None:
            key["launcher"] = self.launcher
        return key


# ------------------------------------------------------------------------------------------- folders


def _read_status(run_dir: Path) -> dict:
    try:
        return json.loads((run_dir / "run.json").read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def write_status(run_dir: Path, **changes) -> dict:
    """Update run.json atomically (a reader never sees half a file)."""
    status = {**_read_status(run_dir), **changes}
    tmp = run_dir / ".run.json.tmp"
    tmp.write_text(json.dumps(status, indent=2, default=str))
    os.replace(tmp, run_dir / "run.json")
    return status


def _pid_alive(pid: int | None, host: str | None) -> bool:
    if not pid or host != socket.gethostname():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def experiment_runs(spec: RunSpec) -> list[Path]:
    folder = Path(spec.results_dir) / spec.hw / spec.experiment
    return sorted(p for p in folder.glob("*") if (p / "run.json").is_file()) if folder.is_dir() else []


def find_complete(spec: RunSpec) -> Path | None:
    """The newest run of this spec that finished ok, else None. Stale 'running' runs are marked failed."""
    found = None
    for run_dir in experiment_runs(spec):
        status = _read_status(run_dir)
        if status.get("status") == "running" and not _pid_alive(status.get("pid"), status.get("host")):
            write_status(run_dir, status="failed", reason="interrupted (its process is gone)")
            continue
        if status.get("status") == "ok" and status.get("key") == spec.key():
            found = run_dir
    return found


def is_oom_status(status: dict) -> bool:
    return status.get("status") == "failed" and str(status.get("reason") or "").startswith("OOM")


def find_finished(spec: RunSpec) -> tuple[Path, str] | None:
    """(run folder, 'ok' | 'oom') of the newest run of this spec that trained or ran out of memory, else None.

    For claims experiments an OOM is a result (a capacity probe, GC off at bs16), not something to re-run."""
    found = None
    done = find_complete(spec)  # also marks stale 'running' runs as interrupted
    for run_dir in experiment_runs(spec):
        status = _read_status(run_dir)
        if status.get("key") != spec.key():
            continue
        if run_dir == done:
            found = (run_dir, "ok")
        elif is_oom_status(status):
            found = (run_dir, "oom")
    return found


def new_run_dir(spec: RunSpec) -> Path:
    """A fresh folder; an existing one is never reused."""
    base = Path(spec.results_dir) / spec.hw / spec.experiment
    base.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    for n in range(1000):
        run_dir = base / (stamp if n == 0 else f"{stamp}-{n}")
        try:
            run_dir.mkdir()
            return run_dir
        except FileExistsError:
            continue
    raise RuntimeError(f"no free run folder under {base}")


# ------------------------------------------------------------------------------------------- prepare


def _swift_version() -> str:
    import importlib.metadata as md

    try:
        return md.version("ms-swift")
    except md.PackageNotFoundError:
        raise InputError(None, "ms-swift is not installed (make install-offline, or pip install ms-swift)") from None


def resolve_model(model: str, device: str) -> tuple[str, bool, Path | None]:
    """(value for --model, dummy weights?, local folder or None). 'dummy' builds or reuses the stand-in."""
    if model in (DUMMY, DUMMY_TINY):
        from experiments import dummy

        tiny = model == DUMMY_TINY
        folder = CACHE / "models" / ("tiny" if tiny else "full") / dummy.MODEL_KEY
        config = dummy.tiny_qwen2_config() if tiny else dummy.qwen25_7b_config()
        out = dummy.build_dummy_model(config, folder, device=device)
        return str(out), True, out
    local = Path(model).expanduser()
    if local.is_dir():
        if not (local / "config.json").is_file():
            raise InputError(local, "model folder has no config.json")
        from experiments import dummy

        return str(local.resolve()), dummy.is_dummy(local), local.resolve()
    if model.startswith((".", "/")) or model.count("/") != 1:
        raise InputError(model, "no such model folder, and not a hub id like Qwen/Qwen2.5-7B-Instruct")
    return model, False, None


def prepare(spec: RunSpec, run_dir: Path, lib=None) -> dict:
    """Check the hardware, make the inputs, render the command and record everything before the run."""
    run_dir = Path(run_dir)
    write_status(run_dir, status="running", hw=spec.hw, experiment=spec.experiment, key=spec.key(),
                 spec=asdict(spec), pid=os.getpid(), host=socket.gethostname(),
                 started=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"))
    try:
        check = gpu.check_hardware(spec.hw, spec.force_hw, lib=lib)
        on_gpu = spec.hw != "cpu"
        device = "cuda" if on_gpu else "cpu"
        model_arg, dummy_weights, model_dir = resolve_model(spec.model, device)
        overrides = dict(spec.overrides)
        if not on_gpu:
            overrides.setdefault("torch_dtype", "float32")  # bf16 is refused on a CPU
        env_vars = {}
        datasets = None
        if spec.data:
            from experiments import localdata

            base = recipes.flags(spec.recipe_name)
            data_dir = CACHE / "data" / f"{spec.hw}-{spec.experiment}-{run_dir.name}"  # parallel runs never share it
            local = localdata.prepare_local_data(spec.data, data_dir, base.get("model_name"), base.get("model_author"))
            datasets = localdata.dataset_args(base["dataset"], local)
        if model_dir is not None:
            overrides.setdefault("check_model", False)  # nothing to check against a hub offline
        if model_dir is not None and spec.data:
            env_vars.update({"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "MODELSCOPE_OFFLINE": "1"})
        swift_version = _swift_version()
        cmd = recipes.render(spec.recipe_name, swift_version, output_dir=str(run_dir.resolve()), model=model_arg,
                             datasets=datasets, max_steps=spec.max_steps, overrides=overrides)
        if spec.recipe is not None:  # say which flags come from the claims experiment, not from the machine
            own = set((catalog.experiment(spec.experiment) or {}).get("overrides") or {})
            cmd["notes"] = [n.replace(": set by the runner", f": claims experiment {spec.experiment}")
                            if n.startswith("--") and n.split(" ", 1)[0][2:] in own else n for n in cmd["notes"]]
        launch_argv = None
        if spec.launcher is not None:  # in-process swift sft with a memory cap / profiler / ... (experiments/launch.py)
            from experiments.launch import option_argv

            launch_opts = option_argv(spec.launcher)
            launch_argv = [sys.executable, "-m", "experiments.launch", *launch_opts, "--", *cmd["argv"]]
            head = shlex.join(["python", "-m", "experiments.launch", *launch_opts, "--", "swift", "sft"])
            cmd["shell"] = head + cmd["shell"][len("swift sft"):]
            cmd["notes"].append(f"run in-process by experiments/launch.py {shlex.join(launch_opts)}".rstrip()
                                + (f" (claims experiment on recipe {spec.recipe})" if spec.recipe else ""))
        if model_dir is not None and (model_dir / "config.json").is_file():
            shutil.copy(model_dir / "config.json", run_dir / "model_config.json")
        env = {**gpu.environment(spec.hw, lib=lib), "gpu_check": check, "dummy_weights": dummy_weights}
        (run_dir / "env.json").write_text(json.dumps(env, indent=2))
        exports = "".join(f"export {k}={v}\n" for k, v in env_vars.items())
        (run_dir / "command.sh").write_text(
            "#!/usr/bin/env bash\n# Rendered by experiments/recipes.py for ms-swift " + swift_version + "\n"
            + "".join(f"# {n}\n" for n in cmd["notes"]) + exports + cmd["shell"] + "\n")
        labels = {"dummy_weights": dummy_weights, "offline_data": bool(spec.data),
                  "max_steps": spec.max_steps or None, "forced_hw": check["forced"], "swift_version": swift_version}
        # `command` stays the swift argv (what readers of run.json parse); the launcher's own line is beside it
        write_status(run_dir, **labels, command=cmd["argv"], notes=cmd["notes"],
                     **({"launch_command": launch_argv} if launch_argv else {}))
    except Exception as exc:
        write_status(run_dir, status="failed", reason=f"{type(exc).__name__}: {exc}")
        raise
    return {"spec": spec, "run_dir": run_dir, "argv": cmd["argv"], "launch_argv": launch_argv, "env": env_vars,
            "labels": labels, "max_steps_expected": spec.max_steps}


# ------------------------------------------------------------------------------------------- execute


def _failure_reason(rc: int | None, log_tail: str, timed_out: bool) -> str:
    if timed_out:
        return "timeout"
    if any(p in log_tail for p in OOM_PATTERNS):
        return "OOM: CUDA out of memory"
    if rc is not None and rc < 0:
        return f"killed by signal {-rc}"
    last = [ln for ln in log_tail.splitlines() if ln.strip()]
    err = next((ln for ln in reversed(last) if re.search(r"(Error|Exception)\b", ln)), last[-1] if last else "")
    return f"crash (exit code {rc}): {err.strip()[:300]}"


def _progress_from_log(log: Path, seen: int) -> tuple[int, int | None, int]:
    """(latest step, max steps, lines read) from logging.jsonl as it grows."""
    step, total = 0, None
    try:
        lines = log.read_text(encoding="utf-8").splitlines()
    except OSError:
        return step, total, seen
    for raw in lines[seen:]:
        m = re.search(r'"global_step/max_steps": "(\d+)/(\d+)"', raw)
        if m:
            step, total = int(m.group(1)), int(m.group(2))
    return step, total, len(lines)


def swift_argv(argv: list[str]) -> list[str]:
    """Run `swift` from the interpreter's own environment (a venv's bin is often not on a kernel's PATH)."""
    if argv[0] != "swift":
        return argv
    beside = Path(sys.executable).parent / "swift"
    if beside.is_file():
        return [str(beside), *argv[1:]]
    return [sys.executable, "-m", "swift.cli.main", *argv[1:]]


def execute(ctx: dict, progress: bool = True, lib=None) -> dict:
    """Run swift sft with NVML sampling, a progress bar, a time limit; record ok or failed with the reason."""
    from tqdm.auto import tqdm

    run_dir: Path = ctx["run_dir"]
    spec: RunSpec = ctx["spec"]
    env = {**os.environ, **ctx["env"], "PYTHONUNBUFFERED": "1"}
    argv = swift_argv(ctx["argv"])
    if ctx.get("launch_argv"):  # `python -m experiments.launch` must find this repository from any cwd
        argv = ctx["launch_argv"]
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    log = run_dir / "logging.jsonl"
    t0 = time.monotonic()
    timed_out = False
    bar = tqdm(total=spec.max_steps or None, desc=f"{spec.hw}/{spec.experiment}", unit="step", disable=not progress)
    sampler = gpu.Sampler(run_dir / "nvml.csv", lib=lib)
    with (run_dir / "stdout.log").open("w") as out, sampler:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        write_status(run_dir, swift_pid=proc.pid)
        seen = 0
        try:
            while proc.poll() is None:
                time.sleep(2)
                step, total, seen = _progress_from_log(log, seen)
                if total and bar.total != total:
                    bar.total = total
                if step > bar.n:
                    bar.update(step - bar.n)
                if spec.timeout_s and time.monotonic() - t0 > spec.timeout_s:
                    timed_out = True
                    os.killpg(proc.pid, signal.SIGTERM)
                    try:
                        proc.wait(30)
                    except subprocess.TimeoutExpired:
                        os.killpg(proc.pid, signal.SIGKILL)
        except BaseException:
            os.killpg(proc.pid, signal.SIGKILL)
            _drop_weights_and_data(run_dir)  # an interrupted run is kept, but never with weights or data
            write_status(run_dir, status="failed", reason="interrupted")
            raise
    rc = proc.wait()
    bar.close()
    wall = time.monotonic() - t0
    tail = (run_dir / "stdout.log").read_text(errors="replace")[-20000:]
    ok = rc == 0 and not timed_out and log.is_file() and '"log_history"' in log.read_text(encoding="utf-8")[-2_000_000:]
    _drop_weights_and_data(run_dir)
    reason = None if ok else _failure_reason(rc, tail, timed_out)
    return write_status(run_dir, status="ok" if ok else "failed", reason=reason, returncode=rc,
                        wall_s=round(wall, 1), nvml_rows=sampler.rows,
                        finished=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"))


def _drop_weights_and_data(run_dir: Path) -> None:
    """No weights and no training data in results: checkpoints, adapters, optimizer states, and ms-swift's copy of
    the eval split (the data may be licensed content that must not be committed)."""
    for ckpt in run_dir.glob("checkpoint-*"):
        shutil.rmtree(ckpt, ignore_errors=True)
    for name in ("adapter_model.safetensors", "optimizer.pt", "val_dataset.jsonl", "last-checkpoint"):
        (run_dir / name).unlink(missing_ok=True)


# ------------------------------------------------------------------------------------------- run-all


def run_notebook(spec: RunSpec, run_dir: Path, progress: bool = True) -> None:
    """Execute experiments/sft.ipynb for one run; the executed copy lands in the run folder."""
    import papermill as pm

    params = {"hw": spec.hw, "experiment": spec.experiment, "model": spec.model, "data": spec.data or "",
              "max_steps": spec.max_steps or 0, "results_dir": str(spec.results_dir), "run_dir": str(run_dir),
              "force_hw": spec.force_hw, "timeout_s": spec.timeout_s or 0,
              "overrides_json": json.dumps(spec.overrides),
              # a resolved combination's launcher differs from its definition's: the notebook must not re-derive it
              "launcher_json": json.dumps(spec.launcher) if spec.launcher is not None else ""}
    pm.execute_notebook(str(NOTEBOOK), str(run_dir / "sft.ipynb"), parameters=params, cwd=str(ROOT),
                        progress_bar=progress, log_output=False, kernel_name="python3")


LOCKS = ".locks"  # results/.locks/<hw>-<experiment>.lock: one runner per results folder and experiment at a time


@contextlib.contextmanager
def experiment_lock(spec: RunSpec):
    """Hold the lock of SPEC's experiment in its results folder (yields True), or yield False when another process
    holds it: two `run-all` on one results folder never train the same experiment at once. An OS file lock, so a
    killed runner leaves no stale lock behind."""
    import fcntl

    folder = Path(spec.results_dir) / LOCKS
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{spec.hw}-{spec.experiment}.lock"
    with open(path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        f.seek(0)
        f.truncate()
        f.write(f"{os.getpid()} {socket.gethostname()}\n")
        f.flush()
        try:
            yield True
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _run_one(spec: RunSpec, console, progress: bool, claims_mode: bool = False) -> dict:
    """One experiment under its lock: skip it when another runner is on it or when it is done (claims: an OOM counts
    as done), else run the notebook once."""
    with experiment_lock(spec) as held:
        if not held:
            lock = Path(spec.results_dir) / LOCKS / f"{spec.hw}-{spec.experiment}.lock"
            console.print(f"[yellow]busy[/] {spec.hw}/{spec.experiment}: another runner holds {lock} "
                          f"({lock.read_text().strip() or 'pid unknown'}); not started")
            return {"experiment": spec.experiment, "run_dir": None, "status": "busy", "outcome": "busy"}
        return _run_one_locked(spec, console, progress, claims_mode)


def _run_one_locked(spec: RunSpec, console, progress: bool, claims_mode: bool = False) -> dict:
    name, hw = spec.experiment, spec.hw
    if claims_mode:
        finished = find_finished(spec)
        if finished is not None:
            what = "complete" if finished[1] == "ok" else "OOM"
            console.print(f"[green]skip[/] {hw}/{name}: {what} run {finished[0]}")
            return {"experiment": name, "run_dir": str(finished[0]), "status": "skipped", "outcome": finished[1]}
    else:
        done = find_complete(spec)
        if done is not None:
            console.print(f"[green]skip[/] {hw}/{name}: complete run {done}")
            return {"experiment": name, "run_dir": str(done), "status": "skipped", "outcome": "ok"}
    run_dir = new_run_dir(spec)
    console.print(f"[bold]run[/] {hw}/{name} -> {run_dir}")
    try:
        run_notebook(spec, run_dir, progress)
    except Exception as exc:  # the notebook records the reason in run.json; keep going
        status = _read_status(run_dir)
        if status.get("status") in (None, "running"):
            write_status(run_dir, status="failed", reason=f"notebook: {type(exc).__name__}: {str(exc)[:300]}")
    status = _read_status(run_dir)
    colour = "green" if status.get("status") == "ok" else "yellow" if claims_mode and is_oom_status(status) else "red"
    console.print(f"[{colour}]{status.get('status')}[/] {hw}/{name}"
                  + (f": {status.get('reason')}" if status.get("reason") else ""))
    outcome = "ok" if status.get("status") == "ok" else "oom" if is_oom_status(status) else "failed"
    state = "oom" if claims_mode and outcome == "oom" else status.get("status")
    return {"experiment": name, "run_dir": str(run_dir), "status": state, "outcome": outcome}


def _run_search(name: str, hw: str, console, progress: bool, **kw) -> list[dict]:
    """A capacity search (experiments/claims/searches.yaml): probe per-device batches until one that trained sits
    next to an OOM."""
    results, outcomes = [], {}
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
    """Claims experiments (experiments/claims/): searches, combinations, blocked and package-gated ones.

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


def run_all(hw: str, experiments: list[str] | None = None, progress: bool = True, **kw) -> list[dict]:
    """Every experiment of the matrix for HW; complete ones are skipped, failed ones are kept and re-tried."""
    from rich.console import Console

    console = Console(stderr=True)
    names = experiments or recipes.experiments()
    return [_run_one(RunSpec(hw=hw, experiment=name, **kw), console, progress) for name in names]


def register(sub) -> None:
    """`run-all` (for analysis.cli's SUBCOMMAND_MODULES, and `python -m experiments.runner run-all`)."""
    r = sub.add_parser("run-all", help="every experiment of the matrix for one hardware class (or --claims)",
                       description="Run every experiment of the matrix (experiments/recipes.yaml) for one hardware "
                                   "class, or with --claims the claims audit's experiments; complete runs are skipped.")
    r.add_argument("--hw", required=True)
    r.add_argument("--model", default="Qwen/Qwen2.5-7B-Instruct",
                   help="hub id (default), a local model folder, 'dummy' (random weights, exact shapes)")
    r.add_argument("--data", default=None, help="folder with local stand-ins of the hub datasets")
    r.add_argument("--max-steps", type=int, default=None, help="cut runs of N optimizer steps")
    r.add_argument("--experiments", default=None,
                   help="comma-separated subset of experiments/recipes.yaml (with --claims: claims experiments and "
                        "searches of experiments/claims/, or plan:N for the plan's command N; default: the whole plan)")
    r.add_argument("--claims", action="store_true",
                   help="run claims experiments (experiments/claims/) instead of the matrix")
    r.add_argument("--results", default="results")
    r.add_argument("--force-hw", action="store_true", help="run even if the GPU is not HW (labelled forced)")
    r.add_argument("--timeout", type=float, default=None, help="seconds per run before it is killed")
    r.add_argument("--set", action="append", default=[], metavar="FLAG=VALUE",
                   help="extra swift flag for every run (part of the run's identity)")
    r.add_argument("--first-ok", action="store_true",
                   help="with --claims: stop at the first experiment that trains (candidates, fastest first); "
                        "plan commands marked first_ok do this by themselves")
    r.add_argument("--no-progress", action="store_true")
    r.set_defaults(func=run_command)


def run_command(a) -> int:
    """`run-all` with parsed arguments: 0 when every run is ok / skipped / OOM (claims) / blocked, else 1.
    Bad input raises InputError."""
    from analysis.core import hardware

    hardware.require(a.hw)
    names = a.experiments.split(",") if a.experiments else None
    if a.claims:
        from experiments import plan

        first_ok = a.first_ok or plan.plan_first_ok(names)
        names = plan.expand(names)
    else:
        first_ok = False
        for n in names or []:
            recipes.flags(n)
    if a.data and not Path(a.data).is_dir():
        raise InputError(a.data, "data folder does not exist")
    overrides = {}
    for item in a.set:
        k, sep, v = item.partition("=")
        if not sep:
            raise InputError(None, f"--set wants FLAG=VALUE, got {item!r}")
        overrides[k.lstrip("-")] = v
    common = dict(progress=not a.no_progress, model=a.model, data=a.data, max_steps=a.max_steps,
                  results_dir=a.results, force_hw=a.force_hw, timeout_s=a.timeout, overrides=overrides)
    if a.claims:
        results = run_claims(a.hw, names, first_ok=first_ok, **common)
    else:
        results = run_all(a.hw, names, **common)
    return 0 if all(r["status"] in ("ok", "skipped", "oom", "blocked") for r in results) else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.runner", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    register(sub)
    a = p.parse_args(argv)
    try:
        return a.func(a)
    except InputError as exc:
        print(f"runner: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
