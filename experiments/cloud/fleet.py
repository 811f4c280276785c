"""The matrix on other GPUs in the cloud: one SkyPilot managed job per hardware class, results merged back home.

    python -m experiments.cloud.fleet launch --hw a10,rtx4090,a100,h100 [--dry-run] [--bucket s3://b] [--image IMG]
    python -m experiments.cloud.fleet upload SRC DST          # in the job: the runs of SRC into the bucket mount
    python -m experiments.cloud.fleet collect --bucket s3://b [--results results]  # home: the runs into results/

(`make fleet HW=... [DRYRUN=1]`, `make fleet-collect BUCKET=...`). `launch` fills experiments/cloud/fleet_task.yaml once
per class (the GPU from hardware.yaml's sky_accelerator), parses every task with SkyPilot's own parser and then
either prints them (--dry-run) or hands them to `sky jobs launch`. SkyPilot is imported only there (the `fleet` extra,
its own venv .venv-fleet: skypilot pins a click that ms-swift's huggingface-hub refuses); `upload` and `collect`
need nothing but this file and analysis/core.

Copying never overwrites: a run already present (the same run.json/env.json/logging.jsonl bytes,
experiments.base.runfiles.digest, the digest the tables' merge uses) is not copied again, and a run whose folder name is
taken by another run is copied beside it under a new name. Run folders carry the host id in their name, so the
latter only happens to runs made before that.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from experiments.base import hardware, runfiles
from experiments.base.errors import InputError
from experiments.base.runfiles import IDENTITY_FILES, digest

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = Path(__file__).with_name("fleet_task.yaml")
BUCKET_MOUNT = "/swiftbench-bucket"
EXAMPLE_BUCKET = "s3://your-bucket"  # what a dry run without --bucket shows; a launch needs a real one
RUN_MARKERS = (runfiles.RUN_JSON, runfiles.LOGGING)


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (setup, run) as literal blocks: the task file reads like the template."""


_Dumper.add_representer(str, lambda d, s: d.represent_scalar("tag:yaml.org,2002:str", s,
                                                              style="|" if "\n" in s else None))


# ------------------------------------------------------------------------------------------------ tasks


def classes(hw: str | list[str]) -> list[str]:
    """'a10,h100' -> ['a10', 'h100'], each a class with a SkyPilot accelerator name (bad input otherwise)."""
    keys = [hardware.user_key(k.strip()) for k in (hw.split(",") if isinstance(hw, str) else hw) if k and k.strip()]
    if not keys:
        raise InputError(None, "--hw names no hardware class (a10,rtx4090,a100,h100, ...)")
    for key in keys:
        spec = hardware.require(key)
        if not spec.sky_accelerator:
            raise InputError(hardware.HARDWARE_FILE, f"{key!r} has no sky_accelerator: SkyPilot cannot ask for it")
    return list(dict.fromkeys(keys))


def task_config(hw: str, *, bucket: str = EXAMPLE_BUCKET, image: str | None = None, model: str | None = None,
                experiments: str | None = None, max_steps: int | None = None, timeout: float | None = None,
                workdir: str | Path = ROOT) -> dict:
    """The task of one class: the template with its name, GPU, HW, workdir, bucket and (optionally) image."""
    spec = hardware.require(hw)
    task = yaml.safe_load(TEMPLATE.read_text(encoding="utf-8"))
    task["name"] = f"swiftbench-{hw}"
    task["workdir"] = str(Path(workdir).resolve())
    task["resources"]["accelerators"] = spec.sky_accelerator
    task["file_mounts"][BUCKET_MOUNT]["source"] = bucket
    envs = task["envs"]
    envs["HW"] = hw
    if image:
        task["resources"]["image_id"] = image if image.startswith("docker:") else f"docker:{image}"
        envs["SETUP"] = "image"
    for key, value in (("MODEL", model), ("EXPERIMENTS", experiments), ("MAX_STEPS", max_steps),
                       ("TIMEOUT", timeout)):
        if value not in (None, ""):
            envs[key] = str(value)
    return task


