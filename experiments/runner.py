"""Run experiments: one `swift sft` run per experiment, each in its own never-overwritten run folder.

`swiftbench run-all --hw h200 ...` (or `python -m experiments.runner run-all ...`) executes experiments/sft.ipynb
through papermill once per experiment of the matrix, skipping experiments that already have a complete run with the
same inputs (resumable after a kill). The notebook calls `prepare` and `execute` below; they can also be used
without a notebook. With --claims it runs the claims audit's experiments and capacity searches
(experiments/catalog.py, experiments/plan.py) instead; a `combine` experiment runs the recipe that
`swiftbench claims resolve` wrote for it (catalog.read_resolved). The runner measures nothing and judges nothing:
it imports only analysis.core and experiments.

Run folder: results/<hw>/<experiment>/<YYYYMMDD-HHMMSS>[-N]/ holding ms-swift's logging.jsonl and args.json
(--output_dir is a cache folder outside results/, .cache/checkpoints/..., whose logging.jsonl, args.json, runs/ ...
link here: checkpoints never land in results/; --add_version false), plus
  run.json       status (running | ok | failed), failure reason, inputs, labels, the runner and the training process
                 (`runner`, `training`: pid, process group, start time), and `resumes` (when, from which step, the
                 log lines before it, seconds to the first resumed step)
  env.json       GPU, driver, CUDA, topology, CPU, RAM, package versions (experiments.gpu.environment)
  command.sh     the exact command line and environment it ran with
  model_config.json  the model's config.json (shapes for MFU; weights never land here)
  nvml.csv       GPU samples once a second
  stdout.log     swift's output
  sft.ipynb      the executed notebook
The training runs under experiments/reaper.py (its own process group, stopped with whatever ends the runner: SIGINT,
SIGTERM, SIGHUP, or a SIGKILL that leaves the kernel, and so the supervisor, without a parent). An interrupted run
keeps its cache folder; the next run-all resumes it there from its last complete checkpoint (--resume_from_checkpoint),
in the same run folder. A finished run's cache folder is deleted: results hold no weights.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import functools
import hashlib
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

from analysis.core import runfiles
from analysis.core.errors import InputError
from experiments import catalog, gpu, quick, reaper, recipes

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = Path(__file__).resolve().parent / "sft.ipynb"
CACHE = ROOT / ".cache"
DUMMY = "dummy"          # the architecture-exact random-weight stand-in of the recipe's model
DUMMY_TINY = "dummy:tiny"  # a tiny Qwen2-shaped model for CPU smoke tests
PARALLEL = ("ddp", "zero2", "zero3")  # how a multi-GPU run shares its work (zero*: ms-swift's DeepSpeed configs)
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
    gpus: int = 1                    # data-parallel processes on this host (NPROC_PER_NODE); global batch kept
    parallel: str = "ddp"            # ddp | zero2 | zero3 (ms-swift's shipped DeepSpeed configs)
    budget_s: float | None = None    # a quick run within this many seconds (experiments/quick.py)

    def __post_init__(self):
        """A claims experiment (experiments/claims/) brings its recipe, overrides, launcher, steps and limit;
        what the caller gave explicitly wins (a CLI --max-steps, --set FLAG=VALUE, --timeout)."""
        if not isinstance(self.gpus, int) or self.gpus < 1:
            raise InputError(None, f"--gpus wants a whole number of GPUs >= 1, got {self.gpus!r}")
        if self.parallel not in PARALLEL:
            raise InputError(None, f"--parallel {self.parallel!r}: use one of {', '.join(PARALLEL)}")
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

    _resolve = __post_init__

    def __post_init__(self):
        """The experiment's definition (above), then a quick run's launcher options and logging on top of it."""
        self._resolve()
        quick.apply(self)

    @property
    def recipe_name(self) -> str:
        return self.recipe or self.experiment

    @property
    def layout(self) -> str:
        """'' for one GPU with plain DDP (every run made before multi-GPU support), else e.g. '2gpu' or
        '2gpu-zero3': part of the run folder's name and of the tables' grouping."""
        if self.gpus == 1 and self.parallel == "ddp":
            return ""
        return f"{self.gpus}gpu" + ("" if self.parallel == "ddp" else f"-{self.parallel}")

    def key(self) -> dict:
        """Two runs with equal keys measure the same thing: the second is skipped."""
        key = {"experiment": self.experiment, "recipe": recipes.recipe_hash(self.recipe_name),
               "model": self.model, "data": "local" if self.data else "hub",
               "max_steps": self.max_steps or None, "overrides": self.overrides or {}}
        if self.recipe is not None:
            key["recipe_name"] = self.recipe
        if self.launcher is not None:
            key["launcher"] = self.launcher
        if self.layout:  # absent for one GPU, so runs made before multi-GPU support keep their keys
            key["gpus"], key["parallel"] = self.gpus, self.parallel
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


def parallel_overrides(spec: RunSpec, base_flags: dict) -> dict:
    """The swift flags that spread SPEC over its GPUs with the global batch kept: grad-accum divided by the GPU
    count, else the per-device batch (per-device batch x grad-accum x GPUs stays the recipe's), and ZeRO through ms-swift's shipped DeepSpeed
    configs. A grad-accum the GPU count does not divide would change the global batch: refused."""
    out = {}
    if spec.gpus > 1:
        flags = {**base_flags, **spec.overrides}
        ga = int(flags.get("gradient_accumulation_steps", 1))
        bs = int(flags.get("per_device_train_batch_size", 1))
        if ga % spec.gpus == 0:
            out["gradient_accumulation_steps"] = ga // spec.gpus
        elif bs % spec.gpus == 0:  # grad-accum 1 (bs16): each GPU takes its share of the batch
            out["per_device_train_batch_size"] = bs // spec.gpus
        else:
            raise InputError(None, f"{spec.experiment}: neither grad-accum {ga} nor per-device batch {bs} divides by "
                                   f"{spec.gpus} GPUs (the global batch would change)")
    if spec.parallel != "ddp":
        out["deepspeed"] = spec.parallel
    return out


def gpu_visibility(count: int, lib=None) -> dict:
    """CUDA_VISIBLE_DEVICES for a run on COUNT GPUs: the first COUNT of those this process may use. Without it a
    one-process run on a host with more GPUs is spread over all of them by ms-swift (device_map='auto': model
    parallel, not a one-GPU run), so a 1-GPU run on a 2-GPU host would measure something else."""
    given = [x.strip() for x in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if x.strip()]
    indices = given or [str(g["index"]) for g in gpu.gpus(lib)]
    if len(indices) <= count:
        return {}
    return {"CUDA_VISIBLE_DEVICES": ",".join(indices[:count])}


def _run_alive(status: dict) -> bool:
    """Is the process that runs this run still there? Its runner (run.json `runner`), else its kernel (`pid`), each
    told apart from a later process with the same pid by its start time where run.json has it (pids wrap around
    within minutes on a busy host)."""
    if status.get("host") != socket.gethostname():
        return False
    runner = status.get("runner") or {}
    if runner.get("pid") and runner.get("started") is not None:
        return reaper.alive(runner["pid"], runner["started"])
    if status.get("pid_started") is not None:
        return reaper.alive(status.get("pid"), status["pid_started"])
    return _pid_alive(status.get("pid"), status.get("host"))


def experiment_runs(spec: RunSpec) -> list[Path]:
    folder = Path(spec.results_dir) / spec.hw / spec.experiment
    return sorted(p for p in folder.glob("*") if (p / "run.json").is_file()) if folder.is_dir() else []


def find_complete(spec: RunSpec) -> Path | None:
    """The newest run of this spec that finished ok, else None. Stale 'running' runs are marked failed."""
    found = None
    for run_dir in experiment_runs(spec):
        status = _read_status(run_dir)
        if status.get("status") == "running" and not _run_alive(status):
            write_status(run_dir, status="failed", reason="interrupted (its process is gone)")
            continue
        if status.get("status") == "ok" and status.get("key") == spec.key() and _made_here(run_dir):
            found = run_dir
    return found


@functools.lru_cache(maxsize=1)
def _this_host_id() -> str | None:
    from experiments import host

    try:
        return host.fingerprint()["host_id"]
    except Exception:  # noqa: BLE001 - no fingerprint: every earlier run counts, as before host ids
        return None


def _made_here(run_dir: Path) -> bool:
    """Whether RUN_DIR was made on this host (env.json's host id), so that it can stand for a run made now: a
    host-bound step moves with the host, and a ratio (a scaling efficiency, a speed-up) wants both runs from one
    host. Unknown on either side (runs from before host ids, no fingerprint here): it counts."""
    here = _this_host_id()
    if here is None:
        return True
    theirs = runfiles.host_id(runfiles.read_env(run_dir))
    return theirs is None or theirs == here


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
    """A fresh folder; an existing one is never reused. Its name ends in the host id (env.json's), so trees made on
    two machines merge without a collision (swiftbench tables A B, make fleet-collect)."""
    from experiments import host

    base = Path(spec.results_dir) / spec.hw / spec.experiment
    base.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S") + (f"-{spec.layout}" if spec.layout else "")
    hid = host.fingerprint()["host_id"]
    stamp += f"-{hid}" if hid else ""
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
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    before = _read_status(run_dir)
    resume = before.get("resume_request")  # the runner's: an interrupted run goes on from its last checkpoint
    common = dict(status="running", hw=spec.hw, experiment=spec.experiment, key=spec.key(), spec=asdict(spec),
                  pid=os.getpid(), pid_started=reaper.start_time(os.getpid()), host=socket.gethostname(),
                  work_dir=str(work_dir(run_dir)), **_runner_info())
    if resume:  # the same run folder; its log goes on where the interrupted attempt's last whole line ended
        entry = {"at": now, "from_step": resume["step"], "checkpoint": resume["checkpoint"],
                 "log_lines_before": trim_torn_tail(run_dir / "logging.jsonl"), "after": before.get("reason")}
        trim_torn_tail(run_dir / "tokens.jsonl")
        trim_torn_tail(run_dir / "gpm.jsonl")
        resume = {**resume, "log_lines_before": entry["log_lines_before"]}
        write_status(run_dir, **common, reason=None, resume_request=None,
                     resumes=[*(before.get("resumes") or []), entry])
    else:
        write_status(run_dir, **common, started=now)
    try:
        check = gpu.check_hardware(spec.hw, spec.force_hw, lib=lib, count=spec.gpus)
        on_gpu = spec.hw != "cpu"
        device = "cuda" if on_gpu else "cpu"
        model_arg, dummy_weights, model_dir = resolve_model(spec.model, device)
        overrides = {**dict(spec.overrides), **parallel_overrides(spec, recipes.flags(spec.recipe_name))}
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
        if on_gpu:
            env_vars.update(gpu_visibility(spec.gpus, lib=lib))
        swift_version = _swift_version()
        work = work_dir(run_dir)  # checkpoints and the eval split go there; the log and args.json link back here
        link_outputs(work, run_dir)
        if resume:
            overrides["resume_from_checkpoint"] = resume["checkpoint"]
        cmd = recipes.render(spec.recipe_name, swift_version, output_dir=str(work), model=model_arg,
                             datasets=datasets, max_steps=spec.max_steps, overrides=overrides)
        cmd["notes"].append("--output_dir is a cache folder (checkpoints stay out of results/); logging.jsonl, "
                            "args.json, tokens.jsonl, profile.json, launch.json, schedule.jsonl, gpm.jsonl, runs/ and images/ "
                            "there link into the run folder")
        if spec.recipe is not None:  # say which flags come from the claims experiment, not from the machine
            own = set((catalog.experiment(spec.experiment) or {}).get("overrides") or {})
            cmd["notes"] = [n.replace(": set by the runner", f": claims experiment {spec.experiment}")
                            if n.startswith("--") and n.split(" ", 1)[0][2:] in own else n for n in cmd["notes"]]
        launch_argv = None
        if spec.launcher is not None:  # in-process swift sft with a memory cap / profiler / ... (experiments/launch.py)
            from experiments.launch import option_argv

            launch_opts = option_argv(spec.launcher)
            # several GPUs: torchrun starts one launcher per GPU, as `NPROC_PER_NODE=N swift sft` starts one trainer
            spawn = ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(spec.gpus)] \
                if spec.gpus > 1 else []
            launch_argv = [sys.executable, *spawn, "-m", "experiments.launch", *launch_opts, "--", *cmd["argv"]]
            head = shlex.join(["python", *spawn, "-m", "experiments.launch", *launch_opts, "--", "swift", "sft"])
            cmd["shell"] = head + cmd["shell"][len("swift sft"):]
        elif spec.gpus > 1:  # ms-swift's own multi-GPU launch: its CLI runs torchrun when NPROC_PER_NODE is set
            env_vars["NPROC_PER_NODE"] = str(spec.gpus)
            cmd["shell"] = f"NPROC_PER_NODE={spec.gpus} " + cmd["shell"]
            cmd["notes"].append(f"run in-process by experiments/launch.py {shlex.join(launch_opts)}".rstrip()
                                + (f" (claims experiment on recipe {spec.recipe})" if spec.recipe else ""))
        if model_dir is not None and (model_dir / "config.json").is_file():
            shutil.copy(model_dir / "config.json", run_dir / "model_config.json")
        if not (resume and (run_dir / "env.json").is_file()):  # a resumed run keeps its first attempt's
            env = {**gpu.environment(spec.hw, lib=lib), "gpu_check": check, "dummy_weights": dummy_weights}
            (run_dir / "env.json").write_text(json.dumps(env, indent=2))
        exports = "".join(f"export {k}={v}\n" for k, v in env_vars.items() if k != "NPROC_PER_NODE")  # on the line
        (run_dir / "command.sh").write_text(
            "#!/usr/bin/env bash\n# Rendered by experiments/recipes.py for ms-swift " + swift_version + "\n"
            + "".join(f"# {n}\n" for n in cmd["notes"]) + exports + cmd["shell"] + "\n")
        labels = {"dummy_weights": dummy_weights, "offline_data": bool(spec.data), "gpus": spec.gpus,
                  "parallel": spec.parallel,
                  "max_steps": spec.max_steps or None, "forced_hw": check["forced"], "swift_version": swift_version}
        # `command` stays the swift argv (what readers of run.json parse); the launcher's own line is beside it
        write_status(run_dir, **labels, command=cmd["argv"], notes=cmd["notes"],
                     **({"launch_command": launch_argv} if launch_argv else {}))
    except Exception as exc:
        write_status(run_dir, status="failed", reason=f"{type(exc).__name__}: {exc}")
        raise
    return {"spec": spec, "run_dir": run_dir, "argv": cmd["argv"], "launch_argv": launch_argv, "env": env_vars,
            "labels": labels, "max_steps_expected": spec.max_steps, "resume": resume}


# ------------------------------------------------------------------------------------------- execute


# what the supervisor prints when it stops a training whose runner (or notebook kernel) is gone (experiments/reaper.py)
REAPER_STOP = re.compile(r"^reaper: (.+): stopping the training", re.M)


def _failure_reason(rc: int | None, log_tail: str, timed_out: bool, runner_gone: int | None = None) -> str:
    """Why a training ended badly. A training its supervisor stopped because the runner died (RUNNER_GONE: the dead
    runner's pid, as this kernel sees it; else the supervisor's line in the log) is interrupted, whatever exit code
    ms-swift then gave (a SIGKILLed runner whose kernel outlived it: the run is resumed, not failed)."""
    if timed_out:
        return "timeout"
    if runner_gone is not None:
        return f"{INTERRUPTED} (the runner {runner_gone} is gone)"
    if any(p in log_tail for p in OOM_PATTERNS):
        return "OOM: CUDA out of memory"
    stopped = REAPER_STOP.search(log_tail)
    if stopped:
        return f"{INTERRUPTED} (the supervisor stopped the training: {stopped[1]})"
    if rc is not None and rc < 0:
        return f"killed by signal {-rc}"
    last = [ln for ln in log_tail.splitlines() if ln.strip()]
    err = next((ln for ln in reversed(last) if re.search(r"(Error|Exception)\b", ln)), last[-1] if last else "")
    return f"crash (exit code {rc}): {err.strip()[:300]}"


def _progress_from_log(log: Path, seen: int) -> tuple[int, int | None, int]:
    """(latest step, max steps, lines read) from logging.jsonl as it grows."""
    step, total = 0, None
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()  # a line may be half written
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
    resume = ctx.get("resume")
    if resume and (run_dir / "nvml.csv").is_file():  # the interrupted attempt's samples stay beside the new ones
        os.replace(run_dir / "nvml.csv", run_dir / f"nvml.{len(_read_status(run_dir).get('resumes') or [])}.csv")
    sampler = gpu.Sampler(run_dir / "nvml.csv", lib=lib)
    with (run_dir / "stdout.log").open("a" if resume else "w") as out, sampler:
        t_wall = time.time()
        proc = _start_supervised(argv, out, env)
        write_status(run_dir, training=_training_info(proc.pid))
        seen = resume["log_lines_before"] if resume else 0  # a resume's first step is the first line after these
        try:
            while proc.poll() is None:
                time.sleep(0.25 if resume and "first_step_s" not in resume else 2)
                step, total, seen = _progress_from_log(log, seen)
                if resume and "first_step_s" not in resume and step > resume["step"]:
                    _record_first_resumed_step(run_dir, log, step, t_wall, resume)
                if total and bar.total != total:
                    bar.total = total
                if step > bar.n:
                    bar.update(step - bar.n)
                if spec.timeout_s and time.monotonic() - t0 > spec.timeout_s:
                    timed_out = True
                    reaper.stop_group(proc.pid, grace_s=30, root=proc.pid)
        except BaseException:
            reaper.stop_group(proc.pid, grace_s=10, root=proc.pid)
            _drop_weights_and_data(run_dir)  # an interrupted run is kept, but never with weights or data
            write_status(run_dir, status="failed", reason=INTERRUPTED)
            raise
    rc = proc.wait()
    bar.close()
    wall = time.monotonic() - t0
    tail = (run_dir / "stdout.log").read_text(errors="replace")[-20000:]
    ok = rc == 0 and not timed_out and log.is_file() and '"log_history"' in log.read_text(encoding="utf-8")[-2_000_000:]
    _drop_weights_and_data(run_dir)
    runner = _runner_info().get("runner")
    gone = runner["pid"] if runner and not reaper.alive(runner["pid"], runner["started"]) else None
    reason = None if ok else _failure_reason(rc, tail, timed_out, runner_gone=gone)
    if not str(reason or "").startswith(INTERRUPTED):  # finished or failed for good: nothing to resume from
        remove_work_dir(run_dir)
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
    for name in LINKED_DIRS:  # made for ms-swift's links; nothing was written into them
        with contextlib.suppress(OSError):
            (run_dir / name).rmdir()


# ------------------------------------------------------------------------------------------- faults and resumption
#
# ms-swift writes everything into --output_dir: its log, args.json and TensorBoard events, and also checkpoints
# (adapters, optimizer states) and its copy of the eval split, which must never sit in results/ (a SIGKILLed runner
# cleans nothing up). So output_dir is a cache folder outside results/ (work_dir), and the names below are links there
# into the run folder: the measurements land in results/ as they are written, weights and data never do. An allow
# list on purpose: a file written there that is not named here stays in the cache (a new measurement file of the
# launcher must be added), so nothing unknown, such as a copy of the data, ever reaches results/.

CHECKPOINTS = CACHE / "checkpoints"
LINKED_FILES = ("logging.jsonl", "args.json", "tokens.jsonl", "profile.json", "launch.json", "schedule.jsonl",
                "gpm.jsonl")
LINKED_DIRS = ("runs", "images")
INTERRUPTED = "interrupted"  # the failure reason of a run stopped from outside: it is resumed, not started again


RUNNER_ENV = "SWIFTBENCH_RUNNER"  # "<pid>:<start time>" of the run-all process, for the kernel it starts
REAPER = Path(__file__).resolve().parent / "reaper.py"


def _runner_info() -> dict:
    """run.json's `runner`: the run-all process that owns this run (what the orphan check asks about)."""
    pid, _, started = os.environ.get(RUNNER_ENV, "").partition(":")
    if not pid.isdigit():
        return {}
    return {"runner": {"pid": int(pid), "started": int(started) if started.isdigit() else None}}


def _start_supervised(argv: list[str], out, env: dict) -> subprocess.Popen:
    """ARGV under experiments/reaper.py, the leader of a new session and process group that takes the whole
    training down when this process (the kernel) or the runner dies (a SIGKILLed runner cannot do it itself)."""
    watch = []
    runner = _runner_info().get("runner")
    if runner:
        watch = ["--watch", f"{runner['pid']}:{runner['started']}" if runner["started"] else str(runner["pid"])]
    return subprocess.Popen([sys.executable, str(REAPER), "--grace", "20", *watch, "--", *argv], stdout=out,
                            stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _training_info(pid: int) -> dict:
    """run.json's `training`: the supervisor, leader of the training's process group (pgid = pid), and what tells
    this process apart from a later one with the same pid (its start time, this boot)."""
    return {"pid": pid, "pgid": pid, "started": reaper.start_time(pid), "host": socket.gethostname(),
            "boot_id": reaper.boot_id()}


def _record_first_resumed_step(run_dir: Path, log: Path, step: int, t_wall: float, resume: dict) -> None:
    """Seconds from the resumed process's start to the log line of its first step (the line's write time: the log
    file's mtime when the runner sees it, polled every 0.25 s until then), into the resume's entry in run.json."""
    try:
        written = log.stat().st_mtime
    except OSError:
        written = time.time()
    resume["first_step_s"] = round(max(written, t_wall) - t_wall, 2)
    status = _read_status(run_dir)
    resumes = status.get("resumes") or [{}]
    resumes[-1] = {**resumes[-1], "first_step": step, "first_step_s": resume["first_step_s"],
                   "first_step_seen_s": round(time.time() - t_wall, 2)}
    write_status(run_dir, resumes=resumes)


def work_dir(run_dir: Path) -> Path:
    """The run's --output_dir: .cache/checkpoints/<hw>-<experiment>-<run>-<hash of the run folder's path>."""
    run_dir = Path(run_dir).resolve()
    tag = hashlib.sha256(str(run_dir).encode()).hexdigest()[:10]
    return CHECKPOINTS / f"{'-'.join(run_dir.parts[-3:])}-{tag}"


def remove_work_dir(run_dir: Path) -> bool:
    """Delete RUN_DIR's cache folder: the one path the runner ever deletes wholesale, derived by work_dir() and
    checked to be a real folder directly inside CHECKPOINTS after resolving every link. True when it was removed."""
    work = work_dir(run_dir)
    root = CHECKPOINTS.resolve()
    if work.is_symlink() or not work.is_dir() or work.resolve().parent != root:
        return False
    shutil.rmtree(work, ignore_errors=True)
    return True


def link_outputs(work: Path, run_dir: Path) -> None:
    """WORK/<name> -> RUN_DIR/<name> for what belongs in results (a link that exists is replaced)."""
    work.mkdir(parents=True, exist_ok=True)
    for name in LINKED_FILES + LINKED_DIRS:
        target = Path(run_dir).resolve() / name
        if name in LINKED_DIRS:
            target.mkdir(exist_ok=True)
        link = work / name
        if link.is_symlink():
            link.unlink()
        elif link.exists():
            continue
        link.symlink_to(target)


def last_checkpoint(work: Path) -> tuple[Path, int] | None:
    """(folder, step) of the newest complete checkpoint in WORK: transformers writes trainer_state.json last, so a
    checkpoint whose trainer_state.json reads as JSON was written to the end."""
    best = None
    for d in Path(work).glob("checkpoint-*"):
        m = re.fullmatch(r"checkpoint-(\d+)", d.name)
        if not m or d.is_symlink() or (best and int(m[1]) <= best[1]):
            continue
        try:
            json.loads((d / "trainer_state.json").read_text())
        except (OSError, ValueError):
            continue
        best = (d, int(m[1]))
    return best


def find_resumable(spec: RunSpec) -> dict | None:
    """The newest run of SPEC that was interrupted and left a complete checkpoint: {run_dir, checkpoint, step}.
    Interrupted runs without one lose their cache folder (they start again in a new run folder)."""
    for run_dir in reversed(experiment_runs(spec)):
        status = _read_status(run_dir)
        if status.get("key") != spec.key() or status.get("status") != "failed" \
                or not str(status.get("reason") or "").startswith((INTERRUPTED, "killed by signal")):
            continue
        work = work_dir(run_dir)  # derived here, never run.json's `work_dir`: a merged tree's run.json names any path
        found = last_checkpoint(work) if work.is_dir() else None
        if found is not None:
            return {"run_dir": run_dir, "checkpoint": str(found[0]), "step": found[1]}
        what = sorted(p.name for p in work.glob("checkpoint-*")) if work.is_dir() else "no cache folder"
        print(f"interrupted run {run_dir} left no complete checkpoint ({what or 'none'}): a new run starts",
              file=sys.stderr, flush=True)
        remove_work_dir(run_dir)
    return None


def trim_torn_tail(path: Path) -> int:
    """Cut a last line that has no newline (a process killed while writing it) off PATH, so that lines appended on a
    resume start on a line of their own; returns the lines left."""
    try:
        with open(path, "rb+") as f:
            data = f.read()
            keep = data.rfind(b"\n") + 1
            if keep < len(data):
                f.truncate(keep)
            return data.count(b"\n")
    except FileNotFoundError:
        return 0


def _owner_alive(status: dict) -> bool:
    """Is the runner (or, for runs made before run.json named it, the notebook kernel) of a run still alive?"""
    owner = status.get("runner") or {"pid": status.get("pid"), "started": status.get("pid_started")}
    return reaper.alive(owner.get("pid"), owner.get("started"))


def find_orphans(results_dir: str | Path) -> list[tuple[Path, dict, str | None]]:
    """(run folder, run.json's `training`, why it cannot be verified or None) of every run of this host that says
    `running` while its runner is gone and its training may still run: a training an earlier runner left behind.

    Only a training that reaper.is_supervisor verifies (live pid with the recorded start time and boot id, leading
    its group, running reaper.py) may be stopped; a run.json that names a live pid or group it cannot verify (runs
    made before the supervisor recorded `training` name a bare `swift_pid`) is reported, never signalled."""
    out = []
    for status_file in sorted(Path(results_dir).glob("*/*/*/run.json")):
        status = _read_status(status_file.parent)
        if status.get("status") != "running" or status.get("host") != socket.gethostname():
            continue
        training = status.get("training")
        if not isinstance(training, dict):
            legacy = status.get("swift_pid")
            training = {"pid": legacy, "pgid": legacy} if isinstance(legacy, int) else None
        if not training or (training.get("boot_id") and training["boot_id"] != reaper.boot_id()):
            continue
        if _owner_alive(status):
            continue
        why = reaper.is_supervisor(training)
        if why is None:
            out.append((status_file.parent, training, None))
            continue
        leader, pgid = training.get("pid"), training.get("pgid")
        leader_alive = isinstance(leader, int) and reaper.alive(leader, training.get("started")
                                                               if isinstance(training.get("started"), int) else None)
        if leader_alive or (isinstance(pgid, int) and not reaper.alive(leader if isinstance(leader, int) else None)
                            and reaper.group_alive(pgid)):
            out.append((status_file.parent, training, why))
    return out


def check_orphans(results_dir: str | Path, kill: bool, console=None) -> None:
    """Before anything starts: a training left behind by an earlier runner is reported (InputError: nothing starts
    beside it), or with KILL stopped and its run marked interrupted (it is then resumed like any interrupted run).
    A pid or process group that cannot be verified as that training is never signalled, KILL or not."""
    for run_dir, training, why in find_orphans(results_dir):
        pgid = training.get("pgid") or training.get("pid")
        if why is not None:
            raise InputError(run_dir / "run.json", f"names live process group {pgid} as its training, which cannot be "
                                                   f"verified ({why}): nothing was signalled; stop it yourself if it "
                                                   f"is yours, or mark the run failed")
        if not kill:
            raise InputError(run_dir, f"the training of an earlier runner is still running (process group {pgid}, "
                                      f"whose runner is gone): stop it (kill -TERM -- -{pgid}) or run again with "
                                      f"--kill-orphans")
        reaper.stop_group(pgid, grace_s=10, root=training.get("pid"))
        write_status(run_dir, status="failed", reason=f"{INTERRUPTED} (left behind by an earlier runner; stopped by "
                     "--kill-orphans)", finished=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"))
        if console is not None:
            console.print(f"[yellow]stopped[/] the training an earlier runner left behind: {run_dir} "
                          f"(process group {pgid})")


def stop_run(run_dir: Path, why: str) -> None:
    """Stop what RUN_DIR's run started (this runner's notebook kernel first, so that it writes nothing after us; then
    the training's process group) and mark it failed: interrupted."""
    status = _read_status(run_dir)
    kernel = status.get("pid")
    if kernel and kernel != os.getpid() and reaper.alive(kernel) and (reaper._stat(kernel) or [b"", b"0"])[1] \
            == str(os.getpid()).encode():
        with contextlib.suppress(OSError):
            os.kill(kernel, signal.SIGKILL)
    training = status.get("training") or {}
    if reaper.is_supervisor(training) is None:  # only the supervisor this run recorded, never what has its pid now
        reaper.stop_group(training["pgid"], grace_s=5, root=training.get("pid"))  # `timeout -k 20` allows 20 s
    _drop_weights_and_data(run_dir)
    if status.get("status") in (None, "running"):
        write_status(run_dir, status="failed", reason=f"{INTERRUPTED} ({why})",
                     finished=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"))


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP to the runner, raised like Ctrl-C so that one path stops the run (stop_run)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


_STOPPING: dict = {"run_dir": None, "done": False}  # the run the runner is on (set around run_notebook)


def _raise_interrupted(signum, _frame):
    """SIGINT / SIGTERM / SIGHUP to the runner: stop the current run right here, before papermill's clean-up talks to
    a kernel that is being shut down (its tracebacks), then unwind as Ctrl-C does. A second signal is ignored."""
    if _STOPPING["done"]:
        return
    _STOPPING["done"] = True
    if _STOPPING["run_dir"] is not None:
        stop_run(_STOPPING["run_dir"], f"the runner got {signal.Signals(signum).name}")
    raise Interrupted(signum)


def _follow_make() -> None:
    """Under `make run-all` (MAKELEVEL is set), a SIGKILL of make reaches the runner as SIGTERM (PR_SET_PDEATHSIG),
    so the training stops with it; a runner started from a shell outlives its shell (nohup) as before."""
    if os.environ.get("MAKELEVEL") and os.getppid() != 1:
        reaper._prctl(reaper.PR_SET_PDEATHSIG, signal.SIGTERM)


# ------------------------------------------------------------------------------------------- run-all


def run_notebook(spec: RunSpec, run_dir: Path, progress: bool = True) -> None:
    """Execute experiments/sft.ipynb for one run; the executed copy lands in the run folder."""
    import papermill as pm

    params = {"hw": spec.hw, "experiment": spec.experiment, "model": spec.model, "data": spec.data or "",
              "max_steps": spec.max_steps or 0, "results_dir": str(spec.results_dir), "run_dir": str(run_dir),
              "force_hw": spec.force_hw, "timeout_s": spec.timeout_s or 0,
              "overrides_json": json.dumps(spec.overrides),
              # a resolved combination's launcher differs from its definition's: the notebook must not re-derive it
              "launcher_json": json.dumps(spec.launcher) if spec.launcher is not None else "",
              "gpus": spec.gpus, "parallel": spec.parallel}
    # the kernel inherits it: run.json names this process as the run's owner (whatever an ancestor had set)
    os.environ[RUNNER_ENV] = f"{os.getpid()}:{reaper.start_time(os.getpid()) or ''}"
    # the console shows training progress (watch_progress), not notebook cells; the kernel's own warnings (e.g.
    # ipykernel's "running over TCP without encryption") stay off it
    with watch_progress(run_dir, spec, enabled=progress):
        pm.execute_notebook(str(NOTEBOOK), str(run_dir / "sft.ipynb"), parameters=params, cwd=str(ROOT),
                            progress_bar=False, log_output=False, kernel_name="python3",
                            extra_arguments=["--IPKernelApp.log_level=CRITICAL"])


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
        log = Path(run_dir) / "logging.jsonl"
        while not stop.wait(period_s):
            new, total, seen = _progress_from_log(log, seen)
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
    killed runner leaves no stale lock behind. Yields the OSError when the results folder cannot be written."""
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
        status = _read_status(run_dir)
        if status.get("key") == spec.key() and (status.get("status") == "ok" or claims_mode and is_oom_status(status)):
            console.print(f"[green]skip[/] {spec.hw}/{spec.experiment}: complete run {run_dir} (read-only results)")
            return {"experiment": spec.experiment, "run_dir": str(run_dir), "status": "skipped",
                    "outcome": "ok" if status.get("status") == "ok" else "oom"}
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
    else:
        done = find_complete(spec)
        if done is not None:
            console.print(f"[green]skip[/] {hw}/{name}: complete run {done}")
            return {"experiment": name, "run_dir": str(done), "status": "skipped", "outcome": "ok"}
    preflight(spec)
    resume = find_resumable(spec)
    if resume is not None:  # the same folder, from its last checkpoint (prepare records the resume in run.json)
        run_dir = resume["run_dir"]
        write_status(run_dir, status="running", resume_request={"checkpoint": resume["checkpoint"],
                                                                 "step": resume["step"]})
        console.print(f"[bold]resume[/] {hw}/{name} from step {resume['step']} -> {run_dir}")
    else:
        run_dir = new_run_dir(spec)
        console.print(f"[bold]run[/] {hw}/{name} -> {run_dir}")
    try:
        _STOPPING["run_dir"] = run_dir
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
        exc.run_dir = run_dir
        raise
    except Exception as exc:  # the notebook records the reason in run.json; keep going
        status = _read_status(run_dir)
        if status.get("status") in (None, "running"):
            write_status(run_dir, status="failed", reason=f"notebook: {type(exc).__name__}: {str(exc)[:300]}")
    _STOPPING["run_dir"] = None
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


def run_all(hw: str, experiments: list[str] | None = None, progress: bool = True, gpus: list[int] | None = None,
            parallels: list[str] | None = None, **kw) -> list[dict]:
    """Every experiment of the matrix for HW; complete ones are skipped, failed ones are kept and re-tried."""
    from rich.console import Console

    console = Console(stderr=True)
    names = experiments or recipes.experiments()
    counts = list(gpus or [1])
    layouts = list(parallels or ["ddp"])
    # one experiment's GPU counts one right after the other: a scaling ratio wants runs made close together
    specs = [RunSpec(hw=hw, experiment=name, gpus=n, parallel=par, **kw)
             for name in names for n in counts for par in layouts]
    return [_run_one(spec, console, progress) for spec in specs]


def register(sub) -> None:
    """`run-all` (for analysis.cli's SUBCOMMAND_MODULES, and `python -m experiments.runner run-all`)."""
    r = sub.add_parser("run-all", help="every experiment of the matrix for one hardware class (or --claims)",
                       description="Run every experiment of the matrix (experiments/recipes.yaml) for one hardware "
                                   "class, or with --claims the claims audit's experiments; complete runs are skipped.")
    r.add_argument("--hw", required=True, help="a class of analysis/data/hardware.yaml, or auto (the GPU's, from NVML)")
    r.add_argument("--model", default="Qwen/Qwen2.5-7B-Instruct",
                   help="hub id (default), a local model folder, 'dummy' (random weights, exact shapes)")
    r.add_argument("--data", default=None, help="folder with local stand-ins of the hub datasets")
    r.add_argument("--max-steps", type=int, default=None, help="cut runs of N optimizer steps")
    r.add_argument("--quick", action="store_true",
                   help=f"quick runs: just enough steps to estimate the full run, in {quick.BUDGET_S:g} s each "
                        "(model load included; experiments/quick.py)")
    r.add_argument("--budget", default=None, metavar="SECONDS", help="quick runs of this budget each (180 or 180s)")
    r.add_argument("--experiments", default=None,
                   help="comma-separated subset of experiments/recipes.yaml (with --claims: claims experiments and "
                        "searches of experiments/claims/, or plan:N for the plan's command N; default: the whole plan)")
    r.add_argument("--claims", action="store_true",
                   help="run claims experiments (experiments/claims/) instead of the matrix")
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
    r.add_argument("--no-progress", action="store_true",
                   help="no progress bar of optimizer steps per run (for logs and pipes); the run folders are the same")
    r.set_defaults(func=run_command)


def run_command(a) -> int:
    """`run-all` with parsed arguments: 0 when every run is ok / skipped / OOM (claims) / blocked, else 1.
    Bad input raises InputError."""
    from analysis.core import hardware

    if a.hw == "auto":  # the class of the GPU NVML shows (a fleet job need not know which card it got)
        a.hw = gpu.detect_hw()
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
                  results_dir=a.results, force_hw=a.force_hw, timeout_s=a.timeout, overrides=overrides,
                  budget_s=quick.budget_of(a.quick, a.budget))
    counts = _int_list(a.gpus, "--gpus")
    layouts = [p.strip() for p in a.parallel.split(",") if p.strip()]
    for p in layouts:
        if p not in PARALLEL:
            raise InputError(None, f"--parallel {p!r}: use one of {', '.join(PARALLEL)}")
    if a.claims and (counts != [1] or layouts != ["ddp"]):
        raise InputError(None, "--gpus/--parallel apply to the matrix; a claims experiment sets its own")
    from rich.console import Console

    _follow_make()
    _STOPPING.update(run_dir=None, done=False)
    check_orphans(a.results, getattr(a, "kill_orphans", False), Console(stderr=True))  # before anything starts
    handlers = {}
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # a clean stop: the training goes with the runner
        with contextlib.suppress(ValueError):
            handlers[sig] = signal.signal(sig, _raise_interrupted)
    try:
        if a.claims:
            results = run_claims(a.hw, names, first_ok=first_ok, **common)
        else:
            results = run_all(a.hw, names, gpus=counts, parallels=layouts, **common)
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


def _int_list(text: str, flag: str) -> list[int]:
    try:
        out = [int(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise InputError(None, f"{flag} wants whole numbers like 1,2,4, got {text!r}") from None
    if not out or any(n < 1 for n in out):
        raise InputError(None, f"{flag} wants whole numbers >= 1, got {text!r}")
    return out


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
