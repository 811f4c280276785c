# swiftbench: `make test` (everything, CPU), `make report` (anywhere), `make run-all HW=h100` (GPU host).
# Every target is one `swiftbench` subcommand (the venv's script; on a GPU host without the venv, python -m analysis.cli).
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV    ?= .venv
# Python for GPU-side targets: the venv where one exists, else the host's (whose torch must be kept).
PYTHON  ?= $(if $(wildcard $(VENV)/bin/python),$(VENV)/bin/python,python3)
VPY     := $(VENV)/bin/python
STAMP   := $(VENV)/.swiftbench-installed

HW          ?=
MODEL       ?= Qwen/Qwen2.5-7B-Instruct
DATA        ?=
MAX_STEPS   ?=
EXPERIMENTS ?=
FORCE       ?=
TIMEOUT     ?=
KILL_ORPHANS ?=
GPUS        ?=
PARALLEL    ?=
QUICK       ?=
BUDGET      ?=
REPEAT      ?=
REPEATS     ?=
PLAIN       ?=
PLAIN_ROUNDS ?=
PROFILE     ?=
RESULTS     ?= results
BASELINE    ?=
WHEELHOUSE  ?= wheelhouse
# fleet (SkyPilot, its own venv: skypilot pins a click that ms-swift's huggingface-hub refuses)
FLEET_VENV  ?= .venv-fleet
FLEET_PY    := $(FLEET_VENV)/bin/python
FLEET_STAMP := $(FLEET_VENV)/.swiftbench-fleet-installed
# The analysis targets (tables, parse, claims, report) read files only: the training venv where it is set up, else a
# light one with the package's own dependencies and the report extra (pandas, scipy, papermill, ...: no torch, no
# ms-swift)
LIGHT_VENV  ?= .venv-light
LIGHT_STAMP := $(LIGHT_VENV)/.swiftbench-light-installed
AVENV       := $(if $(wildcard $(STAMP)),$(VENV),$(LIGHT_VENV))
ASTAMP      := $(if $(wildcard $(STAMP)),$(STAMP),$(LIGHT_STAMP))
FLEET_OUT   ?= .fleet
BUCKET      ?=
IMAGE       ?=
DRYRUN      ?=

.PHONY: chromium help venv lint test test-fast tables claims parse estimator-data run-all claims-gpu report wheelhouse wheelhouse-lite anchor-cache install-offline fixtures clean fleet fleet-collect

help:
	@echo "make test                         set up .venv (CPU torch, ms-swift), lint, and run every test"
	@echo "make lint                         ruff, mypy and the dead-code check (vulture; pyproject.toml's settings)"
	@echo "make report                       executed report notebook -> report/index.html"
	@echo "make tables [RESULTS=results]     speedup and convergence tables of a results tree"
	@echo "make parse [RESULTS=results]      one row per run folder: status, complete, steps, ms/step, tokens/s, peak, MFU"
	@echo "make estimator-data               data/committed-runs: the committed runs' files the planner reads, for the wheel"
	@echo "make claims [RESULTS=results]     the claims audit's verdicts (analysis/judge/audit/claims.yaml); PLAN=1: its GPU plan too"
	@echo "make claims-gpu CALL=N [DEADLINE=s] one device call of the claims plan (experiments/recipes/claims/plan.yaml), one lane per GPU"
	@echo "make run-all HW=h100 [MODEL=dummy] [DATA=dir] [MAX_STEPS=N] [EXPERIMENTS=a,b] [FORCE=1] [TIMEOUT=s] [GPUS=1,2] [PARALLEL=ddp,zero3] [QUICK=1|BUDGET=180s] [REPEAT=1] [REPEATS=3 [PLAIN=fast]] [PROFILE=1]"
	@echo "make wheelhouse / install-offline wheels for an air-gapped GPU host, and their offline install"
	@echo "make anchor-cache                 .cache/anchor44: wheels and data experiments/cloud/anchor_gpu.sh carries"
	@echo "make fleet HW=a10,rtx4090,a100,h100 BUCKET=s3://b [IMAGE=reg/img:tag] [DRYRUN=1]  SkyPilot managed jobs, one per class"
	@echo "make fleet-collect BUCKET=s3://b  the bucket's runs into RESULTS (never overwriting; a run already there is skipped)"

