"""Faults and bad input (issue 19): NaN in JSON, a step logged twice with other values, samples per step without
args.json, the formula evaluator on a huge power; random mutations of a real log (hypothesis); what is not a log file
(symlink loop, FIFO, /dev/null, unreadable), deep JSON nesting, implausible values; a resumed run's log; the runner's
children (the supervisor, a training left behind, a read-only results folder); real CPU runs killed with SIGKILL,
SIGTERM and SIGINT and run again (slow); a 200 MB log (slow)."""
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import OWN_PEAK

from analysis.judge.audit.seed_checks import safe_eval
from analysis.parse.record import read_log_record
from experiments.run import cache as run_cache
from experiments.run import orphans as run_orphans
from experiments.run import spec as run_spec

REPO = Path(__file__).resolve().parents[1]
SEED_RUN = REPO / "results" / "h200" / "seed" / "20261201-002632"  # 30 steps of the seed recipe, logging every 5
REFERENCE = REPO / "tests" / "fixtures" / "h200-qwen2.5-7b-lora-bs16-ga1.logging.jsonl"  # a full bs16 epoch, no args


def _parse(*args):
    return subprocess.run([sys.executable, "-m", "analysis.cli", "parse", *map(str, args)], capture_output=True,
                          text=True, cwd=REPO)


def _lines(path):
    return [json.loads(x) for x in Path(path).read_text().splitlines()]


def _write(folder, lines):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "logging.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return folder


def test_non_finite_values_print_as_null_in_json(tmp_path):
    lines = _lines(SEED_RUN / "logging.jsonl")
    ev = next(x for x in lines if "eval_loss" in x)
    ev["eval_loss"], ev["eval_token_acc"] = "NaN", "Infinity"
    run = _write(tmp_path / "run", lines)
    shutil.copy(SEED_RUN / "args.json", run)
    p = _parse(run, "--json")
    assert p.returncode == 0, p.stderr
    (m,) = json.loads(p.stdout)  # strict JSON: Python's json would accept NaN, so check the text too
    assert "NaN" not in p.stdout and "Infinity" not in p.stdout
    step = ev["global_step/max_steps"].split("/")[0]
    assert [v for s, v in m["eval_loss"] if str(s) == step] == [None]


def test_a_step_logged_twice_with_other_values_is_bad_input(tmp_path):
    lines = _lines(SEED_RUN / "logging.jsonl")
    train = [i for i, x in enumerate(lines) if "loss" in x and "eval_loss" not in x]
    again = dict(lines[train[3]], loss=lines[train[3]]["loss"] + 1.0, **{"train_speed(s/it)": 99.0})
    lines.insert(train[3] + 1, again)
    p = _parse(_write(tmp_path / "run", lines), "--json")
    assert p.returncode == 2 and p.stderr.count("\n") == 1
    step = again["global_step/max_steps"].split("/")[0]
    assert f"logging.jsonl:{train[3] + 2}: step {step} logged twice with different values" in p.stderr
    assert p.stdout == ""


def test_samples_per_step_without_args_json_comes_from_the_epoch_field(tmp_path):
    # the full bs16 epoch: epoch advances 16 / 1,489 a step, so 16 samples per step (1,489 from the summary line)
    rec = read_log_record(REFERENCE)
    assert rec.args is None and rec.train_samples == 1489 and rec.samples_per_step == 16
    # the seed recipe cut to its first 15 steps, no args.json, no summary line (the training set's size unknown):
    # no number rather than a guess, and a warning says why
    lines = [x for x in _lines(SEED_RUN / "logging.jsonl")
             if "loss" in x and int(x["global_step/max_steps"].split("/")[0]) <= 15]
    rec = read_log_record(_write(tmp_path / "cut", lines))
    assert rec.samples_per_step is None and any("samples per step unknown" in w for w in rec.warnings)
    p = _parse(tmp_path / "cut", "--json")
    (m,) = json.loads(p.stdout)
    assert m["samples_per_step"] is None and m["tokens_per_s"] is None
    # the same 15 steps with the run's summary line: 16 from the epoch field, as args.json says
    summary = [x for x in _lines(SEED_RUN / "logging.jsonl") if "train_dataset" in x]
    rec = read_log_record(_write(tmp_path / "cut-summary", lines + summary))
    assert rec.samples_per_step == 16 == json.loads((SEED_RUN / "args.json").read_text())[
        "gradient_accumulation_steps"]


@pytest.mark.parametrize("formula", ["9**9**9**9", "10**400", "2**10**10"])
def test_formula_evaluator_refuses_huge_powers_at_once(formula):
    t0 = time.monotonic()
    assert safe_eval(formula) is None
    assert time.monotonic() - t0 < 1.0
    assert safe_eval("ceil(1500 / 16)") == 94.0 and safe_eval("2048 * 1000 / 387") == pytest.approx(5291.99, abs=0.01)
    assert safe_eval("__import__('os')") is None and safe_eval("(1).real") is None


