"""The runner: run folders, resumption, failure reasons, claims experiments (definitions, searches, resolved
combinations), and a real `swift sft` smoke run on the CPU. The runner judges and measures nothing: its results are
read back here through `swiftbench parse` / `swiftbench tables`, as a user would."""
import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml

from experiments.base.errors import InputError
from experiments.launch import options as launch_options
from experiments.recipes import catalog, recipes
from experiments.run import cache as run_cache
from experiments.run import execute as run_execute
from experiments.run import folders as run_folders
from experiments.run import prepare as run_prepare
from experiments.run import runner
from experiments.run import spec as run_spec


def _cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "analysis.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=run_spec.ROOT, **kw)


def test_run_dirs_are_never_reused(tmp_path):
    spec = run_spec.RunSpec(hw="h200", experiment="seed", results_dir=str(tmp_path))
    dirs = {run_folders.new_run_dir(spec) for _ in range(3)}
    assert len(dirs) == 3 and all(d.parent == tmp_path / "h200" / "seed" for d in dirs)


def test_complete_runs_are_found_only_for_the_same_inputs(tmp_path):
    spec = run_spec.RunSpec(hw="h200", experiment="seed", results_dir=str(tmp_path), model="dummy", data="/d",
                          max_steps=30)
    d = run_folders.new_run_dir(spec)
    run_folders.write_status(d, status="ok", key=spec.key())
    assert run_folders.find_complete(spec) == d
    other = run_spec.RunSpec(**{**spec.__dict__, "max_steps": 40})
    assert run_folders.find_complete(other) is None


def test_stale_running_run_is_marked_interrupted(tmp_path):
    spec = run_spec.RunSpec(hw="h200", experiment="seed", results_dir=str(tmp_path))
    d = run_folders.new_run_dir(spec)
    run_folders.write_status(d, status="running", key=spec.key(), pid=2**22 + 12345, host="elsewhere")
    assert run_folders.find_complete(spec) is None
    assert json.loads((d / "run.json").read_text())["reason"].startswith("interrupted")


@pytest.mark.parametrize("rc,tail,timed_out,expect", [
    (1, "RuntimeError: CUDA out of memory. Tried to allocate", False, "OOM"),
    (-9, "", False, "killed by signal 9"),
    (None, "", True, "timeout"),
    (1, "Traceback\nValueError: bad flag --disable_cuda_graph\n", False, "crash (exit code 1): ValueError: bad flag"),
    # the supervisor stopped it because the runner died (a SIGKILLed run-all whose kernel lived on): interrupted,
    # whatever exit code ms-swift gave then, so that the next run-all resumes it
    (1, "{'loss': 1.0}\nreaper: the runner 4242 is gone: stopping the training (process group 7)\nTraceback\n"
        "KeyboardInterrupt\n", False, "interrupted (the supervisor stopped the training: the runner 4242 is gone)"),
])
def test_failure_reasons(rc, tail, timed_out, expect):
    assert run_execute.failure_reason(rc, tail, timed_out).startswith(expect)


