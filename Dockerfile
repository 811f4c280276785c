# swiftbench for GPU hosts with a container runtime (Docker + NVIDIA Container Toolkit).
#
#   docker build -t swiftbench .
#   docker run --rm --gpus all -e HW=h100 -v "$PWD/results:/workspace/swiftbench/results" swiftbench
#
# The Makefile's variables come from the environment: -e HW=... (required: a10, rtx4090, a100,
# h100, h200, ..., or auto: the class of the GPU NVML shows), and optionally -e MODEL=...
# -e MAX_STEPS=... -e EXPERIMENTS=a,b -e DATA=dir.
#
# For the cloud fleet (`make fleet IMAGE=...`, docs/fleet.md), push it where SkyPilot can pull it:
#   docker build -t ghcr.io/<you>/swiftbench:<tag> . && docker push ghcr.io/<you>/swiftbench:<tag>
# (Docker Hub, GHCR, ECR, Artifact Registry; a private registry's login goes into the task's
# SKYPILOT_DOCKER_USERNAME / _PASSWORD / _SERVER envs). SkyPilot runs the job inside it with the
# checkout synced to ~/sky_workdir; the image supplies the GPU wheel set below.
# HF_HUB_OFFLINE is deliberately NOT set: on a host with internet the model and data download as
# usual (mount -v ~/.cache/huggingface:/root/.cache/huggingface to keep them between runs). For an
# offline host, mount the model and add -e HF_HUB_OFFLINE=1 (GPU-HOST.md: and --check_model false,
# which the runner passes).
#
# Runs as root, on purpose: the runner samples the GPU through NVML, and on many hosts (older
# drivers, NVML access restricted to root, MIG/clock queries) only root sees everything; and the
# bind-mounted results/ belongs to the host user, which a fixed non-root UID baked into the image
# could not write. To get results owned by yourself instead, run with
#   --user "$(id -u):$(id -g)" -e HOME=/tmp
#
# Base: PyTorch's official CUDA runtime image, pinned: torch 2.9.0, CUDA 12.8 (Hopper and older;
# needs a driver >= 570, which the clouds' current GPU images ship; experiments/cloud/fleet_task.yaml's
# pip setup installs this same torch from the cu128 index), cuDNN 9, conda Python 3.11
# (ipykernel 7 / ipython 9 need >= 3.11).
# The air-gapped H200 host runs torch 2.11.0+cu130 instead; torch is not pinned by the suite.
FROM pytorch/pytorch:2.9.0-cuda12.8-cudnn9-runtime

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONUNBUFFERED=1

# make runs the suite (`make run-all`); the runtime image has none. DL3008 (pin apt versions) is
# ignored: Ubuntu's archive drops superseded versions, so a pinned make would break the build
# within weeks, and nothing here depends on make's patch level.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends make \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /workspace/swiftbench

# ms-swift and the GPU-side set with the same pins as the air-gapped host's wheel set
# (experiments/setup/requirements-gpu.txt, installed there with --no-deps), plus transformers and
# accelerate at the host's versions (experiments/setup/requirements-swift.txt); here WITH dependency
# resolution, so the requirements the wheel set waives (openai, fastapi, ...) come along too.
COPY experiments/setup/requirements-gpu.txt experiments/setup/requirements-swift.txt experiments/setup/
RUN pip install --no-cache-dir \
        -r experiments/setup/requirements-gpu.txt \
        -r experiments/setup/requirements-swift.txt \
    && python -c "import swift, papermill, ipykernel, torch; print('ms-swift', swift.__version__, 'torch', torch.__version__)"

# The suite itself; the constraints keep every pin above while its extras resolve.
COPY . .
RUN pip install --no-cache-dir \
        -c experiments/setup/requirements-gpu.txt \
        -c experiments/setup/requirements-swift.txt \
        ".[run,report]"

CMD ["make", "run-all"]
