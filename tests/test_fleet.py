"""Fleet launch on SkyPilot (issue 16): one task per hardware class from hardware.yaml, every task parsed by SkyPilot's
own parser (the `fleet` extra in .venv-fleet, which `make test` sets up), the launch path in dry-run mode, and the
copier that brings runs home without overwriting anything.

SkyPilot lives in its own venv (skypilot 0.10.5 pins click<=8.1.8; ms-swift's huggingface-hub needs click>=8.4.2),
so the tests that need it run it as a subprocess: SWIFTBENCH_FLEET_PYTHON or .venv-fleet/bin/python. Without it they
skip locally and fail in CI (CI=true), where `make test` must have made it.
"""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from analysis.parse.results import scan
from experiments.base import hardware
from experiments.base.runfiles import digest
from experiments.cloud import fleet

REPO = Path(__file__).resolve().parents[1]
FLEET_VENV = REPO / ".venv-fleet"
FLEET_PY = Path(os.environ.get("SWIFTBENCH_FLEET_PYTHON") or FLEET_VENV / "bin" / "python")
STAMP = FLEET_VENV / ".swiftbench-fleet-installed"
BAR = {"a10": "A10:1", "rtx4090": "RTX4090:1", "a100": "A100:1", "h100": "H100:1"}
VALIDATED = re.compile(r"^# validated by SkyPilot (\S+): name=(\S+) accelerators=(\S+) HW=(\S+)$", re.M)


@pytest.fixture(scope="module")
def fleet_python() -> Path:
    if not FLEET_PY.is_file():
        msg = f"no fleet venv ({FLEET_PY}): `make test` makes it (the fleet extra's requirements in .venv-fleet)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return FLEET_PY


def _validated(stdout: str) -> dict[str, tuple[str, str]]:
    """{HW: (task name, accelerators)} of the dry run's validated-task lines."""
    return {hw: (name, acc) for _, name, acc, hw in VALIDATED.findall(stdout)}


# ------------------------------------------------------------------------------------- the bar


def test_make_fleet_dryrun_prints_four_validated_tasks(fleet_python, tmp_path):
    """`make fleet HW=a10,rtx4090,a100,h100 DRYRUN=1`: four tasks, each parsed by SkyPilot, with the class's
    accelerator and HW, and the launch it would make (sky jobs launch), all on a CPU machine without credentials."""
    env = {**os.environ, "HOME": str(tmp_path / "home")}  # no ~/.sky, no cloud credentials
    cmd = ["make", "-s", "fleet", "HW=a10,rtx4090,a100,h100", "DRYRUN=1", f"FLEET_OUT={tmp_path / 'tasks'}",
           f"FLEET_PY={fleet_python}"]
    if STAMP.is_file():
        cmd += ["-o", str(STAMP.relative_to(REPO))]  # the venv is there: do not reinstall it here
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    found = _validated(p.stdout)
    assert found == {hw: (f"swiftbench-{hw}", acc) for hw, acc in BAR.items()}, p.stdout[:3000]
    assert p.stdout.count("# would run: sky jobs launch --yes --name swiftbench-") == 4
    for hw, acc in BAR.items():
        task = yaml.safe_load((tmp_path / "tasks" / f"swiftbench-{hw}.yaml").read_text())
        assert task["resources"]["accelerators"] == acc == hardware.require(hw).sky_accelerator
        assert task["envs"]["HW"] == hw and task["workdir"] == str(REPO)
        assert "make run-all" in task["run"] and 'HW="$HW"' in task["run"]
        assert "experiments.cloud.fleet upload" in task["run"]  # results copied to the bucket at the end


def test_every_class_and_the_image_variant_parse(fleet_python, tmp_path):
    """Every class with a SkyPilot name, with the Dockerfile's image and a bucket, through SkyPilot's parser."""
    classes = [k for k, s in hardware.table().items() if s.sky_accelerator]
    p = subprocess.run([str(fleet_python), "-m", "experiments.cloud.fleet", "launch", "--hw", ",".join(classes),
                        "--dry-run", "--out", str(tmp_path), "--image", "ghcr.io/example/swiftbench:1",
                        "--bucket", "gs://example-bucket", "--max-steps", "30", "--experiments", "seed,bs16"],
                       cwd=REPO, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "HOME": str(tmp_path / "home")})
    assert p.returncode == 0, p.stderr[-3000:]
    found = _validated(p.stdout)
    assert {hw: acc for hw, (_, acc) in found.items()} == {k: hardware.require(k).sky_accelerator for k in classes}
    task = yaml.safe_load((tmp_path / "swiftbench-l40s.yaml").read_text())
    assert task["resources"]["image_id"] == "docker:ghcr.io/example/swiftbench:1" and task["envs"]["SETUP"] == "image"
    assert task["file_mounts"][fleet.BUCKET_MOUNT] == {"source": "gs://example-bucket", "mode": "MOUNT"}
    assert task["envs"]["MAX_STEPS"] == "30" and task["envs"]["EXPERIMENTS"] == "seed,bs16"


def test_importing_sky_needs_no_network_or_credentials(fleet_python, tmp_path):
    """SkyPilot's parser works offline: a fresh HOME and (where unshare is allowed) no network at all."""
    code = ("import sky, time; t = sky.Task.from_yaml_config({'name': 'x', 'resources': {'accelerators': 'A10G:1'}, "
            "'run': 'true'}); print(list(t.resources)[0].accelerators)")
    cmd = [str(fleet_python), "-c", code]
    if shutil.which("unshare") and subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0:
        cmd = ["unshare", "-n", *cmd]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(tmp_path)})
    assert p.returncode == 0 and "{'A10G': 1}" in p.stdout, p.stderr[-2000:]