def test_bad_hardware_name_exits_2(tmp_path):
    p = subprocess.run([sys.executable, "-m", "experiments.run.runner", "run-all", "--hw", "tpu9"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "unknown hardware 'tpu9'" in p.stderr and p.stderr.count("\n") == 1
    assert p.stderr.startswith("runner: error:")
    # the same command through swiftbench
    p = _cli("run-all", "--hw", "tpu9")
    assert p.returncode == 2 and p.stderr.startswith("swiftbench: error:") and "unknown hardware 'tpu9'" in p.stderr
    assert p.stderr.count("\n") == 1


@pytest.mark.parametrize("argv,needle", [
    (["--claims", "--experiments", "nope"], "unknown claims experiment 'nope'"),
    (["--claims", "--experiments", "plan:zz"], "no plan command 'zz'"),
    (["--experiments", "nope"], "unknown experiment 'nope'"),
    (["--set", "lora_rank"], "--set wants FLAG=VALUE"),
])
def test_bad_run_all_input_is_one_line(tmp_path, argv, needle):
    p = _cli("run-all", "--hw", "cpu", "--results", tmp_path, *argv)
    assert p.returncode == 2 and needle in p.stderr and p.stderr.count("\n") == 1, p.stderr
    assert not any(tmp_path.iterdir())


def test_the_runner_imports_no_analysis_stage():
    """Level 1 imports only analysis.core: no parser, no measurement, no verdict code (tests/test_layers.py checks
    the source; this checks what an import really loads)."""
    code = ("import sys, experiments.run.runner, experiments.recipes.catalog, experiments.recipes.plan, "
            "experiments.setup.wheelhouse;"
            "print(sorted(m for m in sys.modules if m.startswith('analysis.') and not m.startswith('analysis.core')))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=run_spec.ROOT)
    assert p.returncode == 0 and p.stdout.strip() == "[]", p.stdout + p.stderr
    assert not hasattr(runner, "summarise")


# --------------------------------------------------------------------------------------------- claims experiments


def test_runspec_resolves_claims_experiments_and_keeps_matrix_keys():
    spec = run_spec.RunSpec(hw="h200", experiment="rank4")
    assert spec.recipe == "seed" and spec.launcher == {"longest_first": True, "stop_after": 2}
    assert spec.max_steps is None  # a prefix of the full schedule (stop_after), not a shortened one
    assert spec.overrides == {"logging_steps": 1, "lora_rank": 4}
    key = spec.key()
    assert key["launcher"] == {"longest_first": True, "stop_after": 2} and key["recipe_name"] == "seed"
    assert key["recipe"] == recipes.recipe_hash("seed")
    # CLI values win; re-resolving a resolved spec (as the notebook does) changes nothing.
    cli = run_spec.RunSpec(hw="h200", experiment="rank4", max_steps=5, overrides={"lora_rank": 2})
    assert cli.max_steps == 5 and cli.overrides["lora_rank"] == 2
    again = run_spec.RunSpec(hw="h200", experiment="rank4", max_steps=spec.max_steps, overrides=spec.overrides,
                           timeout_s=spec.timeout_s)
    assert again.key() == key
    # Matrix experiments run through the launcher with recipes.yaml's measurement options (no profiler since harness
    # 2), which are part of their key: profiled runs (--profile) and plain ones (--plain: no launcher) are other keys.
    key = run_spec.RunSpec(hw="h200", experiment="seed").key()
    assert set(key) == {"experiment", "recipe", "model", "data", "max_steps", "overrides", "launcher"}
    assert key["launcher"] == {}
    profiled = run_spec.RunSpec(hw="h200", experiment="seed", profile=True).key()
    assert profiled["launcher"] == {"profile_steps": 2, "profile_skip": 10, "profile_activities": "kernels",
                                    "profile_warmup": 1}
    assert run_spec.RunSpec(hw="h200", experiment="fast-gc").key()["launcher"] == {"mem_cap_gib": 22.35}
    plain = run_spec.RunSpec(hw="h200", experiment="fast", plain=True)
    assert plain.launcher is None and "launcher" not in plain.key()
    with pytest.raises(InputError):
        run_spec.RunSpec(hw="h200", experiment="fast-gc", plain=True, profile=True)


def _tiny_inputs(tmp_path):
    from experiments.offline import localdata

    model, _, _ = run_prepare.resolve_model(run_spec.DUMMY_TINY, "cpu")
    data = tmp_path / "data"
    localdata.make_tiny_local_data(data, n=12)
    return model, data


def test_prepare_renders_the_launcher_command(tmp_path):
    model, data = _tiny_inputs(tmp_path)
    spec = run_spec.RunSpec(hw="cpu", experiment="cap24-bs4", model=run_spec.DUMMY_TINY, data=str(data),
                          results_dir=str(tmp_path / "results"))
    run_dir = run_folders.new_run_dir(spec)
    ctx = run_prepare.prepare(spec, run_dir)
    la = ctx["launch_argv"]
    assert la[:3] == [sys.executable, "-m", "experiments.launch"]
    assert la[3:la.index("--")] == ["--mem-cap-gib", "24", "--longest-first"]
    swift = la[la.index("--") + 1:]
    assert swift[:2] == ["swift", "sft"] and swift == ctx["argv"]
    assert swift[swift.index("--per_device_train_batch_size") + 1] == "4"
    assert swift[swift.index("--gradient_accumulation_steps") + 1] == "1"
    assert swift[swift.index("--max_steps") + 1] == "2"
    sh = (run_dir / "command.sh").read_text()
    assert "python -m experiments.launch --mem-cap-gib 24 --longest-first -- swift sft \\\n  --model" in sh
    assert "# --per_device_train_batch_size 4: claims experiment cap24-bs4" in sh
    # the launcher's own line (lost from every command.sh made between 2026-12-01 and the fix)
    assert "# run in-process by experiments/launch/launcher.py --mem-cap-gib 24 --longest-first (claims experiment " \
           "on recipe seed)" in sh
    status = json.loads((run_dir / "run.json").read_text())
    assert status["command"] == ctx["argv"] and status["launch_command"] == la
    assert status["key"]["launcher"] == {"mem_cap_gib": 24, "longest_first": True}
    # ms-swift's output_dir is a cache folder outside results/ whose log and args.json link into the run folder
    work = run_cache.work_dir(run_dir)
    assert swift[swift.index("--output_dir") + 1] == str(work) == status["work_dir"]
    assert (work / "logging.jsonl").resolve() == (run_dir / "logging.jsonl").resolve()
    shutil.rmtree(work)


def test_the_notebook_runs_the_spec_the_runner_resolved(tmp_path, monkeypatch):
    """A resolved combination's launcher (tp-combo + --sdpa-padding-free) must reach the notebook's RunSpec: twice on
    2026-11-30 the notebook rebuilt the spec from the experiment's definition and the combination crashed in ms-swift.
    The notebook's parameter cell and spec cell run here in-process, with papermill's parameters injected."""
    import papermill as pm

    captured = {}
    monkeypatch.setattr(pm, "execute_notebook", lambda *a, **k: captured.update(k["parameters"]))
    launcher = {"sdpa_padding_free": True, "stop_after": 46, "profile_steps": 2, "profile_skip": 40}
    spec = run_spec.RunSpec(hw="h200", experiment="tp-combo", model="dummy", data=".data",
                          overrides={"padding_free": True, "attn_impl": "sdpa"}, launcher=launcher)
    runner.run_notebook(spec, tmp_path / "run", progress=False)
    assert json.loads(captured["launcher_json"]) == launcher
    cells = json.loads(run_spec.NOTEBOOK.read_text())["cells"]
    params = next(c for c in cells if "parameters" in (c.get("metadata", {}).get("tags") or []))
    spec_cell = next(c for c in cells if "run_spec.RunSpec(" in "".join(c["source"]))
    seen = {}

    class Stop(Exception):
        pass

    def fake_prepare(s, path):
        seen["spec"] = s
        raise Stop

    monkeypatch.setattr(run_prepare, "prepare", fake_prepare)
    ns: dict = {}
    exec("".join(params["source"]), ns)
    ns.update(captured)  # what papermill injects after the parameters cell
    with pytest.raises(Stop):
        exec("".join(spec_cell["source"]), ns)
    assert seen["spec"].launcher == launcher and seen["spec"].overrides["padding_free"] is True
    # without a launcher the notebook falls back to the definition's (plain tp-pf keeps its own)
    captured.clear()
    runner.run_notebook(run_spec.RunSpec(hw="h200", experiment="tp-pf", model="dummy", data=".data"), tmp_path / "r2",
                        progress=False)
    ns = {}
    exec("".join(params["source"]), ns)
    ns.update({**captured, "launcher_json": ""})
    with pytest.raises(Stop):
        exec("".join(spec_cell["source"]), ns)
    assert seen["spec"].launcher == catalog.experiment("tp-pf")["launcher"]


def test_run_claims_blocks_what_cannot_run_here(tmp_path):
    res = runner.run_claims("cpu", ["cap24", "tp-padding-free", "tp-combo"], progress=False,
                            results_dir=str(tmp_path))
    assert [r["status"] for r in res] == ["blocked"] * 3
    assert "CUDA" in res[0]["reason"] and "flash" in res[1]["reason"]
    assert res[2]["reason"] == "run `swiftbench claims resolve tp-combo --hw cpu` first"
    assert not any(tmp_path.iterdir())


def _write_resolved(results, hw, data) -> None:
    path = catalog.resolved_path(results, hw, "tp-combo")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))


def _fake_run_one(monkeypatch) -> list:
    ran = []

    def fake(spec, console, progress, claims_mode=False):
        ran.append(spec)
        return {"experiment": spec.experiment, "run_dir": "x", "status": "ok", "outcome": "ok"}

    monkeypatch.setattr(runner, "_run_one", fake)
    return ran


def test_a_combination_runs_its_resolved_recipe(tmp_path, monkeypatch):
    """tp-combo runs what `swiftbench claims resolve` wrote (overrides and launcher as they are there, with
    --set on top); the runner does not look at its members' runs."""
    ran = _fake_run_one(monkeypatch)
    resolved = {"experiment": "tp-combo", "used": ["tp-pf", "tp-bs8"], "reason": "combined tp-pf, tp-bs8",
                "made": "2026-12-01T10:00:00+00:00",
                "overrides": {"eval_steps": 23, "padding_free": True, "attn_impl": "sdpa",
                              "per_device_train_batch_size": 8, "gradient_accumulation_steps": 2,
                              "external_plugins": "swiftbench"},
                "launcher": {"stop_after": 46, "profile_steps": 2, "profile_skip": 40}}
    _write_resolved(tmp_path, "h200", resolved)
    res = runner.run_claims("h200", ["tp-combo"], progress=False, results_dir=str(tmp_path),
                            overrides={"seed": "7"})
    assert [r["status"] for r in res] == ["ok"]
    (spec,) = ran
    assert spec.experiment == "tp-combo" and spec.recipe == "bs16" and spec.launcher == resolved["launcher"]
    assert spec.overrides == {"logging_steps": 1, **resolved["overrides"], "seed": "7"}
    assert launch_options.option_argv(spec.launcher) == ["--profile-steps", "2", "--profile-skip", "40",
                                                         "--stop-after", "46"]
    # a resolved file written before the plugin (a launcher option that changed the training) is refused, one line
    _write_resolved(tmp_path, "h200", {**resolved, "launcher": {"sdpa_padding_free": True, "stop_after": 46}})
    stale = runner.run_claims("h200", ["tp-combo"], progress=False, results_dir=str(tmp_path))
    assert [r["status"] for r in stale] == ["blocked"] and "sdpa_padding_free" in stale[0]["reason"]
    # another hardware class has no resolved recipe yet
    assert runner.run_claims("a100", ["tp-combo"], progress=False, results_dir=str(tmp_path))[0]["status"] \
        == "blocked"


def test_a_combination_that_could_not_be_resolved_is_blocked(tmp_path, monkeypatch):
    ran = _fake_run_one(monkeypatch)
    _write_resolved(tmp_path, "h200", {"experiment": "tp-combo", "overrides": None, "launcher": None, "used": [],
                                       "reason": "no recipe in `combine` was faster and counted"})
    (res,) = runner.run_claims("h200", ["tp-combo"], progress=False, results_dir=str(tmp_path))
    assert res["status"] == "blocked" and res["reason"] == "no recipe in `combine` was faster and counted"
    # a broken file blocks the combination and names the file; the chain goes on
    _write_resolved(tmp_path, "h200", "experiment: tp-best\n")
    res = runner.run_claims("h200", ["tp-combo", "rank4"], progress=False, results_dir=str(tmp_path))
    assert [r["status"] for r in res] == ["blocked", "ok"] and "tp-combo.yaml" in res[0]["reason"]
    assert [s.experiment for s in ran] == ["rank4"]


def test_a_search_probes_until_it_is_bracketed(tmp_path, monkeypatch):
    """cap40 starts at 16 (OOM), goes down to 12 (trains): done, with 12 next to 16."""
    outcome = {16: "oom", 12: "ok"}
    ran = []

    def fake(spec, console, progress, claims_mode=False):
        ran.append(spec.experiment)
        o = outcome[spec.overrides["per_device_train_batch_size"]]
        return {"experiment": spec.experiment, "run_dir": "x", "status": o, "outcome": o}

    monkeypatch.setattr(runner, "_run_one", fake)
    res = runner.run_claims("h200", ["cap40"], progress=False, results_dir=str(tmp_path))
    assert ran == ["cap40-bs16", "cap40-bs12"] and [r["outcome"] for r in res] == ["oom", "ok"]


@pytest.mark.slow
def test_cpu_smoke_run_all_twice(tmp_path):
    """Real swift sft through run-all, the notebook and the runner on a tiny random Qwen2 model (float32)."""
    from experiments.offline.localdata import make_tiny_local_data

    data = tmp_path / "data"
    make_tiny_local_data(data, n=24)
    results = tmp_path / "results"
    # 15 steps: the warm-up (the first 10 steps: the epoch of ~1,500 samples at 2 a step is long) and the two
    # profiled steps 11-12 leave the intervals 12-13, 13-14, 14-15 steady
    cmd = [sys.executable, "-m", "experiments.run.runner", "run-all", "--hw", "cpu", "--model", "dummy:tiny",
           "--data", str(data), "--max-steps", "15", "--results", str(results), "--experiments", "seed",
           "--set", "logging_steps=1", "--set", "gradient_accumulation_steps=2", "--no-progress", "--profile"]
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert first.returncode == 0, first.stderr[-3000:]
    (run_dir,) = list((results / "cpu" / "seed").iterdir())
    status = json.loads((run_dir / "run.json").read_text())
    assert status["status"] == "ok" and status["dummy_weights"] and status["offline_data"] and status["max_steps"] == 15
    env_json = json.loads((run_dir / "env.json").read_text())
    assert env_json["hw"] == "cpu" and env_json["gpu_count"] == 0 and env_json["packages"]["ms-swift"] == "4.6.0"
    command = (run_dir / "command.sh").read_text()
    assert "--tuner_type lora" in command and "--split_dataset_ratio 0.01" in command
    assert "--max_steps 15" in command and "export HF_HUB_OFFLINE=1" in command
    assert "experiments.launch --profile-steps 2 --profile-skip 10 --profile-activities kernels" in command
    assert (run_dir / "sft.ipynb").is_file() and (run_dir / "model_config.json").is_file()
    assert not list(run_dir.glob("checkpoint-*")) and not (run_dir / "val_dataset.jsonl").exists()
    parsed = _cli("parse", run_dir, "--json", "--intervals")
    assert parsed.returncode == 0, parsed.stderr
    (m,) = json.loads(parsed.stdout)
    assert m["complete"] and m["global_steps"] == 15 and m["swift_version"] == "4.6.0"
    assert m["per_device_batch"] == 1 and m["grad_accum"] == 2 and m["samples_per_step"] == 2
    # the steady candidates are 12-13, 13-14 and 14-15; on a loaded 2-core machine one may be a slow outlier, which
    # the measure stage leaves out with its reason
    kept = [iv for iv in m["step_intervals"] if iv["excluded"] is None]
    assert [(iv["from_step"], iv["to_step"]) for iv in kept] in (
        [(12, 13), (13, 14), (14, 15)], [(13, 14), (14, 15)], [(12, 13), (14, 15)], [(12, 13), (13, 14)])
    assert m["step_time_s"]["n_intervals"] == len(kept) and m["step_time_s"]["median"] > 0
    # tokens/s by hand from the raw files: the launcher's counted tokens of the kept intervals' steps over their
    # seconds between the log's lines (elapsed = cumulative train_speed(s/it) x step)
    tokens = {d["step"]: d["tokens"] for d in map(json.loads, (run_dir / "tokens.jsonl").read_text().splitlines())}
    lines = [d for d in map(json.loads, (run_dir / "logging.jsonl").read_text().splitlines()) if "loss" in d]
    elapsed = {int(d["global_step/max_steps"].split("/")[0]): d["train_speed(s/it)"]
               * int(d["global_step/max_steps"].split("/")[0]) for d in lines}
    assert m["tokens_source"] == "tokens.jsonl"
    assert m["tokens_per_s"] == pytest.approx(
        sum(tokens[iv["to_step"]] for iv in kept) / sum(elapsed[iv["to_step"]] - elapsed[iv["from_step"]]
                                                        for iv in kept), rel=1e-6)
    profile = json.loads((run_dir / "profile.json").read_text())
    # step 10 under the profiler unmeasured (the recipes' profile_warmup), 11-12 measured; no CUDA here
    assert [(s["step"], bool(s.get("warmup"))) for s in profile["steps"]] == [(10, True), (11, False), (12, False)]
    assert profile["activities"] == ["CPU"]
    assert len(m["train_loss"]) == 15 and m["final_eval_loss"] is not None
    # the executed notebook showed the same metrics through `swiftbench parse` (a process of its own)
    outputs = "".join(o.get("text", "") if isinstance(o.get("text", ""), str) else "".join(o["text"])
                      for c in json.loads((run_dir / "sft.ipynb").read_text())["cells"] for o in c.get("outputs", []))
    assert "tokens/s" in outputs and "swiftbench parse failed" not in outputs
    tables = _cli("tables", results, "--format", "json")
    assert tables.returncode == 0, tables.stderr
    (row,) = [r for r in json.loads(tables.stdout)["speedup"] if r["hw"] == "cpu" and r["source"] == "measured"]
    assert "dummy weights" in row["labels"] and "cut run (15 steps)" in row["labels"]
    assert row["host"] == env_json["host"]["fingerprint"]["host_id"] and row["host_python_ns"] > 0

    second = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert second.returncode == 0 and "skip" in second.stderr
    assert len(list((results / "cpu" / "seed").iterdir())) == 1


@pytest.mark.slow
def test_cpu_rounds_run_the_plain_command_through_bash_beside_the_launcher(tmp_path):
    """run-all --repeats 1 --plain: the launcher run, then the printed command alone (bash command.sh), each with its
    place in the set and the host probe after it; the plain run has no launcher files."""
    from experiments.offline.localdata import make_tiny_local_data

    data = tmp_path / "data"
    make_tiny_local_data(data, n=12)
    results = tmp_path / "results"
    cmd = [sys.executable, "-m", "experiments.run.runner", "run-all", "--hw", "cpu", "--model", "dummy:tiny",
           "--data", str(data), "--results", str(results), "--experiments", "seed@2", "--repeats", "1",
           "--plain", "seed", "--set", "logging_steps=1", "--no-progress"]
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "TOKENIZERS_PARALLELISM": "false"},
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    runs = sorted((results / "cpu" / "seed").iterdir())
    status = [json.loads((r / "run.json").read_text()) for r in runs]
    assert [s["status"] for s in status] == ["ok", "ok"]
    assert [(s["round"]["round"], s["round"]["slot"], s["round"]["item"]) for s in status] == [
        (1, 1, "seed@2"), (1, 2, "seed@2 (plain)")]
    assert status[0]["round"]["set"] == status[1]["round"]["set"] and status[1]["harness"] == "plain"
    assert all(s["probe_after"]["python_loop"]["value"] > 0 for s in status)
    # the plain run's before-probe is the launcher run's after-probe, measured once
    env_plain = json.loads((runs[1] / "env.json").read_text())
    assert env_plain["host"]["probe"]["python_loop"] == status[0]["probe_after"]["python_loop"]
    assert (runs[0] / "launch.json").is_file() and (runs[0] / "tokens.jsonl").is_file()
    assert not (runs[1] / "launch.json").exists() and not (runs[1] / "tokens.jsonl").exists()
    assert "experiments.launch" not in (runs[1] / "command.sh").read_text()
    assert json.loads((runs[0] / "launch.json").read_text())["harness"] == 2
    assert not (runs[0] / "profile.json").exists()  # harness 2: no profiler unless asked


