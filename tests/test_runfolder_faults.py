"""Bad run folders must not crash or mislead (issue 30): every run-folder file's fields against their schema
(experiments/base/runschema.py), the folder's hardware against env.json, resumes and cuts against the log, one broken
line's speed, the runner's inputs checked before anything starts, a BOM read; and a hypothesis test that mutates every
field of every file of a committed run folder and checks that `tables` never gives a traceback and leaves the good
folder's rows as they were."""
import contextlib
import copy
import io
import json
import math
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SEED_RUN = REPO / "results" / "h200" / "seed" / "20261201-002632"   # 30 steps, logging every 5, with the launcher
GOOD_RUN = REPO / "results" / "h200" / "bs16" / "20261201-003102"   # another experiment: must stay as it is
IGNORE = shutil.ignore_patterns("runs", "sft.ipynb", "stdout.log", "nvml*.csv")


def _tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    """results/ with a copy of SEED_RUN (the one to break) and of GOOD_RUN."""
    root = tmp_path / "results"
    bad = root / "h200" / "seed" / SEED_RUN.name
    good = root / "h200" / "bs16" / GOOD_RUN.name
    shutil.copytree(SEED_RUN, bad, ignore=IGNORE)
    shutil.copytree(GOOD_RUN, good, ignore=IGNORE)
    return root, bad, good


def _cli(*args) -> tuple[int, str, str]:
    """`swiftbench ARGS` in this process; a traceback fails the test."""
    from analysis.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([str(a) for a in args])
    return rc, out.getvalue(), err.getvalue()


def _edit_json(path: Path, fn) -> None:
    data = json.loads(path.read_text())
    fn(data)
    path.write_text(json.dumps(data))


def _edit_lines(path: Path, fn) -> None:
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    fn(lines)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def _train(lines):
    return [x for x in lines if "loss" in x and "eval_loss" not in x]


def _rows(out: str, run: str) -> dict:
    tables = json.loads(out)
    return {name: [r for r in rows if r.get("run") == run or r.get("path", "").endswith(run)]
            for name, rows in tables.items()}


def _skipped(root: Path, bad: Path, good: Path, needle: str) -> None:
    """tables and parse of ROOT: exit 3, one line naming BAD's file (NEEDLE), GOOD still read."""
    for cmd in (["tables", root, "--format", "json"], ["parse", root, "--json"]):
        rc, out, err = _cli(*cmd)
        lines = err.strip().splitlines()
        assert rc == 3 and len(lines) == 1, (cmd[0], rc, err)
        assert lines[0].startswith(f"swiftbench: skipped {bad}: ") and needle in lines[0], lines[0]
        assert good.name in out and bad.name not in out.replace(f"skipped {bad}", "")


def set_path(*path, value):
    def fn(d):
        for k in path[:-1]:
            d = d.setdefault(k, {})
        d[path[-1]] = value
    return fn


# ----------------------------------------------------------------------------------- wrong types: no traceback

@pytest.mark.parametrize("file, edit, needle", [
    ("run.json", set_path("key", value="seed"), "run.json: field 'key' is a string ('seed'), not an object"),
    ("run.json", set_path("key", "launcher", value=[2]), "run.json: field 'key.launcher' is a list, not an object"),
    ("run.json", set_path("key", "launcher", "mem_cap_gib", value="24"),
     "run.json: field 'key.launcher.mem_cap_gib' is a string ('24'), not a number"),
    ("env.json", set_path("packages", value=["ms-swift==4.6.0"]), "env.json: field 'packages' is a list"),
    ("env.json", set_path("host", value="vm"), "env.json: field 'host' is a string ('vm'), not an object"),
    ("args.json", set_path("deepspeed", value={"zero_optimization": "stage2"}),
     "args.json: field 'deepspeed.zero_optimization' is a string ('stage2'), not an object"),
    ("profile.json", lambda d: d["steps"][0].update(step="eleven"), "profile.json: field 'steps[0].step' is a string"),
    ("profile.json", lambda d: d["steps"][0].update(step=None), "profile.json: field 'steps[0].step' is null"),
    ("profile.json", lambda d: d["steps"][0].update(step=math.inf), "profile.json: field 'steps[0].step' is inf"),
    ("profile.json", lambda d: d["steps"][0].update(step=10**30), "outside the plausible range"),
])
def test_a_wrong_typed_field_is_one_line_and_the_folder_skipped(tmp_path, file, edit, needle):
    root, bad, good = _tree(tmp_path)
    _edit_json(bad / file, edit)
    _skipped(root, bad, good, needle)


