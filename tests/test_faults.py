"""Bad input the parser must not turn into a wrong number (issue 19, first part): NaN in JSON, a step logged twice
with other values, samples per step without args.json, and the seed checks' formula evaluator on a huge power."""
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from analysis.judge.seed_checks import safe_eval
from analysis.parse.record import read_log_record

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