def test_a_second_runner_does_not_train_an_experiment_another_runner_holds(tmp_path, monkeypatch):
    """Two run-all on one results folder: the second finds the experiment's lock held and starts nothing; once the
    first is gone (its OS lock with it, even when killed), the experiment runs."""
    from rich.console import Console

    spec = run_spec.RunSpec(hw="h200", experiment="seed", model="dummy", results_dir=str(tmp_path))
    ran = []
    monkeypatch.setattr(runner, "run_notebook", lambda spec, run_dir, progress: ran.append(run_dir))
    monkeypatch.setattr(runner, "preflight", lambda spec: None)  # no H200 here
    lock = tmp_path / runner.LOCKS / "h200-seed.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, sys, time; f = open(sys.argv[1], 'a+'); fcntl.flock(f, fcntl.LOCK_EX); f.write('4242 other\\n');"
        " f.flush(); print('held', flush=True); time.sleep(60)"), str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        res = runner._run_one(spec, Console(file=open(os.devnull, "w")), progress=False)
        assert res["status"] == "busy" and res["run_dir"] is None and ran == []
        assert not (tmp_path / "h200" / "seed").exists()  # no run folder for a run that never started
    finally:
        holder.kill()
        holder.wait()
    held_by = []
    monkeypatch.setattr(runner, "run_notebook", lambda spec, run_dir, progress: (ran.append(run_dir),
                                                                                 held_by.append(lock.read_text())))
    res = runner._run_one(spec, Console(file=open(os.devnull, "w")), progress=False)
    assert len(ran) == 1 and res["run_dir"] == str(ran[0])
    assert held_by[0].split()[0] == str(os.getpid())  # the killed holder's file, taken over while it ran
    assert not lock.exists()  # and gone with the lock