# ------------------------------------------------------------------------------ without SkyPilot installed


def test_task_config_fills_the_template_per_class():
    t = fleet.task_config("a10g", bucket="s3://b", model="dummy")
    assert t["name"] == "swiftbench-a10g" and t["resources"]["accelerators"] == "A10G:1"
    assert t["envs"]["HW"] == "a10g" and t["envs"]["MODEL"] == "dummy" and t["envs"]["SETUP"] == "pip"
    assert "image_id" not in t["resources"]
    assert t["file_mounts"][fleet.BUCKET_MOUNT]["source"] == "s3://b"


def test_pip_setup_installs_the_dockerfile_torch():
    """Both setups run the same torch: the template's pip pin is the Dockerfile base image's version and CUDA."""
    base = re.search(r"^FROM pytorch/pytorch:(\d+\.\d+\.\d+)-cuda(\d+)\.(\d+)-", (REPO / "Dockerfile").read_text(),
                     re.M)
    envs = yaml.safe_load(fleet.TEMPLATE.read_text())["envs"]
    assert envs["TORCH"] == f"torch=={base[1]}"
    assert envs["TORCH_INDEX"].endswith(f"/cu{base[2]}{base[3]}")


@pytest.mark.parametrize("hw,needle", [("h200-nvl", "no sky_accelerator"), ("cpu", "no sky_accelerator"),
                                       ("tpu9", "unknown hardware"), ("", "names no hardware class")])
def test_classes_skypilot_cannot_ask_for_are_bad_input(hw, needle):
    from experiments.base.errors import InputError

    with pytest.raises(InputError, match=needle):
        fleet.classes(hw)


def test_a_launch_needs_a_bucket(tmp_path):
    p = subprocess.run([sys.executable, "-m", "experiments.cloud.fleet", "launch", "--hw", "a10", "--out",
                        str(tmp_path)], cwd=REPO, capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "BUCKET" in p.stderr
    assert not any(tmp_path.iterdir())


def _run(folder: Path, host: str, loss: float = 1.0) -> Path:
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"status": "ok", "experiment": folder.parent.name}))
    (folder / "env.json").write_text(json.dumps({"hw": folder.parent.parent.name,
                                                 "host": {"fingerprint": {"host_id": host}}}))
    (folder / "logging.jsonl").write_text(json.dumps({"loss": loss, "global_step/max_steps": "1/10",
                                                      "memory(GiB)": 1.0, "train_speed(s/it)": 1.0}) + "\n")
    (folder / "images").mkdir()
    (folder / "images" / "loss.png").write_bytes(b"png")
    (folder / "checkpoint-10").mkdir()
    (folder / "checkpoint-10" / "adapter.safetensors").write_bytes(b"weights")
    return folder


def test_copy_runs_never_overwrites_and_copies_a_run_once(tmp_path):
    """upload (job -> bucket) and collect (bucket -> results) are one copier: a run already present by content is
    left alone, a run whose folder name is taken is copied beside it, checkpoints stay behind."""
    bucket, results = tmp_path / "bucket", tmp_path / "results"
    new = _run(bucket / "a10" / "seed" / "20270101-000000-aaaaaaaaaaaa", "aaaaaaaaaaaa")
    same = _run(bucket / "h100" / "seed" / "20270101-000000-bbbbbbbbbbbb", "bbbbbbbbbbbb")
    clash = _run(bucket / "h100" / "bs16" / "20261130-000000", "cccccccccccc", loss=2.0)
    shutil.copytree(same, results / "h100" / "seed" / "20270101-000000-bbbbbbbbbbbb")
    mine = _run(results / "h100" / "bs16" / "20261130-000000", "dddddddddddd", loss=3.0)
    before = {p: p.read_bytes() for p in results.rglob("*") if p.is_file()}

    out = fleet.copy_runs(bucket, results)
    assert out["copied"] == [results / "a10" / "seed" / new.name, results / "h100" / "bs16" / "20261130-000000-1"]
    assert [r for r, _ in out["present"]] == [same] and out["renamed"] == [(clash, out["copied"][1])]
    assert all(p.read_bytes() == b for p, b in before.items())  # nothing overwritten
    assert digest(results / "h100" / "bs16" / "20261130-000000-1") == digest(clash)
    assert (results / "a10" / "seed" / new.name / "images" / "loss.png").is_file()
    assert not (results / "a10" / "seed" / new.name / "checkpoint-10").exists() and (mine / "checkpoint-10").is_dir()
    # a second collect copies nothing, and the merged tree has each run once
    again = fleet.copy_runs(bucket, results)
    assert again["copied"] == [] and len(again["present"]) == 3
    assert len(scan(results).records) == 4 and scan(results).notes == []


def test_fleet_collect_from_a_local_bucket_copy(tmp_path):
    bucket = tmp_path / "bucket"
    _run(bucket / "results" / "a10" / "seed" / "20270101-000000-aaaaaaaaaaaa", "aaaaaaaaaaaa")
    p = subprocess.run(["make", "-s", "fleet-collect", f"BUCKET={bucket}", f"RESULTS={tmp_path / 'results'}",
                        f"PYTHON={sys.executable}"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "1 run(s) copied" in p.stdout
    assert (tmp_path / "results" / "a10" / "seed" / "20270101-000000-aaaaaaaaaaaa" / "run.json").is_file()
