"""The third fault sweep (issue 48): silent wrong or dropped results and contract breaks. One test per finding:
repeats of a step that no recorded resume explains, run.json's fields against its folder, a run folder without
env.json, mixture-of-experts configs in the planner, a side file's bad line, and the commands' contract breaks."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from faultkit import cli, one_line, tree


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _write_lines(path: Path, lines: list[dict]) -> None:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def _train_at(lines: list[dict], step: int) -> int:
    return next(i for i, x in enumerate(lines) if x.get("global_step/max_steps") == f"{step}/30" and "loss" in x)


# ------------------------------------------------------------------------------------- silent wrong or dropped

def test_a_resume_without_run_json_record_is_bad_input(tmp_path):
    """Killed after step 20, resumed from checkpoint 10 with nothing in run.json: steps 15 and 20 logged again with
    the resumed process's times were dropped as node copies, and the run read as one (tokens/s low)."""
    root, bad, _ = tree(tmp_path)
    log = bad / "logging.jsonl"
    lines = _lines(log)
    i15, i20 = _train_at(lines, 15), _train_at(lines, 20)
    again = [dict(lines[i], **{"train_speed(s/it)": lines[i]["train_speed(s/it)"] * 3}) for i in (i15, i20)]
    _write_lines(log, lines[:i20 + 1] + again + lines[i20 + 1:])
    rc, out, err = cli("parse", bad, "--json")
    line = one_line(rc, err, "logging.jsonl:")
    assert "run.json records no resume" in line and out == "", line


def test_a_training_line_repeated_with_another_speed_in_a_one_node_run_is_bad_input(tmp_path):
    """One node (args.json: global_world_size = local_world_size) writes each line once: a copy with another
    train_speed is no node master's copy."""
    root, bad, _ = tree(tmp_path)
    log = bad / "logging.jsonl"
    lines = _lines(log)
    i = _train_at(lines, 20)
    lines.insert(i + 1, dict(lines[i], **{"train_speed(s/it)": lines[i]["train_speed(s/it)"] * 1.5}))
    _write_lines(log, lines)
    rc, out, err = cli("parse", bad, "--json")
    one_line(rc, err, f"logging.jsonl:{i + 2}: step 20 logged twice with different values")


def test_node_copies_with_their_own_speeds_are_dropped_and_said(tmp_path):
    """Two nodes (args.json says so) write each line twice with their own speeds: one line kept, the drop said."""
    root, bad, _ = tree(tmp_path)
    args = json.loads((bad / "args.json").read_text())
    args.update(global_world_size=16, local_world_size=8)
    (bad / "args.json").write_text(json.dumps(args))
    log = bad / "logging.jsonl"
    lines = _lines(log)
    i = _train_at(lines, 20)
    lines.insert(i + 1, dict(lines[i], **{"train_speed(s/it)": lines[i]["train_speed(s/it)"] * 1.5}))
    _write_lines(log, lines)
    rc, out, err = cli("parse", bad, "--json")
    (m,) = json.loads(out)
    assert rc == 0 and m["duplicate_lines_dropped"] == 1
    assert any("line" in w and "node" in w for w in m["warnings"]), m["warnings"]


def _skipped(root: Path, bad: Path, needle: str) -> dict:
    """tables of ROOT: exit 3, one line naming BAD and NEEDLE, and no row of BAD; the JSON tables."""
    rc, out, err = cli("tables", root, "--format", "json")
    line = one_line(rc, err, needle, code=3)
    assert line.startswith(f"swiftbench: skipped {bad}: "), line
    tables = json.loads(out)
    assert bad.name not in {r.get("run") for r in tables["convergence"]}
    return tables