# --- environment --------------------------------------------------------------------------------
# torch first and pinned: with no torch installed, a plain requirement would pull a multi-GB CUDA build.
$(STAMP): pyproject.toml experiments/setup/requirements-swift.txt
	test -x $(VPY) || python3 -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -c "import torch" 2>/dev/null || $(VPY) -m pip install -q torch==2.13.0
	$(VPY) -m pip install -q -e '.[run,report,test]' -r experiments/setup/requirements-swift.txt
	$(VPY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $@

# The fleet's venv: the `fleet` extra (SkyPilot), so `make test` checks the tasks with SkyPilot's own parser. The
# extra's requirements only (the fleet runs from the checkout, as the tests and `make fleet` do): no second editable
# install of this package racing the main venv's while `make test` builds both side by side.
$(LIGHT_STAMP): pyproject.toml
	test -x $(LIGHT_VENV)/bin/python || python3 -m venv $(LIGHT_VENV)
	$(LIGHT_VENV)/bin/python -m pip install -q --upgrade pip
	$(LIGHT_VENV)/bin/python -m pip install -q -e '.[report]'
	$(LIGHT_VENV)/bin/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $@

$(FLEET_STAMP): pyproject.toml
	test -x $(FLEET_PY) || python3 -m venv $(FLEET_VENV)
	$(FLEET_PY) -m pip install -q --upgrade pip
	$(FLEET_PY) -m pip install -q pyyaml $$(python3 -c "import tomllib; print(' '.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['fleet']))")
	touch $@

venv: $(STAMP)
	@echo "$(VENV) is set up (swiftbench: $(VENV)/bin/swiftbench)"

# Headless Chromium for the report's browser test (Debian package; skipped where apt is unavailable).
chromium:
	@command -v chromium >/dev/null || { command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] && \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	  || echo "chromium not installed: the browser test will skip"; }

# ruff and mypy, their settings in pyproject.toml; `make test` runs it beside the tests (so CI does: .ci/run calls
# `make test`); its exit code counts first.
lint: $(STAMP)
	$(VPY) -m ruff check experiments analysis tests notebooks seeds swiftbench
	$(VPY) -m mypy
	$(VPY) -m vulture

# The two venvs are independent: built side by side. The slow tests (real CPU trainings through run-all, each in its
# own tmp folders) run beside the others, the tiny stand-in model built once before (both would build it); the
# exit code is lint's, else the worse of the two; lint (ruff, mypy, vulture) runs beside them, its output and the slow
# tests' report printed after the others'.
test: chromium
	$(MAKE) -j2 $(STAMP) $(FLEET_STAMP)
	$(VPY) -c "from experiments.run.prepare import resolve_model; resolve_model('dummy:tiny', 'cpu')"
	@rm -f .pytest-slow.log .lint.log; \
	$(MAKE) --no-print-directory lint >.lint.log 2>&1 & lint=$$!; \
	$(VPY) -m pytest -q -p no:cacheprovider -m slow --durations=10 >.pytest-slow.log 2>&1 & slow=$$!; \
	$(VPY) -m pytest -q -p no:cacheprovider -m "not slow" --durations=15; fast=$$?; \
	wait $$slow; rc=$$?; wait $$lint; lrc=$$?; \
	echo "--- lint (run beside the tests) ---"; cat .lint.log; \
	echo "--- slow tests (run beside the others) ---"; cat .pytest-slow.log; \
	exit $$(( lrc != 0 ? lrc : fast != 0 ? fast : rc ))

test-fast: $(STAMP) $(FLEET_STAMP)
	$(VPY) -m pytest -q -m "not slow and not browser"

# --- analysis -----------------------------------------------------------------------------------
tables: $(ASTAMP)
	$(AVENV)/bin/swiftbench tables $(RESULTS) $(if $(BASELINE),--baseline $(BASELINE))

parse: $(ASTAMP)
	$(AVENV)/bin/swiftbench parse $(RESULTS)

claims: $(ASTAMP)
	$(AVENV)/bin/swiftbench claims $(RESULTS) $(if $(PLAN),--plan)

# The committed runs' files the time estimator reads (data/committed-runs/, package data of the wheel: `swiftbench
# plan` outside a checkout answers as in it). Run after committing new runs; tests/test_packaged_runs.py fails until then.
estimator-data: $(ASTAMP)
	$(AVENV)/bin/python -m analysis.parse.packaged results

fixtures: $(STAMP)
	$(VPY) tests/fixtures/generate.py

report: $(ASTAMP)
	$(AVENV)/bin/swiftbench report --results $(RESULTS) $(if $(BASELINE),--baseline $(BASELINE)) --out report

# --- GPU host -----------------------------------------------------------------------------------
run-all:
	@test -n "$(HW)" || { echo "make run-all: set HW (a10, rtx4090, a100, h100, h200, ...)" >&2; exit 2; }
	$(PYTHON) -m analysis.cli run-all --hw $(HW) --model $(MODEL) --results $(RESULTS) \
	  $(if $(DATA),--data $(DATA)) $(if $(MAX_STEPS),--max-steps $(MAX_STEPS)) \
	  $(if $(EXPERIMENTS),--experiments $(EXPERIMENTS)) $(if $(FORCE),--force-hw) \
	  $(if $(TIMEOUT),--timeout $(TIMEOUT)) $(if $(GPUS),--gpus $(GPUS)) $(if $(PARALLEL),--parallel $(PARALLEL)) \
	  $(if $(QUICK),--quick) $(if $(BUDGET),--budget $(BUDGET)) $(if $(KILL_ORPHANS),--kill-orphans) \
	  $(if $(REPEAT),--repeat) $(if $(REPEATS),--repeats $(REPEATS)) $(if $(PLAIN),--plain $(PLAIN)) \
	  $(if $(PLAIN_ROUNDS),--plain-rounds $(PLAIN_ROUNDS)) $(if $(PROFILE),--profile)
	$(PYTHON) -m analysis.cli tables $(RESULTS) $(if $(BASELINE),--baseline $(BASELINE)) || [ $$? -eq 3 ]  # 3: a folder was left out (said on stderr)

