"""Before a run: check the hardware, make the inputs (model, data), render the command, record it all in the run folder.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import re
import shlex
import shutil
import socket
import sys
from dataclasses import asdict
from pathlib import Path

from experiments.base import runfiles
from experiments.base.errors import InputError
from experiments.base.runfolder import Args, Env, GpuCheck, Resume, Run
from experiments.recipes import catalog, recipes
from experiments.record import gpu
from experiments.run import reaper
from experiments.run.cache import link_outputs, trim_torn_tail, work_dir
from experiments.run.execute import runner_info
from experiments.run.folders import read_status, write_status
from experiments.run.spec import CACHE, DUMMY, DUMMY_TINY, RunSpec


def parallel_overrides(spec: RunSpec, base_flags: dict) -> dict:
    """The swift flags that spread SPEC over its GPUs with the global batch kept: grad-accum divided by the GPU
    count, else the per-device batch (per-device batch x grad-accum x GPUs stays the recipe's), and ZeRO through
    ms-swift's shipped DeepSpeed
    configs. A grad-accum the GPU count does not divide would change the global batch: refused."""
    out: dict[str, int | str] = {}
    if spec.gpus > 1:
        flags = {**base_flags, **spec.overrides}
        ga = int(flags.get(Args.GRADIENT_ACCUMULATION_STEPS, 1))
        bs = int(flags.get(Args.PER_DEVICE_TRAIN_BATCH_SIZE, 1))
        if ga % spec.gpus == 0:
            out[Args.GRADIENT_ACCUMULATION_STEPS] = ga // spec.gpus
        elif bs % spec.gpus == 0:  # grad-accum 1 (bs16): each GPU takes its share of the batch
            out[Args.PER_DEVICE_TRAIN_BATCH_SIZE] = bs // spec.gpus
        else:
            raise InputError(None, f"{spec.experiment}: neither grad-accum {ga} nor per-device batch {bs} divides by "
                                   f"{spec.gpus} GPUs (the global batch would change)")
    if spec.parallel != "ddp":
        out[Args.DEEPSPEED] = spec.parallel
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


def _swift_version() -> str:
    import importlib.metadata as md

    try:
        return md.version("ms-swift")
    except md.PackageNotFoundError:
        raise InputError(None, "ms-swift is not installed (make install-offline, or pip install ms-swift)") from None


HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")  # owner/name, as the hubs allow


def check_model(model: str) -> None:
    """MODEL is 'dummy', a local model folder with its config.json, or a well-formed hub id: checked before anything
    starts (MODEL=/nonexistent or a malformed id is one line, exit 2, not a failed run folder)."""
    if model in (DUMMY, DUMMY_TINY):
        return
    local = Path(model).expanduser()
    if local.is_dir():
        if not (local / "config.json").is_file():
            raise InputError(local, "model folder has no config.json")
        return
    if model.startswith((".", "/", "~")) or os.sep in model and local.exists():
        raise InputError(model, "no such model folder")
    if not HUB_ID.match(model) or ".." in model:
        raise InputError(None, f"--model {model!r}: no such model folder, and not a hub id like "
                               "Qwen/Qwen2.5-7B-Instruct")


def resolve_model(model: str, device: str) -> tuple[str, bool, Path | None]:
    """(value for --model, dummy weights?, local folder or None). 'dummy' builds or reuses the stand-in."""
    check_model(model)
    if model in (DUMMY, DUMMY_TINY):
        from experiments.offline import dummy

        tiny = model == DUMMY_TINY
        folder = CACHE / "models" / ("tiny" if tiny else "full") / dummy.MODEL_KEY
        config = dummy.tiny_qwen2_config() if tiny else dummy.qwen25_7b_config()
        out = dummy.build_dummy_model(config, folder, device=device)
        return str(out), True, out
    local = Path(model).expanduser()
    if local.is_dir():
        if not (local / "config.json").is_file():
            raise InputError(local, "model folder has no config.json")
        from experiments.offline import dummy

        return str(local.resolve()), dummy.is_dummy(local), local.resolve()
    return model, False, None


def prepare(spec: RunSpec, run_dir: Path, lib=None) -> dict:
    """Check the hardware, make the inputs, render the command and record everything before the run.
    Stays whole: the steps before a run, in the order run.json records them; each reads what the one before wrote."""
    run_dir = Path(run_dir)
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    before = read_status(run_dir)
    resume = before.get(Run.RESUME_REQUEST)  # the runner's: an interrupted run goes on from its last checkpoint
    common = dict(status="running", hw=spec.hw, experiment=spec.experiment, key=spec.key(), spec=asdict(spec),
                  pid=os.getpid(), pid_started=reaper.start_time(os.getpid()), host=socket.gethostname(),
                  work_dir=str(work_dir(run_dir)), **runner_info())
    if resume:  # the same run folder; its log goes on where the interrupted attempt's last whole line ended
        entry = {Resume.AT: now, Resume.FROM_STEP: resume["step"], Resume.CHECKPOINT: resume["checkpoint"],
                 Resume.LOG_LINES_BEFORE: trim_torn_tail(run_dir / runfiles.LOGGING),
                 Resume.AFTER: before.get(Run.REASON)}
        trim_torn_tail(run_dir / runfiles.TOKENS)
        trim_torn_tail(run_dir / runfiles.GPM)
        resume = {**resume, Resume.LOG_LINES_BEFORE: entry[Resume.LOG_LINES_BEFORE]}
        write_status(run_dir, **common, reason=None, resume_request=None,
                     resumes=[*(before.get(Run.RESUMES) or []), entry])
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
            from experiments.offline import localdata

            base = recipes.flags(spec.recipe_name)
            data_dir = CACHE / "data" / f"{spec.hw}-{spec.experiment}-{run_dir.name}"  # parallel runs never share it
            local = localdata.prepare_local_data(spec.data, data_dir, base.get("model_name"), base.get("model_author"))
            datasets = localdata.dataset_args(base["dataset"], local)
        if model_dir is not None:
            overrides.setdefault("check_model", False)  # nothing to check against a hub offline
        if model_dir is not None and spec.data:
            env_vars.update({"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "MODELSCOPE_OFFLINE": "1"})
        env_vars.update(spec.env)  # the experiment's own, which a user copies with the command
        if on_gpu:
            env_vars.update(gpu_visibility(spec.gpus, lib=lib))
        swift_version = _swift_version()
        work = work_dir(run_dir)  # checkpoints and the eval split go there; the log and args.json link back here
        link_outputs(work, run_dir)
        if resume:
            overrides[Args.RESUME_FROM_CHECKPOINT] = resume["checkpoint"]
        cmd = recipes.render(spec.recipe_name, swift_version, output_dir=str(work), model=model_arg,
                             datasets=datasets, max_steps=spec.max_steps, overrides=overrides)
        cmd["notes"].append("--output_dir is a cache folder (checkpoints stay out of results/); logging.jsonl, "
                            "args.json, tokens.jsonl, profile.json, launch.json, schedule.jsonl, gpm.jsonl, runs/ "
                            "and images/ "
                            "there link into the run folder")
        if spec.recipe is not None:  # say which flags come from the claims experiment, not from the machine
            own = set((catalog.experiment(spec.experiment) or {}).get("overrides") or {})
            cmd["notes"] = [n.replace(": set by the runner", f": claims experiment {spec.experiment}")
                            if n.startswith("--") and n.split(" ", 1)[0][2:] in own else n for n in cmd["notes"]]
        launch_argv = None
        if spec.launcher is not None:  # in-process swift sft (memory cap, profiler...): experiments/launch/launcher.py
            from experiments.launch.options import option_argv

            launch_opts = option_argv(spec.launcher)
            # several GPUs: torchrun starts one launcher per GPU, as `NPROC_PER_NODE=N swift sft` starts one trainer
            spawn = ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(spec.gpus)] \
                if spec.gpus > 1 else []
            launch_argv = [sys.executable, *spawn, "-m", "experiments.launch", *launch_opts, "--", *cmd["argv"]]
            head = shlex.join(["python", *spawn, "-m", "experiments.launch", *launch_opts, "--", "swift", "sft"])
            cmd["shell"] = head + cmd["shell"][len("swift sft"):]
            cmd["notes"].append(f"run in-process by experiments/launch/launcher.py {shlex.join(launch_opts)}".rstrip()
                                + (f" (claims experiment on recipe {spec.recipe})" if spec.recipe else ""))
        elif spec.gpus > 1:  # ms-swift's own multi-GPU launch: its CLI runs torchrun when NPROC_PER_NODE is set
            env_vars["NPROC_PER_NODE"] = str(spec.gpus)
            cmd["shell"] = f"NPROC_PER_NODE={spec.gpus} " + cmd["shell"]
        if model_dir is not None and (model_dir / "config.json").is_file():
            shutil.copy(model_dir / "config.json", run_dir / runfiles.MODEL_CONFIG)
        if not (resume and (run_dir / runfiles.ENV_JSON).is_file()):  # a resumed run keeps its first attempt's
            env = {**gpu.environment(spec.hw, lib=lib), Env.GPU_CHECK: check, Env.DUMMY_WEIGHTS: dummy_weights}
            (run_dir / runfiles.ENV_JSON).write_text(json.dumps(env, indent=2))
        exports = "".join(f"export {k}={shlex.quote(str(v))}\n"  # NPROC_PER_NODE goes on the command's line
                          for k, v in env_vars.items() if k != "NPROC_PER_NODE")
        (run_dir / runfiles.COMMAND_SH).write_text(
            "#!/usr/bin/env bash\n# Rendered by experiments/recipes/recipes.py for ms-swift " + swift_version + "\n"
            + "".join(f"# {n}\n" for n in cmd["notes"]) + exports + cmd["shell"] + "\n")
        labels = {Run.DUMMY_WEIGHTS: dummy_weights, Run.OFFLINE_DATA: bool(spec.data), Run.GPUS: spec.gpus,
                  Run.PARALLEL: spec.parallel, Run.MAX_STEPS: spec.max_steps or None,
                  Run.FORCED_HW: check[GpuCheck.FORCED], Run.SWIFT_VERSION: swift_version}
        # `command` stays the swift argv (what readers of run.json parse); the launcher's own line is beside it
        write_status(run_dir, **labels, command=cmd["argv"], notes=cmd["notes"],
                     **({Run.LAUNCH_COMMAND: launch_argv} if launch_argv else {}))
    except Exception as exc:
        write_status(run_dir, status="failed", reason=f"{type(exc).__name__}: {exc}")
        raise
    if spec.plain:  # the printed command as a user pastes it: bash runs command.sh (its exports, then swift sft)
        write_status(run_dir, harness="plain")
    return {"spec": spec, "run_dir": run_dir, "argv": cmd["argv"], "launch_argv": launch_argv, "env": env_vars,
            "plain_sh": str(run_dir / runfiles.COMMAND_SH) if spec.plain else None,
            "labels": labels, "max_steps_expected": spec.max_steps, "resume": resume}