@pytest.mark.parametrize("where", [("experiment",), ("key", "experiment"), ("spec", "experiment")])
def test_run_json_naming_another_experiment_than_its_folder_is_no_row(tmp_path, where):
    """A copy of a seed run whose run.json says bs16 made a bs16 recipe row in `tables --answer`."""
    root, bad, _ = tree(tmp_path)
    status = json.loads((bad / "run.json").read_text())
    node = status
    for k in where[:-1]:
        node = node[k]
    node[where[-1]] = "bs16"
    (bad / "run.json").write_text(json.dumps(status))
    _skipped(root, bad, "run.json: experiment 'bs16' but the folder is under seed/")


def test_a_runner_folder_without_env_json_is_skipped_and_said(tmp_path):
    """env.json deleted from a run folder: its recipe row vanished from tables (no host), exit 0, nothing said."""
    root, bad, _ = tree(tmp_path)
    (bad / "env.json").unlink()
    _skipped(root, bad, "env.json: missing")


MIXTRAL = {"architectures": ["MixtralForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
           "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000,
           "num_local_experts": 8, "num_experts_per_tok": 2, "model_type": "mixtral"}
QWEN3_MOE = {"architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 2048, "intermediate_size": 6144,
             "moe_intermediate_size": 768, "num_hidden_layers": 48, "num_attention_heads": 32,
             "num_key_value_heads": 4, "head_dim": 128, "vocab_size": 151936, "num_experts": 128,
             "num_experts_per_tok": 8, "model_type": "qwen3_moe"}


@pytest.mark.parametrize("config, needle", [
    (MIXTRAL, "a mixture-of-experts model (8 experts, 2 per token)"),
    (QWEN3_MOE, "a mixture-of-experts model (128 experts, 8 per token)"),
])
def test_plan_refuses_a_mixture_of_experts_config_in_one_line(tmp_path, config, needle):
    """Mixtral-8x7B (46.7 B parameters) was planned as a dense 7 B model: it "fitted" an A10 with 13.5 GiB of
    weights."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    rc, out, err = cli("plan", "--model", path, "--hw", "a10", "--json")
    line = one_line(rc, err, needle)
    assert str(path) in line and out == ""


def test_a_tokens_line_in_the_middle_that_is_no_json_is_bad_input(tmp_path):
    """One tokens.jsonl line in the middle not JSON was skipped without a word, and tokens/s changed; only a killed
    run's torn last line may be no JSON."""
    root, bad, _ = tree(tmp_path)
    path = bad / "tokens.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    lines[9] = '{"step": 10, "micro_batches": 16, "tok\n'
    path.write_text("".join(lines))
    _skipped(root, bad, "tokens.jsonl:10: not valid JSON")


def test_a_torn_last_tokens_line_is_still_read(tmp_path):
    from analysis.parse import sidefiles

    root, bad, _ = tree(tmp_path)
    path = bad / "tokens.jsonl"
    whole = sidefiles.read_tokens(bad)[0]
    path.write_text(path.read_text() + '{"step": 31, "micro')
    assert sidefiles.read_tokens(bad)[0] == whole


# ------------------------------------------------------------------------------------- hardware names: one rule

@pytest.mark.parametrize("argv", [("claims", "--hw", "zz9"), ("claims", "resolve", "tp-combo", "--hw", "zz9")])
def test_claims_refuses_unknown_hardware(tmp_path, argv):
    root, _, _ = tree(tmp_path)
    rc, out, err = cli(*argv, root)
    one_line(rc, err, "unknown hardware 'zz9'")


def test_a_hardware_name_in_upper_case_is_the_class_in_every_command(tmp_path):
    """plan took H200, tables, import, run-all and report refused it: one rule (hardware.user_key, plan's)."""
    from experiments.base import hardware

    assert hardware.user_key("H200") == "h200" and hardware.user_key("h200") == "h200"
    root, _, _ = tree(tmp_path)
    rc_lower, out_lower, _ = cli("tables", root, "--baseline", "h200", "--format", "json")
    rc, out, err = cli("tables", root, "--baseline", "H200", "--format", "json")
    assert (rc, out) == (rc_lower, out_lower), err
    src = tmp_path / "out" / "v0-20261201-000000"
    src.mkdir(parents=True)
    (src / "logging.jsonl").write_bytes((root / "h200" / "seed").glob("*/logging.jsonl").__next__().read_bytes())
    rc, out, err = cli("import", tmp_path / "out", "--hw", "H200", "--experiment", "mine", "--results", root)
    assert rc == 0 and list((root / "h200" / "mine").iterdir()) and not (root / "H200").exists(), err


def test_a_right_to_left_override_in_a_folder_name_prints_escaped(tmp_path):
    """U+202E in a folder name was printed raw: the line then reads backwards from there on a terminal."""
    root, bad, _ = tree(tmp_path)
    odd = bad.with_name("run\u202etxt.exe\u2066x\u200f")
    bad.rename(odd)
    (odd / "run.json").write_text("{broken")
    rc, out, err = cli("tables", root, "--format", "json")
    line = one_line(rc, err, "run\\u202etxt.exe\\u2066x\\u200f", code=3)
    assert not any(c in err for c in "\u202e\u2066\u200f"), line
    rc, out, err = cli("parse", odd)
    assert "\u202e" not in err and err.count("\n") == 1 and rc == 2


# ------------------------------------------------------------------------------------- run-all's own checks

def _run_all(tmp_path, monkeypatch, *extra):
    from experiments.run import runner

    monkeypatch.setattr(runner, "_run_one", lambda *a, **k: pytest.fail("a run was started"))
    return cli("run-all", "--hw", "cpu", "--model", "dummy", "--experiments", "seed", "--results",
               tmp_path / "results", "--no-progress", *extra)


@pytest.mark.parametrize("item", ["=5", " =5", "a b=1", "9lives=1", "=x=y"])
def test_run_all_refuses_a_set_item_without_a_flag_name(tmp_path, monkeypatch, item):
    """`--set '=5'` handed `swift sft` a bare `-- 5`."""
    rc, out, err = _run_all(tmp_path, monkeypatch, "--set", item)
    one_line(rc, err, "--set wants FLAG=VALUE")
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("item, owned", [
    ("output_di=/tmp/x", "output_dir"), ("max_step=5", "max_steps"), ("output-d=/tmp/x", "output_dir"),
    ("resume_from=/x", "resume_from_checkpoint"), ("deeps=zero2", "deepspeed")])
def test_run_all_refuses_an_abbreviation_of_a_flag_the_runner_owns(tmp_path, monkeypatch, item, owned):
    """ms-swift's parser (argparse, allow_abbrev) reads --output_di as --output_dir: the owned-flag check follows it."""
    rc, out, err = _run_all(tmp_path, monkeypatch, "--set", item)
    one_line(rc, err, f"the runner sets --{owned} for every run")


def test_run_all_refuses_max_steps_no_run_folder_can_hold(tmp_path, monkeypatch):
    """10^30 steps started training, and tables then refused its folder (run.json max_steps at most 10^9)."""
    rc, out, err = _run_all(tmp_path, monkeypatch, "--max-steps", "1" + "0" * 30)
    one_line(rc, err, "--max-steps wants a whole number from 1 to 1,000,000,000")


@pytest.mark.parametrize("item, needle", [
    ("logging_steps=0", "--set logging_steps=0: ms-swift wants a number > 0"),
    ("eval_steps=-5", "--set eval_steps=-5: ms-swift wants a number > 0"),
    ("save_steps=2.5", "--set save_steps=2.5: ms-swift wants a whole number above 1"),
    ("gradient_accumulation_steps=0", "--set gradient_accumulation_steps=0: ms-swift wants a whole number >= 1"),
    ("per_device_train_batch_size=x", "--set per_device_train_batch_size=x: ms-swift wants a whole number >= 1"),
])
def test_run_all_refuses_a_value_ms_swift_refuses_before_anything_starts(tmp_path, monkeypatch, item, needle):
    """--set logging_steps=0 started a run that then crashed (exit 1)."""
    rc, out, err = _run_all(tmp_path, monkeypatch, "--set", item)
    one_line(rc, err, needle)


# ------------------------------------------------------------------------------------- import

def _swift_output(tmp_path: Path, *names: str) -> Path:
    """A swift sft output folder with the seed run's log (and args.json) in each vN folder of NAMES."""
    from faultkit import SEED_RUN

    out = tmp_path / "output"
    for name in names:
        (out / name).mkdir(parents=True)
        (out / name / "logging.jsonl").write_bytes((SEED_RUN / "logging.jsonl").read_bytes())
    return out


def test_import_of_one_log_in_two_run_folders_writes_nothing(tmp_path):
    """The same log in v0 and v1: exit 2 "already imported", yet v0's run folder was written."""
    src = _swift_output(tmp_path, "v0-20261201-000000", "v1-20261201-000500")
    results = tmp_path / "results"
    rc, out, err = cli("import", src, "--hw", "h200", "--experiment", "mine", "--results", results)
    line = one_line(rc, err, "the same log as")
    assert "v0-20261201-000000" in line and "v1-20261201-000500" in line
    assert not results.exists() or not any(results.rglob("logging.jsonl"))


def test_import_with_results_inside_its_source_twice_is_already_there(tmp_path):
    src = _swift_output(tmp_path, "v0-20261201-000000")
    results = src / "results"
    rc, out, err = cli("import", src, "--hw", "h200", "--experiment", "mine", "--results", results)
    assert rc == 0 and out.startswith("imported: "), err
    rc, out, err = cli("import", src, "--hw", "h200", "--experiment", "mine", "--results", results)
    assert rc == 0 and out.startswith("already there: ") and out.count("\n") == 1 and err == "", (rc, out, err)


# ------------------------------------------------------------------------------------- plugin

def test_plugin_copy_onto_a_symlink_replaces_the_link_not_its_target(tmp_path):
    from experiments.recipes.recipes import plugin_path

    outside = tmp_path / "private.py"
    outside.write_text("mine\n")
    dest = tmp_path / "dir"
    dest.mkdir()
    (dest / "swift_plugin.py").symlink_to(outside)
    rc, out, err = cli("plugin", "--copy", dest)
    assert rc == 0 and err == "" and outside.read_text() == "mine\n", (rc, err)
    target = dest / "swift_plugin.py"
    assert not target.is_symlink() and target.read_bytes() == plugin_path().read_bytes()
    assert out.strip() == str(target.resolve())


def test_plugin_copy_into_its_own_folder_is_the_file_itself():
    from experiments.recipes.recipes import plugin_path

    before = plugin_path().read_bytes()
    rc, out, err = cli("plugin", "--copy", plugin_path().parent)
    assert rc == 0 and err == "" and out.strip() == str(plugin_path().resolve()), (rc, err)
    assert plugin_path().read_bytes() == before


def test_plugin_copy_onto_a_fifo_says_what_is_there(tmp_path):
    import os

    os.mkfifo(tmp_path / "swift_plugin.py")
    rc, out, err = cli("plugin", "--copy", tmp_path)
    line = one_line(rc, err, "FIFO")
    assert "None" not in line and str(tmp_path / "swift_plugin.py") in line


def test_the_plugin_under_an_ms_swift_without_swift_arguments_is_one_line(monkeypatch, capsys):
    """swift.callbacks there, swift.arguments not (an older or partial ms-swift): importing the plugin was a
    traceback; it is one line naming the ms-swift it needs, and the run stops."""
    import importlib.machinery
    import importlib.util
    import sys
    import types

    from experiments.recipes.recipes import plugin_path

    swift = importlib.util.module_from_spec(importlib.machinery.ModuleSpec("swift", None, is_package=True))
    swift.__version__ = "3.2.1"
    callbacks = types.ModuleType("swift.callbacks")
    callbacks.callbacks_map = {}
    monkeypatch.setitem(sys.modules, "swift", swift)
    monkeypatch.setitem(sys.modules, "swift.callbacks", callbacks)
    monkeypatch.setitem(sys.modules, "swift.arguments", None)
    spec = importlib.util.spec_from_file_location("old_swift_plugin", plugin_path())
    module = importlib.util.module_from_spec(spec)
    with pytest.raises(SystemExit) as exc:
        spec.loader.exec_module(module)
    text = str(exc.value.code)
    assert "\n" not in text and "ms-swift 4" in text and "3.2.1" in text and "swift.arguments" in text, text
    assert callbacks.callbacks_map == {}


# ------------------------------------------------------------------------------------- a full disk during a run

def test_a_full_disk_during_a_run_leaves_no_cut_notebook_and_no_running_run_json(tmp_path, monkeypatch):
    """The results tree on a nearly full disk: one line, exit 2, but sft.ipynb was left cut short (no JSON) and
    run.json still said running. Nothing half-written: no notebook but a whole one, the run marked failed."""
    import errno
    import os
    import socket

    import papermill

    from experiments.run import folders

    state = {"full": False, "run_dir": None}
    real_fsync = os.fsync

    def fsync(fd):  # the disk is full while the cut notebook's bytes take its last blocks
        if state["full"] and any("ipynb" in p.name for p in state["run_dir"].iterdir()):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)

    def execute_notebook(src, out, **kw):  # the kernel marks the run running; papermill's write then hits the end
        run_dir = Path(out).parent
        state["run_dir"] = run_dir
        folders.write_status(run_dir, status="running", pid=os.getpid(), host=socket.gethostname())
        Path(out).write_text('{"cells": [{"cell_type": "co')
        state["full"] = True
        raise OSError(errno.ENOSPC, "No space left on device", out)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(papermill, "execute_notebook", execute_notebook)
    results = tmp_path / "results"
    rc, out, err = cli("run-all", "--hw", "cpu", "--model", "dummy", "--experiments", "seed", "--results", results,
                       "--no-progress", "--max-steps", "2")
    run_dir = state["run_dir"]
    assert run_dir is not None, (rc, err)
    for p in run_dir.iterdir():
        assert "ipynb" not in p.name or json.loads(p.read_text()), p
    status = json.loads((run_dir / "run.json").read_text())
    assert status["status"] == "failed" and "No space left on device" in status["reason"], status
    errors = [x for x in err.splitlines() if x.startswith("swiftbench: ")]  # the console said which run it started
    assert rc == 2 and len(errors) == 1 and "No space left on device" in errors[0], (rc, err)