def _big_log(path, steps):
    """A 4.x log of STEPS training lines (0.5 s each) with an eval every 50 steps (and args.json: saves every 50)."""
    t, out = 0.0, []
    for s in range(1, steps + 1):
        t += 0.5
        out.append(json.dumps({"loss": 2.0, "grad_norm": 1.0, "token_acc": 0.5, "epoch": s * 16 / 1489,
                               "global_step/max_steps": f"{s}/{steps}", "elapsed_time": f"{int(t)}s",
                               "memory(GiB)": 20.0, "train_speed(s/it)": round(t / s, 6)}))
        if s % 50 == 0:
            out.append(json.dumps({"eval_loss": 2.0, "global_step/max_steps": f"{s}/{steps}",
                                   "train_speed(s/it)": round(t / s, 6)}))
    path.mkdir(parents=True)
    (path / "logging.jsonl").write_text("\n".join(out) + "\n")
    (path / "args.json").write_text(json.dumps({"per_device_train_batch_size": 16, "gradient_accumulation_steps": 1,
                                                "eval_steps": 50, "save_steps": 50}))
    return path


def test_parsing_time_grows_linearly_with_the_log(tmp_path):
    """60,000 steps (about 15 MB, 1,200 evals and saves) parse and measure in a few seconds, and 4x the steps take
    well under 16x the time (the old interval check walked every event for every interval: 38 s here)."""
    from analysis.measure.summary import run_summary

    def timed(steps):
        run = _big_log(tmp_path / f"run{steps}", steps)
        t0 = time.monotonic()
        m = run_summary(read_log_record(run))
        return time.monotonic() - t0, m

    small, _ = timed(15_000)
    big, m = timed(60_000)
    assert m["step_time_s"]["median"] == pytest.approx(0.5, rel=1e-3)
    # steady: 59,999 intervals - the first (1-2) - 8 in the warm-up (starting at 2..9: before step 10) - 1,199 after
    # an eval or a save (starting at 50, 100, ..., 59,950; the one at 60,000 ends the log)
    assert m["step_time_s"]["n_intervals"] == 59_999 - 1 - 8 - 1_199
    assert m["tokens_per_s"] is None and m["samples_per_s"] == pytest.approx(32.0, rel=1e-3)
    assert big < 30 and big < 8 * max(small, 0.25), (small, big)


# --------------------------------------------------------------------------------------------- any input, no traceback

REAL_LOG = Path(__file__).resolve().parents[2] / "shared" / "reference" / "h200-qwen2.5-7b-lora-bs16-ga1.logging.jsonl"
TIME_KEYS = ("micro_step_time_ms", "wall_time_to_last_eval_s", "train_runtime_s")


def _cli_in_process(*args) -> tuple[int, str, str]:
    """`swiftbench ARGS` in this process (what a user runs, without a process start per example)."""
    import contextlib
    import io

    from analysis.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([str(a) for a in args])
    return rc, out.getvalue(), err.getvalue()


def _no_nan(token):
    raise AssertionError(f"{token} in JSON output")


def check_parse_output(folder: Path) -> None:
    """`swiftbench parse --json --intervals FOLDER`: strict JSON with no negative time, or one line and exit 2."""
    rc, out, err = _cli_in_process("parse", folder, "--json", "--intervals")
    if rc == 2:
        assert out == "" and err.startswith("swiftbench: error:") and err.count("\n") == 1, err
        return
    assert rc == 0, err
    for m in json.loads(out, parse_constant=_no_nan):
        st = m["step_time_s"]
        assert all(st[k] is None or st[k] >= 0 for k in ("median", "mean", "ci95_low", "ci95_high")), st
        assert all(m[k] is None or m[k] >= 0 for k in TIME_KEYS), {k: m[k] for k in TIME_KEYS}
        for iv in m["step_intervals"]:
            assert iv["seconds"] > 0 and iv["step_time_s"] > 0, iv
        for k in ("samples_per_s", "tokens_per_s", "tokens_per_s_low"):
            assert m[k] is None or m[k] >= 0, (k, m[k])


def _mutated_json_line(draw, line: dict) -> dict:
    from hypothesis import strategies as st

    value = st.one_of(
        st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**30, 10**30), st.none(), st.booleans(),
        st.text(max_size=12), st.sampled_from(["NaN", "inf", "-1", "1e400", "3m 7s", "99999/60", "5/0", "-3/60",
                                               "1000000000000000000000/60", "²/60", "7/٣"]),
        st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
    line = dict(line)
    keys = sorted(line)
    for _ in range(draw(st.integers(1, 3))):
        action = draw(st.sampled_from(["set", "drop", "add"]))
        if action == "set" and keys:
            line[draw(st.sampled_from(keys))] = draw(value)
        elif action == "drop" and keys:
            line.pop(draw(st.sampled_from(keys)), None)
        else:
            line[draw(st.sampled_from(["eval_loss", "train_runtime", "memory", "global_step", "log_history",
                                       "train_dataset", "loss", "epoch", "train_speed(iter/s)"]))] = draw(value)
    return line