def test_a_speed_of_1e308_is_one_line(tmp_path):
    root, bad, good = _tree(tmp_path)
    _edit_lines(bad / "logging.jsonl", lambda lines: _train(lines)[2].update({"train_speed(s/it)": 1e308}))
    _skipped(root, bad, good, "logging.jsonl:3: train_speed(s/it) is 1e+308, beyond any plausible speed")


# ------------------------------------------------------------------------------- silent wrong numbers: refused

def test_a_tokens_line_of_1e15_tokens_is_refused(tmp_path):
    root, bad, good = _tree(tmp_path)
    _edit_lines(bad / "tokens.jsonl", lambda lines: lines[3].update(tokens=10**15))
    _skipped(root, bad, good, "tokens.jsonl:4: field 'tokens' is 1e+15, outside the plausible range")


@pytest.mark.parametrize("field, value, needle", [
    ("per_device_train_batch_size", -1, "is -1, outside the plausible range"),
    ("per_device_train_batch_size", 1.5, "is 1.5, not a whole number"),
    ("gradient_accumulation_steps", -16, "is -16, outside the plausible range"),
    ("gradient_accumulation_steps", 0.5, "is 0.5, not a whole number"),
    ("world_size", -2, "is -2, outside the plausible range"),
    ("global_world_size", 1.5, "is 1.5, not a whole number"),
])
def test_a_negative_or_fractional_batch_is_refused(tmp_path, field, value, needle):
    root, bad, good = _tree(tmp_path)
    _edit_json(bad / "args.json", set_path(field, value=value))
    _skipped(root, bad, good, f"args.json: field {field!r} {needle}")


@pytest.mark.parametrize("file, edit, needle", [
    ("env.json", set_path("hw", value="a10"), "env.json: hw 'a10' but the folder is under h200/"),
    ("run.json", set_path("hw", value="a10"), "run.json: hw 'a10' but the folder is under h200/"),
    ("env.json", set_path("gpu_name", value="NVIDIA A10"), "env.json: gpu_name 'NVIDIA A10' is a a10 GPU"),
])
def test_hardware_that_disagrees_with_the_folder_is_no_row(tmp_path, file, edit, needle):
    root, bad, good = _tree(tmp_path)
    _edit_json(bad / file, edit)
    _skipped(root, bad, good, needle)
    rc, out, _ = _cli("tables", root, "--format", "json")
    assert not [r for r in json.loads(out)["speedup"] if r["hw"] == "a10" and r["source"] == "measured"]


def test_a_forced_hardware_label_keeps_the_run(tmp_path):
    root, bad, good = _tree(tmp_path)
    _edit_json(bad / "env.json", set_path("gpu_name", value="NVIDIA A10"))
    _edit_json(bad / "run.json", set_path("forced_hw", value=True))
    rc, out, err = _cli("tables", root, "--format", "json")
    assert rc == 0, err
    assert any("forced hw label (GPU was NVIDIA A10)" in r["labels"] for r in json.loads(out)["convergence"])