def test_run_all_takes_an_upper_case_hardware_name_as_its_class(tmp_path, monkeypatch):
    """run-all --hw H200 was 'unknown hardware'; now it is the h200 class (here on a machine without one: the GPU
    check refuses it, naming h200)."""
    from experiments.record import gpu

    seen = []
    monkeypatch.setattr(gpu, "check_hardware", lambda hw, *a, **k: seen.append(hw) or {"forced": False})
    from experiments.run import runner

    monkeypatch.setattr(runner, "_run_one_locked", lambda spec, *a, **k: seen.append(spec.hw) or {
        "experiment": spec.experiment, "run_dir": None, "status": "ok", "outcome": "ok"})
    rc, out, err = cli("run-all", "--hw", "H200", "--model", "dummy", "--experiments", "seed", "--results",
                       tmp_path / "results", "--no-progress")
    assert rc == 0 and seen == ["h200"], (rc, err, seen)


def test_report_takes_an_upper_case_baseline_as_its_class(tmp_path):
    """report --baseline H200 was 'unknown hardware'; now the next check speaks (here: no results folder)."""
    rc, out, err = cli("report", "--results", tmp_path / "none", "--baseline", "H200", "--hardware", "A10,H200",
                       "--out", tmp_path / "report")
    line = one_line(rc, err, "none")
    assert "unknown hardware" not in line