def test_random_mutations_of_a_real_log_never_give_a_traceback_nan_or_negative_time(tmp_path_factory):
    """Byte and JSON mutations of the real H200 log (../shared/reference): every one parses to strict JSON with no
    negative time, or is refused in one line (exit 2)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    raw = REAL_LOG.read_bytes()
    lines = raw.decode().splitlines()

    @st.composite
    def mutated(draw):
        kind = draw(st.sampled_from(["bytes", "json", "json", "lines"]))
        if kind == "bytes":
            data = bytearray(raw)
            for _ in range(draw(st.integers(1, 4))):
                pos = draw(st.integers(0, len(data)))
                op = draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
                if op == "flip" and pos < len(data):
                    data[pos] = draw(st.integers(0, 255))
                elif op == "insert":
                    data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
                elif op == "delete":
                    del data[pos:pos + draw(st.integers(1, 40))]
                else:
                    del data[pos:]
            return bytes(data)
        out = list(lines)
        if kind == "json":
            for _ in range(draw(st.integers(1, 3))):
                i = draw(st.integers(0, len(out) - 1))
                out[i] = json.dumps(_mutated_json_line(draw, json.loads(out[i])))
        else:
            i, j = draw(st.integers(0, len(out) - 1)), draw(st.integers(0, len(out) - 1))
            op = draw(st.sampled_from(["duplicate", "swap", "drop"]))
            if op == "duplicate":
                out.insert(j, out[i])
            elif op == "swap":
                out[i], out[j] = out[j], out[i]
            else:
                del out[i]
        return ("\n".join(out) + "\n").encode()

    @settings(max_examples=int(os.environ.get("SB_EXAMPLES", 250)), deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(data=mutated())
    def check(data):
        folder = tmp_path_factory.mktemp("mut")
        (folder / "logging.jsonl").write_bytes(data)
        check_parse_output(folder)

    check()


# -------------------------------------------------------------------------------------------- one line, not a traceback


def _without_dac_override():
    """In the child before exec: root reads every file whatever its mode; without CAP_DAC_OVERRIDE and
    CAP_DAC_READ_SEARCH (dropped from the bounding set) permissions apply to it as to any user."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):
        libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP


def _as_user(*args, cwd=REPO, timeout=120):
    """`python -m analysis.cli ARGS` with file permissions in force (also for root)."""
    return subprocess.run([sys.executable, "-m", "analysis.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout, preexec_fn=_without_dac_override if os.getuid() == 0 else None)


def _one_line(p, needle, skipped_ok=False):
    """Exit 2 and one line naming NEEDLE; with SKIPPED_OK also a run folder that the reader skips with that reason
    (exit 3: a parent of runs goes on without it)."""
    assert "Traceback" not in p.stderr and p.stderr.count("\n") == 1 and needle in p.stderr, p.stderr
    if skipped_ok and p.returncode == 3:
        assert "skipped" in p.stderr
        return
    assert p.returncode == 2 and p.stdout == "", (p.returncode, p.stdout)


def _make_special(tmp_path, what):
    run = tmp_path / "run"
    run.mkdir()
    if what == "loop":
        (tmp_path / "loop").symlink_to(tmp_path / "loop")
        return tmp_path / "loop"
    if what == "loop-in-folder":
        (run / "logging.jsonl").symlink_to(run / "logging.jsonl")
        return run
    if what == "fifo":
        os.mkfifo(tmp_path / "pipe")
        return tmp_path / "pipe"
    if what == "fifo-in-folder":
        os.mkfifo(run / "logging.jsonl")
        return run
    if what == "dangling":
        (run / "logging.jsonl").symlink_to(tmp_path / "gone.jsonl")
        return run
    if what == "unreadable":
        shutil.copy(SEED_RUN / "logging.jsonl", run / "logging.jsonl")
        (run / "logging.jsonl").chmod(0)
        return run
    if what == "unreadable-folder":
        shutil.copy(SEED_RUN / "logging.jsonl", run / "logging.jsonl")
        run.chmod(0)
        return run
    if what == "log-is-a-folder":
        (run / "logging.jsonl").mkdir()
        return run
    return Path(what)


@pytest.mark.parametrize("what,needle", [
    ("loop", "loop: a symlink loop"),
    ("loop-in-folder", "logging.jsonl: a symlink loop"),
    ("fifo", "pipe: a FIFO (named pipe), not a log file"),
    ("fifo-in-folder", "logging.jsonl: a FIFO (named pipe), not a log file"),
    ("dangling", "logging.jsonl: a dangling symlink"),
    ("/dev/null", "/dev/null: a character device (like /dev/null), not a log file"),
    ("unreadable", "logging.jsonl: cannot be read (Permission denied)"),
    ("unreadable-folder", "run: cannot be read (Permission denied)"),
    ("log-is-a-folder", "logging.jsonl: a folder, not a log file"),
])
def test_what_is_not_a_log_file_is_named_in_one_line(tmp_path, what, needle):
    """A symlink loop, a FIFO (which would block a reader for ever), /dev/null, an unreadable file or folder: said as
    what it is, not 'no logging.jsonl' and not a traceback."""
    tmp_path.chmod(0o755)
    path = _make_special(tmp_path, what)
    try:
        for args in (("parse", path), ("parse", path, "--json")):
            _one_line(_as_user(*args), needle, skipped_ok=what.endswith("-in-folder") or what == "dangling")
    finally:
        (tmp_path / "run").chmod(0o755) if (tmp_path / "run").exists() else None


@pytest.mark.parametrize("where", ["log line", "log value", "args.json", "run.json"])
def test_deep_json_nesting_is_one_line(tmp_path, where):
    """100,000 nested brackets make Python's JSON reader recurse too deep: bad input, not a RecursionError."""
    deep = "[" * 100_000 + "]" * 100_000
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(SEED_RUN / "logging.jsonl", run / "logging.jsonl")
    if where == "log line":
        with open(run / "logging.jsonl", "a") as f:
            f.write(deep + "\n")
    elif where == "log value":
        with open(run / "logging.jsonl", "a") as f:
            f.write('{"loss": ' + deep + "}\n")
    elif where == "args.json":
        (run / "args.json").write_text(deep)
    else:
        (run / "run.json").write_text('{"status": ' + deep + "}")
    p = _parse(run, "--json")
    _one_line(p, "JSON nested too deeply")


def test_implausible_values_are_warned_about_and_left_out(tmp_path):
    """A step of 1e21 in a 60-step run, a step past max_steps, a negative memory reading: warnings, and none of them
    turns into a time or a peak."""
    lines = _lines(SEED_RUN / "logging.jsonl")
    train = [x for x in lines if "loss" in x and "eval_loss" not in x]
    total = int(train[0]["global_step/max_steps"].split("/")[1])
    huge = dict(train[-1], **{"global_step/max_steps": f"{10**21}/{total}"})
    past = dict(train[-1], **{"global_step/max_steps": f"{total + 5}/{total}"})
    lines.insert(lines.index(train[-1]) + 1, huge)
    lines.insert(lines.index(train[-1]) + 2, past)
    lines[lines.index(train[2])] = dict(train[2], **{"memory(GiB)": -3.5})
    run = _write(tmp_path / "run", lines)
    shutil.copy(SEED_RUN / "args.json", run)
    p = _parse(run, "--json")
    assert p.returncode == 0, p.stderr
    (m,) = json.loads(p.stdout)
    text = " | ".join(m["warnings"])
    assert f"2 line(s) with a step beyond max_steps ignored (first: line {lines.index(huge) + 1}, step {10**21} > " \
           f"{total})" in text
    assert "1 negative memory(GiB) value(s) ignored" in text
    assert m["global_steps"] == total and m["peak_mem_gib"] > 0 and all(v >= 0 for _, v in m["memory_curve"])
    check_parse_output(run)


def test_negative_interval_bounds_print_readably():
    from analysis.present.tables import range_text

    assert range_text(-1126.2, 5143.4) == "-1126 .. 5143" and range_text(874.2, 880.4) == "874-880"


# --------------------------------------------------------------------------------------------- a resumed run's log


def _resumed_log(tmp_path, record_resume=True):
    """The seed run's log interrupted after step 15 and resumed from its checkpoint at step 10: steps 15-30 logged
    again by the resumed training (its speed counts from step 10), as ms-swift appends them."""
    lines = _lines(SEED_RUN / "logging.jsonl")
    first = [x for x in lines if "loss" in x and int(x["global_step/max_steps"].split("/")[0]) <= 15]
    again = []
    for x in lines[len(first):]:
        x = dict(x)
        if "global_step/max_steps" in x:
            step = int(x["global_step/max_steps"].split("/")[0])
            x["train_speed(s/it)"] = 7.0 + (step == 15)  # the resumed process's first step is the slow one
        if "loss" in x and x["global_step/max_steps"].startswith("15/"):
            x["loss"] += 0.001
        again.append(x)
    resumed_15 = dict(next(x for x in lines if x.get("global_step/max_steps") == "15/30"), **{
        "train_speed(s/it)": 8.0, "loss": 11.5})
    run = _write(tmp_path / "run", first + [resumed_15] + [x for x in again if x.get("global_step/max_steps")
                                                            != "15/30" or "eval_loss" in x])
    shutil.copy(SEED_RUN / "args.json", run)
    status = json.loads((SEED_RUN / "run.json").read_text())
    if record_resume:
        status["resumes"] = [{"at": "2026-12-01T00:00:00+00:00", "from_step": 10, "log_lines_before": len(first),
                              "checkpoint": "/cache/checkpoint-10", "first_step": 15, "first_step_s": 9.5}]
    (run / "run.json").write_text(json.dumps(status))
    return run


def test_a_resume_recorded_in_run_json_keeps_the_later_values(tmp_path):
    run = _resumed_log(tmp_path)
    p = _parse(run, "--json", "--intervals")
    assert p.returncode == 0, p.stderr
    (m,) = json.loads(p.stdout)
    assert [s for s, _ in m["train_loss"]] == [1, 5, 10, 15, 20, 25, 30]
    assert dict(m["train_loss"])[15] == 11.5  # the resumed training's step 15, not the interrupted attempt's
    assert any("resumed from the checkpoint of step 10 (run.json): 1 lines of steps 15-15" in w for w in m["warnings"])
    ivs = {(iv["from_step"], iv["to_step"]): iv for iv in m["step_intervals"]}
    # the resumed training's clock goes on from step 10's time; the interval across the restart is not steady
    assert ivs[(10, 15)]["seconds"] == pytest.approx(8.0 * 5) and ivs[(10, 15)]["excluded"] is not None
    assert ivs[(15, 20)]["seconds"] == pytest.approx(7.0 * 10 - 8.0 * 5)
    assert all(iv["seconds"] > 0 for iv in m["step_intervals"]) and m["complete"]
    check_parse_output(run)


def test_a_repeat_no_resume_explains_is_still_bad_input(tmp_path):
    run = _resumed_log(tmp_path, record_resume=False)
    p = _parse(run, "--json")
    assert p.returncode == 2 and "step counter goes backwards (15 -> 15)" not in p.stderr
    assert "logged twice with different values" in p.stderr or "goes backwards" in p.stderr, p.stderr
    # a resume at step 10 recorded, and the resumed training repeating a step of its own: still an error
    run = _resumed_log(tmp_path / "again")
    lines = _lines(run / "logging.jsonl")
    twice = next(i for i, x in enumerate(lines) if x.get("global_step/max_steps") == "25/30" and "loss" in x)
    lines.insert(twice + 1, dict(lines[twice], loss=1.0))
    (run / "logging.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    p = _parse(run, "--json")
    assert p.returncode == 2 and "step 25 logged twice with different values" in p.stderr, p.stderr


# --------------------------------------------------------------------------------------------- the runner's children


def _proc_gone(pid, timeout=20.0) -> bool:
    from experiments.run import reaper

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not reaper.alive(pid):
            return True
        time.sleep(0.2)
    return False


TREE = """import os, subprocess, sys, time
a = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
b = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
open(sys.argv[1], "w").write(f"{os.getpid()} {a.pid} {b.pid}")
time.sleep(120)
"""


@pytest.mark.parametrize("how", ["owner SIGKILL", "supervisor SIGTERM"])
def test_the_supervisor_takes_the_whole_tree_down(tmp_path, how):
    """experiments/run/reaper.py under an owner: when the owner dies (SIGKILL: nothing it could clean up) or the
    supervisor gets SIGTERM, the command, its child in the same group and its child in a session of its own (as
    torchrun's workers) all end."""
    (tmp_path / "tree.py").write_text(TREE)
    pids = tmp_path / "pids"
    owner = subprocess.Popen([sys.executable, "-c", (
        "import subprocess, sys, time; p = subprocess.Popen([sys.executable, sys.argv[1], '--grace', '3', '--', "
        "sys.executable, sys.argv[2], sys.argv[3]], start_new_session=True); print(p.pid, flush=True); "
        "time.sleep(120)"), str(REPO / "experiments" / "run" / "reaper.py"), str(tmp_path / "tree.py"), str(pids)],
        stdout=subprocess.PIPE, text=True)
    try:
        supervisor = int(owner.stdout.readline())
        deadline = time.monotonic() + 30
        while not (pids.is_file() and pids.read_text().count(" ") == 2) and time.monotonic() < deadline:
            time.sleep(0.1)
        tree = [int(x) for x in pids.read_text().split()]
        assert os.getpgid(tree[0]) == supervisor and os.getpgid(tree[2]) != supervisor
        if how == "owner SIGKILL":
            owner.kill()
        else:
            os.kill(supervisor, 15)
        assert all(_proc_gone(pid) for pid in [supervisor, *tree])
    finally:
        owner.kill()
        owner.wait()


def test_the_supervisor_ends_as_its_command_did():
    reaper_py = str(REPO / "experiments" / "run" / "reaper.py")
    p = subprocess.run([sys.executable, reaper_py, "--", sys.executable, "-c", "raise SystemExit(3)"])
    assert p.returncode == 3
    p = subprocess.run([sys.executable, reaper_py, "--", sys.executable, "-c", "import os; os.kill(os.getpid(), 9)"])
    assert p.returncode == -9


def _fake_running_run(results, training_pid, runner_pid):
    import socket

    from experiments.run import reaper

    run = results / "cpu" / "seed" / "20261201-000000"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({
        "status": "running", "host": socket.gethostname(), "pid": runner_pid,
        "runner": {"pid": runner_pid, "started": None},
        "training": {"pid": training_pid, "pgid": training_pid, "started": reaper.start_time(training_pid),
                     "host": socket.gethostname(), "boot_id": reaper.boot_id()}}))
    return run


def test_a_training_left_by_an_earlier_runner_is_reported_before_anything_starts(tmp_path):
    """run.json says running, its runner is gone, its training's process group lives on: run-all names it in one line
    and starts nothing; with --kill-orphans (here: check_orphans(kill=True)) it is stopped and marked interrupted."""

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    orphan = subprocess.Popen([sys.executable, str(REPO / "experiments" / "run" / "reaper.py"), "--", sys.executable,
                               "-c",
                               "import subprocess, sys, time; subprocess.Popen([sys.executable, "
                               "'-c', 'import time; time.sleep(120)']); time.sleep(120)"], start_new_session=True)
    time.sleep(0.5)  # the supervisor's argv is in /proc once it has exec'd
    try:
        results = tmp_path / "results"
        run = _fake_running_run(results, orphan.pid, gone.pid)
        p = subprocess.run([sys.executable, "-m", "analysis.cli", "run-all", "--hw", "cpu", "--results", results,
                            "--experiments", "seed", "--no-progress"], capture_output=True, text=True, cwd=REPO,
                           timeout=120)
        assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
        assert f"training of an earlier runner is still running (process group {orphan.pid}" in p.stderr
        assert "--kill-orphans" in p.stderr and sorted(os.listdir(run.parent)) == [run.name]
        assert json.loads((run / "run.json").read_text())["status"] == "running"  # not touched
        run_orphans.check_orphans(results, kill=True)
        assert _proc_gone(orphan.pid, 30)
        status = json.loads((run / "run.json").read_text())
        assert status["status"] == "failed" and status["reason"].startswith("interrupted (left behind")
        assert run_orphans.find_orphans(results) == []
    finally:
        orphan.kill()
        orphan.wait()


def test_a_read_only_results_folder_is_one_line_when_a_run_is_needed(tmp_path):

    tmp_path.chmod(0o755)
    results = tmp_path / "results"
    results.mkdir()
    args = ["run-all", "--hw", "cpu", "--results", results, "--experiments", "seed", "--model", "dummy:tiny",
            "--no-progress"]
    results.chmod(0o555)
    try:
        p = _as_user(*args)
        _one_line(p, "cannot write to the results folder (Permission denied): cpu/seed needs a run")
        # the same folder with a complete run of that experiment: nothing to write, nothing to complain about
        results.chmod(0o755)
        spec = run_spec.RunSpec(hw="cpu", experiment="seed", model="dummy:tiny", results_dir=str(results))
        done = results / "cpu" / "seed" / "20261201-000000"
        done.mkdir(parents=True)
        (done / "run.json").write_text(json.dumps({"status": "ok", "key": spec.key()}))
        for d in (results, results / "cpu", results / "cpu" / "seed", done):
            d.chmod(0o555)
        p = _as_user(*args)
        assert p.returncode == 0 and "skip" in p.stderr and "read-only" in p.stderr, p.stderr
    finally:
        for d in results.rglob("*"):
            if d.is_dir():
                d.chmod(0o755)
        results.chmod(0o755)


# --------------------------------------------------------------------------------------------- kills of a real run-all

RUN_ALL = ["--hw", "cpu", "--model", "dummy:tiny", "--max-steps", "14", "--experiments", "seed", "--no-progress",
           "--set", "logging_steps=1", "--set", "gradient_accumulation_steps=2"]
WEIGHTS = ("checkpoint-", "optimizer.pt", "adapter_model", "val_dataset.jsonl", "rng_state", "scheduler.pt",
           "training_args.bin", "last-checkpoint")


def _run_all(results, data, save_steps, **kw):
    cmd = [sys.executable, "-m", "analysis.cli", "run-all", "--results", str(results), "--data", str(data), *RUN_ALL,
           "--set", f"save_steps={save_steps}"]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                            env={**os.environ, "TOKENIZERS_PARALLELISM": "false"}, **kw)


def _logged_step(results) -> int:
    steps = [0]
    for log in results.glob("cpu/seed/*/logging.jsonl"):
        for raw in log.read_text(errors="replace").splitlines():
            if '"loss"' in raw and raw.endswith("}"):
                steps.append(int(json.loads(raw)["global_step/max_steps"].split("/")[0]))
    return max(steps)


def _wait_for_step(proc, results, step, timeout=900):
    deadline = time.monotonic() + timeout
    while _logged_step(results) < step:
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "training did not get there in time"
        time.sleep(0.3)


def _left_behind(runner_pid: int) -> list[str]:
    """Live processes the runner started (the kernel, the supervisor, swift, its loader workers): they carry the
    runner's pid in their environment (SWIFTBENCH_RUNNER), whoever their parent is now."""
    import psutil

    out = []
    for p in psutil.process_iter(["pid", "cmdline", "status"]):
        try:
            if p.info["status"] != psutil.STATUS_ZOMBIE and \
                    p.environ().get("SWIFTBENCH_RUNNER", "").startswith(f"{runner_pid}:"):
                out.append(f"{p.pid} {' '.join(p.info['cmdline'] or [])[:120]}")
        except (psutil.Error, OSError):
            continue
    return out


def _gone(runner_pid, timeout=60.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while (left := _left_behind(runner_pid)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


def _weights(results) -> list[str]:
    return [str(p) for p in results.rglob("*") if p.name.startswith(WEIGHTS) or p.suffix in (".safetensors", ".pt")]


def _steps_of(lines):
    return {int(x["global_step/max_steps"].split("/")[0]): x["loss"] for x in lines
            if "loss" in x and "global_step/max_steps" in x}


@pytest.mark.slow
def test_a_sigkilled_run_all_leaves_no_training_and_the_next_one_resumes(tmp_path):
    """SIGKILL of run-all once training passed its first checkpoint: no process of it is left (the supervisor sees
    its kernel go), results/ holds no weights; the next run-all resumes the same run folder from the checkpoint, the
    repeated steps give the same losses, and the log parses with the resume recorded."""
    from experiments.offline import localdata

    localdata.make_tiny_local_data(tmp_path / "data", n=24)
    results = tmp_path / "results"
    first = _run_all(results, tmp_path / "data", save_steps=4)
    try:
        _wait_for_step(first, results, 6)  # step 5's line is written after checkpoint-4 is complete
        first.kill()
        first.wait()
        assert _gone(first.pid) == []
    finally:
        first.kill()
    (run_dir,) = list((results / "cpu" / "seed").iterdir())
    assert _weights(results) == []
    # the runner died without a word; its kernel may still have recorded the training's end before it went
    assert json.loads((run_dir / "run.json").read_text())["status"] in ("running", "failed")

    second = _run_all(results, tmp_path / "data", save_steps=4)
    _, err = second.communicate(timeout=900)
    assert second.returncode == 0, err[-3000:]
    assert "resume cpu/seed from step" in err and list((results / "cpu" / "seed").iterdir()) == [run_dir]
    status = json.loads((run_dir / "run.json").read_text())
    (resume,) = status["resumes"]
    assert status["status"] == "ok" and resume["from_step"] in (4, 8, 12) and resume["first_step"] > resume[
        "from_step"] and resume["first_step_s"] > 0 and resume["after"].startswith(("interrupted", "killed by signal"))
    lines = _lines(run_dir / "logging.jsonl")
    before, after = _steps_of(lines[:resume["log_lines_before"]]), _steps_of(lines[resume["log_lines_before"]:])
    repeated = sorted(set(before) & set(after))
    if max(before) > resume["from_step"]:  # killed after steps past the checkpoint: those are trained again
        assert repeated and min(repeated) == resume["from_step"] + 1
    else:  # killed right after a checkpoint (a loaded machine): nothing to repeat
        assert not repeated and min(after) == resume["from_step"] + 1
    assert all(after[s] == pytest.approx(before[s], abs=1e-4) for s in repeated)  # the same training, continued
    assert _weights(results) == [] and not Path(status["work_dir"]).exists()
    assert status["work_dir"].startswith(str(run_cache.CHECKPOINTS))
    p = _parse(run_dir, "--json")
    (m,) = json.loads(p.stdout)
    assert m["complete"] and [s for s, _ in m["train_loss"]] == list(range(1, 15))
    if repeated:  # the parser says why a step appears twice
        assert any("resumed from the checkpoint" in w for w in m["warnings"])
    check_parse_output(run_dir)


@pytest.mark.slow
def test_a_sigtermed_run_all_stops_cleanly_and_without_a_checkpoint_the_next_starts_afresh(tmp_path):
    """SIGTERM of run-all before the first checkpoint: it stops the training, marks the run interrupted, says so in one
    line (no traceback), leaves nothing running; the next run-all, with nothing to resume, starts a new run."""
    from experiments.offline import localdata

    localdata.make_tiny_local_data(tmp_path / "data", n=24)
    results = tmp_path / "results"
    first = _run_all(results, tmp_path / "data", save_steps=8)
    try:
        _wait_for_step(first, results, 2)
        first.terminate()
        _, err = first.communicate(timeout=120)
    finally:
        first.kill()
    assert first.returncode == 128 + 15 and "Traceback" not in err, err[-3000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith("run-all: stopped by SIGTERM; ") and "run marked failed: interrupted" in last
    assert _left_behind(first.pid) == []  # stopped before run-all returned
    (run_dir,) = list((results / "cpu" / "seed").iterdir())
    status = json.loads((run_dir / "run.json").read_text())
    assert status["status"] == "failed" and status["reason"] == "interrupted (the runner got SIGTERM)"
    assert status["training"]["pgid"] == status["training"]["pid"] and _weights(results) == []

    second = _run_all(results, tmp_path / "data", save_steps=8)
    _, err = second.communicate(timeout=900)
    assert second.returncode == 0 and "resume" not in err, err[-3000:]
    runs = sorted((results / "cpu" / "seed").iterdir())
    assert len(runs) == 2 and runs[0] == run_dir
    assert json.loads((runs[1] / "run.json").read_text())["status"] == "ok" and _weights(results) == []


@pytest.mark.slow
def test_ctrl_c_of_run_all_prints_one_line(tmp_path):
    """SIGINT (Ctrl-C) during training: one line on stderr, no traceback, nothing left running."""
    from experiments.offline import localdata

    localdata.make_tiny_local_data(tmp_path / "data", n=24)
    results = tmp_path / "results"
    proc = _run_all(results, tmp_path / "data", save_steps=50)
    try:
        _wait_for_step(proc, results, 2)
        proc.send_signal(2)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130 and "Traceback" not in err, err[-3000:]
    assert err.strip().splitlines()[-1].startswith("run-all: stopped by SIGINT; ")
    assert _left_behind(proc.pid) == []
    (run_dir,) = list((results / "cpu" / "seed").iterdir())
    shutil.rmtree(json.loads((run_dir / "run.json").read_text())["work_dir"])  # kept for a resume no one will make


# --------------------------------------------------------------------------------------------- any log size


def write_big_log(folder: Path, size_bytes: int) -> int:
    """A logging.jsonl of about SIZE_BYTES: the real H200 log's training lines in turn with rising steps (0.87 s
    each), an eval every 50 steps, its summary line at the end. Returns the training steps written."""
    ref = [json.loads(x) for x in REAL_LOG.read_text().splitlines()]
    train = [x for x in ref if "loss" in x and "eval_loss" not in x]
    ev = next(x for x in ref if "eval_loss" in x)
    place = {"global_step/max_steps": "@STEP@", "epoch": "@EPOCH@", "train_speed(s/it)": "@SPEED@",
             "elapsed_time": "@ELAPSED@"}

    def template(d):
        text = json.dumps({**d, **place}).replace("%", "%%")
        return (text.replace('"@STEP@"', '"%(step)d/%(total)d"').replace('"@EPOCH@"', "%(epoch).8f")
                .replace('"@SPEED@"', "%(speed).6f").replace('"@ELAPSED@"', '"%(elapsed)ds"') + "\n")

    trains, evals = [template(d) for d in train], template(ev)
    total = size_bytes // len(trains[0] % {"step": 10**5, "total": 10**6, "epoch": 1, "speed": 1, "elapsed": 1})
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "logging.jsonl", "w") as f:
        for s in range(1, total + 1):
            v = {"step": s, "total": total, "epoch": s * 16 / 1489, "speed": 0.87, "elapsed": int(0.87 * s)}
            f.write(trains[s % len(trains)] % v)
            if s % 50 == 0:
                f.write(evals % v)
        f.write(json.dumps({**ref[-1], "global_step": total}) + "\n")
    return total


@pytest.mark.slow
@pytest.mark.parametrize("as_json", [False, True])
def test_a_200_mb_log_parses_in_under_30_s_in_under_1_gb(tmp_path, as_json):
    """`swiftbench parse [--json]` of a generated 200 MB log in a fresh process: under 30 s of CPU time on the 2-core
    machine (the wall time, printed, depends on what else runs there), peak RSS under 1 GiB (the child's own VmHWM,
    conftest.OWN_PEAK; 1.66 GB with --json once, the JSON built whole)."""
    steps = write_big_log(tmp_path / "run", 200_000_000)
    size = (tmp_path / "run" / "logging.jsonl").stat().st_size
    out = tmp_path / "out.txt"
    code = OWN_PEAK + (
        "import json, resource, sys, time; t = time.monotonic(); from analysis.cli import main; "
        "sys.stdout = open(sys.argv[2], 'w'); rc = main(['parse', sys.argv[1], *sys.argv[3:]]); "
        "sys.stdout.close(); r = resource.getrusage(resource.RUSAGE_SELF); "
        "print(json.dumps({'rc': rc, 'wall_s': time.monotonic() - t, 'cpu_s': r.ru_utime + r.ru_stime, "
        "'rss_mib': OWN_PEAK_MIB()}), file=sys.stderr)")
    p = subprocess.run([sys.executable, "-c", code, str(tmp_path / "run"), str(out), *(["--json"] if as_json else [])],
                       capture_output=True, text=True, cwd=REPO, timeout=600)
    got = json.loads(p.stderr.strip().splitlines()[-1])
    print(f"\n200 MB log ({size / 1e6:.0f} MB, {steps} steps{', --json' if as_json else ''}): {got}")
    assert got["rc"] == 0, p.stderr[-2000:]
    if as_json:
        (m,) = json.loads(out.read_text())
        assert m["step_time_s"]["median"] == pytest.approx(0.87) and m["global_steps"] == steps
        assert m["tokens_per_s"] > 0 and len(m["train_loss"]) == steps
    else:
        text = out.read_text()
        assert "tokens/s" in text and "0.87" in text, text[-2000:]
    assert got["cpu_s"] < 30 and got["wall_s"] < 90
    assert got["rss_mib"] < 1024