@pytest.mark.parametrize("file, edit, needle", [
    ("args.json", set_path("resume_from_checkpoint", value="/cache/checkpoint-10"),
     "args.json: resume_from_checkpoint: resumed from the checkpoint of step 10, but the first training line"),
    ("run.json", set_path("resumes", value=[{"from_step": 20, "log_lines_before": 3}]),
     "run.json: resumed from the checkpoint of step 20, but the first training line after it logs step 15"),
    ("run.json", set_path("resumes", value=[{"from_step": 0, "log_lines_before": 3}]),
     "run.json: resumed from the checkpoint of step 0, but the first training line after it logs step 15"),
    ("run.json", set_path("resumes", value=[{"from_step": 5, "log_lines_before": 500}]),
     "run.json: a resume after line 500 of logging.jsonl, which has 10 lines"),
])
def test_a_resume_the_log_contradicts_is_refused(tmp_path, file, edit, needle):
    root, bad, good = _tree(tmp_path)
    _edit_json(bad / file, edit)
    _skipped(root, bad, good, needle)


def test_a_negative_dataset_statistic_is_refused(tmp_path):
    root, bad, good = _tree(tmp_path)
    _edit_lines(bad / "logging.jsonl",
                lambda lines: lines[-1].update(train_dataset=lines[-1]["train_dataset"].replace("min=", "min=-")))
    _skipped(root, bad, good, "train_dataset's min is -")


def test_dummy_weights_no_is_refused_not_labelled_dummy(tmp_path):
    root, bad, good = _tree(tmp_path)
    _edit_json(bad / "run.json", set_path("dummy_weights", value="no"))
    _edit_json(bad / "env.json", set_path("dummy_weights", value=False))
    _skipped(root, bad, good, "run.json: field 'dummy_weights' is a string ('no'), not true/false")


def test_a_log_cut_under_an_ok_run_json_is_labelled_incomplete(tmp_path):
    root, bad, good = _tree(tmp_path)

    def cut(lines):
        end = max(i for i, x in enumerate(lines) if x.get("global_step/max_steps") == "15/30")
        del lines[end + 1:]
    _edit_lines(bad / "logging.jsonl", cut)
    label = ("incomplete log (ends at step 15 of 30 without ms-swift's end-of-training summary, though run.json says "
             "ok)")
    rc, out, err = _cli("parse", bad, "--json")
    (m,) = json.loads(out)
    assert rc == 0 and not m["complete"] and label in m["labels"], m["labels"]
    rc, out, err = _cli("tables", root, "--format", "json")
    (row,) = [r for r in json.loads(out)["convergence"] if r["run"] == bad.name]
    assert label in row["labels"], row["labels"]
    (good_row,) = [r for r in json.loads(out)["convergence"] if r["run"] == good.name]
    assert "incomplete" not in good_row["labels"]


def _tokens_per_s(run: Path) -> tuple[float, float]:
    rc, out, err = _cli("parse", run, "--json")
    assert rc == 0, err
    (m,) = json.loads(out)
    return m["tokens_per_s"], m["step_time_s"]["median"]


@pytest.mark.parametrize("which", [2, 3, -1])
def test_one_lines_speed_x10_does_not_skew_tokens_per_s(tmp_path, which):
    root, bad, good = _tree(tmp_path)
    right, median = _tokens_per_s(bad)

    def x10(lines):
        _train(lines)[which]["train_speed(s/it)"] *= 10
    _edit_lines(bad / "logging.jsonl", x10)
    got, got_median = _tokens_per_s(bad)
    assert got == pytest.approx(right, rel=0.1) and got_median == pytest.approx(median, rel=0.1), (got, right)


@pytest.mark.parametrize("name", ["logging.jsonl", "args.json", "run.json", "env.json"])
def test_a_bom_is_read(tmp_path, name):
    root, bad, good = _tree(tmp_path)
    rc, before, err = _cli("parse", bad, "--json")
    path = bad / name
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    rc, after, err = _cli("parse", bad, "--json")
    assert rc == 0 and after == before, err


# ------------------------------------------------------------------------------------- the runner's inputs