def write_tasks(hws: list[str], out_dir: str | Path, **kw) -> list[Path]:
    """One YAML file per class in OUT_DIR (swiftbench-<hw>.yaml)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for hw in hws:
        path = out_dir / f"swiftbench-{hw}.yaml"
        head = (f"# {hw}: written by experiments/cloud/fleet.py from experiments/cloud/fleet_task.yaml "
                "(its comments say why)\n")
        path.write_text(head + yaml.dump(task_config(hw, **kw), Dumper=_Dumper, sort_keys=False, width=120),
                        encoding="utf-8")
        paths.append(path)
    return paths


def parse_task(path: Path) -> dict:
    """SkyPilot's own reading of a task file (sky.Task.from_yaml; offline, no credentials): what it will ask for."""
    import sky  # the fleet extra; .venv-fleet

    task = sky.Task.from_yaml(str(path))
    accelerators = [r.accelerators for r in task.resources]
    return {"name": task.name, "accelerators": accelerators, "envs": dict(task.envs),
            "image_id": [r.image_id for r in task.resources], "workdir": task.workdir,
            "mounts": sorted(task.storage_mounts), "skypilot": getattr(sky, "__version__", "?")}


def _accelerator_text(accelerators: list) -> str:
    return ",".join(f"{name}:{count:g}" for acc in accelerators if acc for name, count in acc.items())


def sky_binary() -> str:
    """The `sky` command beside this interpreter (the fleet venv's), else the one on PATH."""
    here = Path(sys.executable).parent / "sky"
    return str(here) if here.is_file() else (shutil.which("sky") or "sky")


def launch(hw: str | list[str], *, dry_run: bool = False, out_dir: str | Path = ".fleet", bucket: str | None = None,
           **kw) -> int:
    """Write, validate and launch (or with DRY_RUN print) one managed job per class. Every task is parsed by
    SkyPilot before the first launch, so a bad one launches none."""
    hws = classes(hw)
    if not bucket and not dry_run:
        raise InputError(None, "a launch needs BUCKET (s3://name or gs://name, created once): the runs are "
                               "copied there")
    paths = write_tasks(hws, out_dir, bucket=bucket or EXAMPLE_BUCKET, **kw)
    parsed = [parse_task(p) for p in paths]
    for i, (path, task) in enumerate(zip(paths, parsed), 1):
        cmd = [sky_binary(), "jobs", "launch", "--yes", "--name", task["name"], str(path)]
        print(f"# task {i}/{len(paths)}: {path}")
        print(f"# validated by SkyPilot {task['skypilot']}: name={task['name']} "
              f"accelerators={_accelerator_text(task['accelerators'])} HW={task['envs'].get('HW')}")
        if dry_run:
            print(f"# would run: sky {' '.join(cmd[1:])}")
            print(path.read_text(encoding="utf-8"))
    if dry_run:
        if not bucket:
            print(f"# BUCKET unset: {EXAMPLE_BUCKET} stands in; a launch needs BUCKET=s3://... or gs://...")
        return 0
    failed = 0
    for path, task in zip(paths, parsed):
        cmd = [sky_binary(), "jobs", "launch", "--yes", "--name", task["name"], str(path)]
        print("$ " + " ".join(cmd), flush=True)
        failed += subprocess.run(cmd, cwd=ROOT).returncode != 0
    return 1 if failed else 0


# ---------------------------------------------------------------------------------------------- copying


def run_folders(root: Path) -> list[Path]:
    """Run folders under ROOT (a folder with run.json or logging.jsonl; not a checkpoint's)."""
    found = {p.parent for name in RUN_MARKERS for p in root.rglob(name)}
    return sorted(p for p in found if not any(part.startswith("checkpoint-") for part in p.relative_to(root).parts))


def _copy_tree(src: Path, dst: Path) -> None:
    """SRC's files into the new folder DST: contents only, with no chmod, times or renames (bucket mounts such as
    goofys and gcsfuse refuse them), checkpoints left out, and the identity files last, so an interrupted copy is not
    taken for the whole run."""
    dst.mkdir()  # exclusive: never into a folder that exists
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if any(part.startswith("checkpoint-") for part in rel.parts) or str(rel) in IDENTITY_FILES:
            continue
        if path.is_dir():
            (dst / rel).mkdir(parents=True, exist_ok=True)
        elif path.is_file():
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dst / rel)
    for name in IDENTITY_FILES:
        if (src / name).is_file():
            shutil.copyfile(src / name, dst / name)