def test_a_training_whose_runner_is_gone_is_interrupted_whatever_it_printed():
    """The kernel outlived its SIGKILLed runner: the stopped training is interrupted (resumed next time), even with
    an OOM line or a crash in its log; a time limit stays a timeout."""
    reason = run_execute.failure_reason(1, "RuntimeError: CUDA out of memory", False, runner_gone=4242)
    assert reason == "interrupted (the runner 4242 is gone)"
    assert run_execute.failure_reason(-15, "", True, runner_gone=4242) == "timeout"


def test_a_multi_gpu_run_without_the_launcher_renders_ms_swifts_own_launch(tmp_path, monkeypatch):
    """`launcher: None` on 2 GPUs: NPROC_PER_NODE=2 on the command line. This branch read the launcher's options,
    which it never set (an unbound name: a multi-GPU run without the launcher crashed in prepare)."""
    model, data = _tiny_inputs(tmp_path)
    monkeypatch.setattr(run_prepare.gpu, "check_hardware", lambda *a, **k: {"forced": False})
    spec = run_spec.RunSpec(hw="cpu", experiment="seed", model=run_spec.DUMMY_TINY, data=str(data), gpus=2,
                            results_dir=str(tmp_path / "results"))
    spec.launcher = None  # plain `swift sft`, as a user's own matrix entry without launcher options would be
    run_dir = run_folders.new_run_dir(spec)
    ctx = run_prepare.prepare(spec, run_dir)
    assert ctx["launch_argv"] is None and ctx["env"]["NPROC_PER_NODE"] == "2"
    sh = (run_dir / "command.sh").read_text()
    assert "NPROC_PER_NODE=2 swift sft" in sh and "run in-process" not in sh
    shutil.rmtree(run_cache.work_dir(run_dir))