@pytest.fixture
def no_training(monkeypatch):
    """run-all that would start anything fails the test at once (instead of training on the CPU)."""
    from experiments.run import runner

    def started(*a, **k):
        raise AssertionError("a run was started")
    monkeypatch.setattr(runner, "run_notebook", started)
    monkeypatch.setattr(runner, "_run_one", started)
    return runner


@pytest.mark.parametrize("extra, needle", [
    (["--timeout", "-5"], "--timeout wants seconds > 0, got -5"),
    (["--timeout", "nan"], "--timeout wants seconds > 0, got nan"),
    (["--max-steps", "0"], "--max-steps wants a whole number >= 1, got 0"),
    (["--max-steps", "-3"], "--max-steps wants a whole number >= 1, got -3"),
    (["--model", "/nonexistent"], "/nonexistent: no such model folder"),
    (["--model", "Qwen/Qwen 2.5!"], "not a hub id like Qwen/Qwen2.5-7B-Instruct"),
    (["--model", "a/b/c"], "not a hub id like"),
    (["--data", "@EMPTY@"], "data folder lacks"),
])
def test_bad_runner_input_is_one_line_before_anything_starts(tmp_path, capsys, no_training, extra, needle):
    empty = tmp_path / "data"
    empty.mkdir()
    extra = [str(empty) if x == "@EMPTY@" else x for x in extra]
    results = tmp_path / "results"
    rc = no_training.main(["run-all", "--hw", "cpu", "--model", "dummy", "--experiments", "seed", "--results",
                           str(results), "--no-progress", *extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith("runner: error: ") and needle in err[0], err
    assert not results.exists() or not any(results.rglob("*"))


def test_a_refused_preflight_leaves_no_lock_file(tmp_path):
    from rich.console import Console

    from experiments.base.errors import InputError
    from experiments.run import runner
    from experiments.run.spec import RunSpec

    spec = RunSpec(hw="h200", experiment="seed", model="dummy", results_dir=str(tmp_path))  # no H200 here
    with pytest.raises(InputError, match="h200/seed"):
        runner._run_one(spec, Console(file=io.StringIO()), progress=False)
    assert not list(tmp_path.rglob("*.lock")) and not (tmp_path / runner.LOCKS).exists()


# -------------------------------------------------------------------------- any field of any file (hypothesis)

JSON_FILES = ("run.json", "env.json", "args.json", "profile.json", "launch.json")
LINE_FILES = ("logging.jsonl", "tokens.jsonl", "schedule.jsonl", "gpm.jsonl")


def _leaves(value, path=()):
    """Every field path of a JSON value (objects and lists, down to their scalars; long lists by a few items)."""
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(value, list):
        for i in sorted({0, 1, len(value) - 1} & set(range(len(value)))):
            yield from _leaves(value[i], path + (i,))


def _replace(doc, path, new):
    if not path:
        return new
    doc = copy.deepcopy(doc)
    target = doc
    for k in path[:-1]:
        target = target[k]
    target[path[-1]] = new
    return doc


def _get(doc, path):
    for k in path:
        doc = doc[k]
    return doc


@pytest.fixture(scope="module")
def mutation_tree(tmp_path_factory):
    root, bad, good = _tree(tmp_path_factory.mktemp("mutate"))
    rc, out, err = _cli("tables", root, "--format", "json")
    assert rc == 0, err
    files = {}
    for name in JSON_FILES:
        if (bad / name).is_file():
            doc = json.loads((bad / name).read_text())
            files[name] = (None, doc, sorted(set(_leaves(doc)), key=str))
    for name in LINE_FILES:
        if (bad / name).is_file():
            lines = [json.loads(x) for x in (bad / name).read_text().splitlines() if x.strip()]
            picks = sorted({0, 1, len(lines) // 2, len(lines) - 2, len(lines) - 1} & set(range(len(lines))))
            for i in picks:
                files[f"{name}:{i}"] = (i, lines, sorted(set(_leaves(lines[i])), key=str))
    return root, bad, good, _rows(out, good.name), files


def test_any_field_of_any_file_mutated_gives_exit_0_or_3_and_leaves_the_good_rows(mutation_tree):
    """Each example: one field of one file of the seed run (type, sign or size changed); `tables` exits 0 or 3 with
    no traceback, and the other run's rows are exactly as before."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    root, bad, good, good_rows, files = mutation_tree
    keys = sorted(files)

    def mutations(old):
        opts = [st.none(), st.booleans(), st.text(max_size=6), st.just([]), st.just({}), st.just([1, "x"]),
                st.just({"a": 1}), st.sampled_from([-1, 0, 0.5, 1e308, -1e308, 10**30, 2**63, "nan", "-3"])]
        if isinstance(old, bool):
            opts.append(st.just(not old))
        elif isinstance(old, (int, float)):
            opts.append(st.sampled_from([-old, old * 1e6, old / 1e6, old + 0.5, float(old) if old else 1.5]))
        elif isinstance(old, str):
            opts.append(st.sampled_from([old * 3, "-" + old, old[: len(old) // 2], old.upper()]))
        return st.one_of(opts)

    @st.composite
    def mutation(draw):
        key = draw(st.sampled_from(keys))
        i, doc, paths = files[key]
        path = draw(st.sampled_from(paths))
        old = _get(doc if i is None else doc[i], path)
        return key, path, draw(mutations(old))

    @settings(max_examples=100, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(mutation())
    def check(m):
        key, path, new = m
        name = key.split(":")[0]
        i, doc, _ = files[key]
        target = bad / name
        original = target.read_bytes()
        try:
            if i is None:
                target.write_text(json.dumps(_replace(doc, path, new)))
            else:
                lines = list(doc)
                lines[i] = _replace(lines[i], path, new)
                target.write_text("".join(json.dumps(x) + "\n" for x in lines))
            rc, out, err = _cli("tables", root, "--format", "json")
            assert rc in (0, 3), (key, path, new, rc, err)
            assert err.count("\n") <= 1, err
            if rc == 3:
                assert err.startswith(f"swiftbench: skipped {bad}: "), err
            assert _rows(out, good.name) == good_rows, (key, path, new)
        finally:
            target.write_bytes(original)

    check()


def test_the_two_env_readers_have_names_that_say_the_difference(tmp_path):
    """runfiles.read_env_raw: env.json as it is ({} when unreadable); results.read_env: checked, hw from the path."""
    from analysis.parse import results as parse_results
    from experiments.base import runfiles as rf

    assert not hasattr(rf, "read_env")
    run = tmp_path / "results" / "h200" / "exp" / "r1"
    run.mkdir(parents=True)
    (run / rf.ENV_JSON).write_text("{not json", encoding="utf-8")
    assert rf.read_env_raw(run) == {}
    (run / rf.ENV_JSON).write_text(json.dumps({"python": "3.12"}), encoding="utf-8")
    assert rf.read_env_raw(run) == {"python": "3.12"}
    assert parse_results.read_env(run)["hw"] == "h200"


def test_side_files_are_read_with_jsonlines_line_numbers_and_all(tmp_path):
    """analysis.parse.sidefiles.jsonl: every line's number (empty lines skipped), a BOM read, a torn last line and
    one nested too deeply as INVALID, never an exception."""
    from analysis.parse import sidefiles

    path = tmp_path / "x.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"step": 1}\n\n{"step": 3}\n' + b"[" * 100_000 + b"\n" + b'{"step": 5, "tok')
    got = list(sidefiles.jsonl(path))
    assert [n for n, _ in got] == [1, 3, 4, 5]
    assert got[0][1] == {"step": 1} and got[1][1] == {"step": 3}
    assert got[2][1] is sidefiles.INVALID and got[3][1] is sidefiles.INVALID