# --- other GPUs in the cloud (SkyPilot) ------------------------------------------------------------
fleet: $(FLEET_STAMP)
	@test -n "$(HW)" || { echo "make fleet: set HW (a10,rtx4090,a100,h100, ...)" >&2; exit 2; }
	$(FLEET_PY) -m experiments.cloud.fleet launch --hw $(HW) --out $(FLEET_OUT) --model $(MODEL) $(if $(DRYRUN),--dry-run) \
	  $(if $(BUCKET),--bucket $(BUCKET)) $(if $(IMAGE),--image $(IMAGE)) $(if $(EXPERIMENTS),--experiments $(EXPERIMENTS)) \
	  $(if $(MAX_STEPS),--max-steps $(MAX_STEPS)) $(if $(TIMEOUT),--timeout $(TIMEOUT))

fleet-collect:
	@test -n "$(BUCKET)" || { echo "make fleet-collect: set BUCKET (s3://name, gs://name or a local copy)" >&2; exit 2; }
	$(PYTHON) -m experiments.cloud.fleet collect --bucket $(BUCKET) --results $(RESULTS)

claims-gpu:
	@test -n "$(CALL)" || { echo "make claims-gpu: set CALL (a call of experiments/recipes/claims/plan.yaml)" >&2; exit 2; }
	bash experiments/cloud/claims_gpu.sh $(CALL) $(or $(DEADLINE),570) $(MODEL) $(or $(DATA),.data)

# Plain python3 on purpose: downloading and installing the wheel set needs no venv (only pip).
wheelhouse:
	python3 -m analysis.cli wheelhouse --dest $(WHEELHOUSE)

# The device tool carries at most 64 MiB with the tracked tree: a wheel set without deepspeed, hjson and bitsandbytes
# (multi-GPU ZeRO and QLoRA runs only; deepspeed's sdist does not build on every machine) and without jedi and debugpy
# (optional for IPython and ipykernel), 25 MB. On the GPU host, drop the same lines from requirements-gpu.txt before
# installing (LITE_DROP below; docs/running.md has the command line).
LITE_DROP := /^(deepspeed|hjson|bitsandbytes|jedi|debugpy)==/d; /^\# [a-z-]+ \((deepspeed|bitsandbytes|hjson)\)/d
wheelhouse-lite:
	@req=$$(mktemp); sed -E '$(LITE_DROP)' experiments/setup/requirements-gpu.txt >$$req; \
	python3 -m analysis.cli wheelhouse --dest wheelhouse-lite --requirements $$req; rc=$$?; rm -f $$req; \
	[ $$rc -eq 0 ] || [ $$rc -eq 1 ]  # 1: the check names jedi and debugpy, left out on purpose

# Issue 44's anchor runs carry ANCHOR_DIR (experiments/cloud/anchor_gpu.sh): the wheels its header names, for the
# device image's Python (3.12, manylinux x86_64), and the stand-in tokenizer and alpaca rows; under 16 MiB.
ANCHOR_DIR    ?= .cache/anchor44
ANCHOR_PY     ?= 3.12
ANCHOR_WHEELS := torchtune==0.6.1 torchao==0.13.0 torchdata==0.11.0 omegaconf==2.4.0 datasets==4.8.4 dill==0.4.1 \
                 multiprocess==0.70.19
anchor-cache:
	$(VPY) -m pip download -q --no-deps --only-binary=:all: --python-version $(ANCHOR_PY) --implementation cp \
	  --platform manylinux_2_28_x86_64 --platform any -d $(ANCHOR_DIR)/whl $(ANCHOR_WHEELS)
	$(VPY) -m experiments.anchors.standin tokenizer --out $(ANCHOR_DIR)/data/tokenizer.model
	$(VPY) -m experiments.anchors.standin data --out $(ANCHOR_DIR)/data
	@du -sh $(ANCHOR_DIR); test "$$(du -sm $(ANCHOR_DIR) | cut -f1)" -lt 16 || { echo "$(ANCHOR_DIR) is 16 MiB or more" >&2; exit 1; }

install-offline:
	$(PYTHON) -m analysis.cli wheelhouse install --from $(WHEELHOUSE) $(if $(TARGET),--target $(TARGET))

clean:
	rm -rf report/ .pytest_cache .hypothesis