def copy_runs(src: str | Path, dst: str | Path) -> dict[str, list]:
    """Copy every run folder of SRC into DST at the same relative path, never overwriting: {"copied": [...],
    "present": [(src run, the same run in DST)], "renamed": [(src run, new DST folder)]}."""
    src, dst = Path(src), Path(dst)
    if not src.is_dir():
        raise InputError(src, "no such folder")
    dst.mkdir(parents=True, exist_ok=True)
    have = {digest(d): d for d in run_folders(dst)}
    out: dict[str, list] = {"copied": [], "present": [], "renamed": []}
    for run in run_folders(src):
        key = digest(run)
        if key in have:
            out["present"].append((run, have[key]))
            continue
        target = dst / run.relative_to(src)
        if target.exists():  # the name is another run's: keep both
            n = 1
            while target.with_name(f"{target.name}-{n}").exists():
                n += 1
            target = target.with_name(f"{target.name}-{n}")
            out["renamed"].append((run, target))
        target.parent.mkdir(parents=True, exist_ok=True)
        _copy_tree(run, target)
        have[key] = target
        out["copied"].append(target)
    return out


def report(result: dict[str, list], dst: Path) -> None:
    for run, other in result["present"]:
        print(f"already there: {run} (same run as {other})")
    for run, target in result["renamed"]:
        print(f"renamed: {run} -> {target} (its folder name was another run's)")
    print(f"{len(result['copied'])} run(s) copied into {dst}, {len(result['present'])} already there, "
          f"{len(result['renamed'])} renamed")


def fetch(bucket: str, staging: Path) -> Path:
    """The bucket's results/ folder on this machine: a local folder as it is, s3:// and gs:// synced into STAGING with
    the cloud's own command line (aws, gcloud), which this suite does not install."""
    if "://" not in bucket:
        path = Path(bucket)
        return path / "results" if (path / "results").is_dir() else path
    scheme = bucket.split("://", 1)[0]
    remote = bucket.rstrip("/") + "/results"
    staging.mkdir(parents=True, exist_ok=True)
    commands = {"s3": ["aws", "s3", "sync", remote, str(staging)],
                "gs": ["gcloud", "storage", "rsync", "--recursive", remote, str(staging)]}
    if scheme not in commands:
        raise InputError(None, f"{bucket}: only s3://, gs:// or a local folder (sync other stores yourself and "
                               "pass the folder)")
    cmd = commands[scheme]
    if shutil.which(cmd[0]) is None:
        raise InputError(None, f"{cmd[0]} is not installed: sync {remote} into a folder and pass that folder")
    print("$ " + " ".join(cmd), flush=True)
    if subprocess.run(cmd).returncode != 0:
        raise InputError(None, f"could not sync {remote}")
    return staging


# ------------------------------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.cloud.fleet", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    lp = sub.add_parser("launch", help="one SkyPilot managed job per hardware class (make fleet)")
    lp.add_argument("--hw", required=True, help="comma-separated classes of data/hardware.yaml")
    lp.add_argument("--dry-run", action="store_true", help="validate and print the tasks; launch nothing")
    lp.add_argument("--bucket", default=None, help="s3://name or gs://name the runs are copied to")
    lp.add_argument("--image", default=None, help="the Dockerfile's image in a registry the cloud can pull")
    lp.add_argument("--model", default=None)
    lp.add_argument("--experiments", default=None)
    lp.add_argument("--max-steps", type=int, default=None)
    lp.add_argument("--timeout", type=float, default=None)
    lp.add_argument("--out", default=".fleet", help="where the task files are written (default .fleet)")
    up = sub.add_parser("upload", help="copy the runs of SRC into DST (the bucket mount), never overwriting")
    up.add_argument("src")
    up.add_argument("dst")
    cp = sub.add_parser("collect", help="the bucket's runs into results/ (make fleet-collect)")
    cp.add_argument("--bucket", required=True, help="s3://name, gs://name, or a local copy of the bucket")
    cp.add_argument("--results", default="results")
    cp.add_argument("--staging", default=".fleet/bucket", help="where a remote bucket is synced first")
    a = p.parse_args(argv)
    try:
        if a.cmd == "launch":
            return launch(a.hw, dry_run=a.dry_run, out_dir=a.out, bucket=a.bucket, image=a.image, model=a.model,
                          experiments=a.experiments, max_steps=a.max_steps, timeout=a.timeout)
        if a.cmd == "upload":
            report(copy_runs(a.src, a.dst), Path(a.dst))
            return 0
        src = fetch(a.bucket, Path(a.staging))
        report(copy_runs(src, a.results), Path(a.results))
        return 0
    except InputError as exc:
        print(f"fleet: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
