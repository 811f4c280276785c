"""Bad input meets every command as one line, never a traceback, a hang or a wrong number (the second fault sweep):
the error boundary (experiments/base/boundary.py), bounded reads of regular files only (userfiles.py), plausibility
in the run-folder contract (tokens per step, repeated evals and token steps, model shapes), trees read through
symlinks (treewalk.py), and the runner's own flags. One test per finding."""
from __future__ import annotations

import errno
import json
import os
import resource
import shutil
from pathlib import Path

import pytest
from committed import committed_results
from faultkit import SEED_RUN, cli, one_line, permissions_in_force, tree


def _edit_lines(path: Path, fn) -> None:
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    fn(lines)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def _rows(out: str, table: str = "convergence") -> dict[str, dict]:
    return {r["run"]: r for r in json.loads(out)[table] if r.get("source", "measured") == "measured"}


def _skipped(root: Path, bad: Path, needle: str) -> None:
    """tables of ROOT: exit 3, one line naming BAD and NEEDLE, and no row of BAD."""
    rc, out, err = cli("tables", root, "--format", "json")
    line = one_line(rc, err, needle, code=3)
    assert line.startswith(f"swiftbench: skipped {bad}: ") and bad.name not in _rows(out), line


# ------------------------------------------------------------------------------- silent wrong numbers: refused

def test_a_tokens_line_beyond_what_its_samples_can_hold_is_refused(tmp_path):
    """9e8 tokens in one step (under the schema's 1e9) made tokens/s 11.8 M: a step of 16 samples holds at most
    16 x 2048 (max_length), and by the log's own count of its longest training sample (593) 9,488."""
    root, bad, _ = tree(tmp_path)
    _edit_lines(bad / "tokens.jsonl", lambda lines: lines[3].update(tokens=900_000_000, padded_tokens=900_000_000))
    _skipped(root, bad, "tokens.jsonl:4: 900,000,000 tokens in step 4, more than its samples can hold (9,488: 16 "
                        "samples x 593 tokens, the longest training sample the log counts)")


def test_a_tokens_line_within_max_length_but_beyond_the_logs_longest_sample_is_refused(tmp_path):
    """x5 tokens in one step (under 16 x 2048) is still more than 16 of the log's longest sample."""
    root, bad, _ = tree(tmp_path)
    _edit_lines(bad / "tokens.jsonl", lambda lines: lines[3].update(tokens=lines[3]["tokens"] * 5,
                                                                    padded_tokens=lines[3]["tokens"] * 5))
    _skipped(root, bad, "tokens in step 4, more than its samples can hold (9,488: 16 samples x 593 tokens")


def test_the_step_cap_is_max_length_without_a_summary_or_with_packing():
    from analysis.parse.record import step_token_cap

    assert step_token_cap(16, 2048, 593.0, False) == (9488, "16 samples x 593 tokens, the longest training sample "
                                                            "the log counts")
    assert step_token_cap(16, 2048, None, False)[0] == 32768
    assert step_token_cap(16, 2048, 593.0, True)[0] == 32768
    assert step_token_cap(16, 2048, 593.0, False, 4096) == (65536, "16 samples x 4,096 tokens, the launcher's pad_to")
    assert step_token_cap(None, 2048, 593.0, False) is None
    assert step_token_cap(16, 2048, 593.0, False, None, (16, "2048")) == (
        9488 + 16 * 2048, "16 samples x 593 tokens, the longest training sample the log counts, + 16 x 2,048-token "
        "bucket padding (pad_buckets)")


def test_a_tokens_step_past_the_last_step_is_refused(tmp_path):
    root, bad, _ = tree(tmp_path)
    _edit_lines(bad / "tokens.jsonl", lambda lines: lines.append(dict(lines[-1], step=31)))
    _skipped(root, bad, "step 31, past the run's last step 30")


def test_an_eval_logged_twice_with_another_loss_is_refused(tmp_path):
    """The final eval repeated with eval_loss + 0.5: the last copy won and the equal-loss check looked elsewhere."""
    root, bad, _ = tree(tmp_path)

    def repeat(lines):
        i = max(i for i, x in enumerate(lines) if "eval_loss" in x)
        lines.insert(i + 1, dict(lines[i], eval_loss=lines[i]["eval_loss"] + 0.5))
    _edit_lines(bad / "logging.jsonl", repeat)
    _skipped(root, bad, "the eval of step 30 logged twice with different values")


def test_an_eval_logged_twice_by_two_node_masters_is_one_eval(tmp_path):
    """Multi-node runs log each eval once per node master, with its own eval_runtime: one eval, not an error."""
    root, bad, _ = tree(tmp_path)
    args = json.loads((bad / "args.json").read_text())  # two nodes of 8 GPUs: each node master logs its own copy
    (bad / "args.json").write_text(json.dumps(dict(args, global_world_size=16, local_world_size=8)))
    rc, before, err = cli("parse", bad, "--json")

    def twice(lines):
        i = max(i for i, x in enumerate(lines) if "eval_loss" in x)
        lines.insert(i + 1, dict(lines[i], eval_runtime=lines[i]["eval_runtime"] + 1.0))
    _edit_lines(bad / "logging.jsonl", twice)
    rc, after, err = cli("parse", bad, "--json")
    (m,) = json.loads(after)
    assert rc == 0 and m["eval_loss"] == json.loads(before)[0]["eval_loss"] and m["duplicate_lines_dropped"] == 1


def test_a_tokens_step_repeated_with_another_count_is_refused_without_a_resume(tmp_path):
    root, bad, _ = tree(tmp_path)
    _edit_lines(bad / "tokens.jsonl", lambda lines: lines.append(dict(lines[9], tokens=lines[9]["tokens"] - 100)))
    _skipped(root, bad, "tokens.jsonl:31: step 10 recorded twice with different counts, and run.json records no "
                        "resume")


def test_a_gpm_step_repeated_with_other_values_is_refused_without_a_resume(tmp_path):
    from analysis.parse import sidefiles
    from experiments.base.errors import InputError

    row = {"step": 3, "wall_s": 0.5, "graphics_util": 40.0, "sm_util": 30.0, "tensor_util": 10.0, "dram_bw_util": 5.0}
    (tmp_path / "gpm.jsonl").write_text("".join(json.dumps(x) + "\n" for x in (row, row, dict(row, wall_s=0.9))))
    with pytest.raises(InputError, match=r"gpm.jsonl:3: step 3 recorded twice with different values"):
        sidefiles.read_gpm(tmp_path)
    assert sidefiles.read_gpm(tmp_path, resumed=True)[3]["wall_s"] == 0.9


def test_a_repeated_tokens_step_of_a_resumed_run_takes_the_later_count():
    from analysis.parse import sidefiles

    lines = [json.loads(x) for x in (SEED_RUN / "tokens.jsonl").read_text().splitlines()]
    blob = "".join(json.dumps(x) + "\n" for x in lines + [dict(lines[9], tokens=123, padded_tokens=456)]).encode()
    real, padded = sidefiles._tokens(Path("tokens.jsonl"), blob, True, None, None)
    assert real[10] == 123 and padded[10] == 456 and len(real) == 30


def test_a_profile_json_cut_in_half_is_refused_like_a_wrong_typed_one(tmp_path):
    root, bad, _ = tree(tmp_path)
    text = (bad / "profile.json").read_bytes()
    (bad / "profile.json").write_bytes(text[: len(text) // 2])
    _skipped(root, bad, "profile.json:")


@pytest.mark.parametrize("what", ["loop", "folder", "fifo"])
def test_a_log_that_is_no_file_beside_run_json_is_not_a_run_without_a_log(tmp_path, what):
    """A symlink loop, a folder or a FIFO named logging.jsonl read as "failed (no logging.jsonl)", exit 0."""
    root, bad, _ = tree(tmp_path)
    log = bad / "logging.jsonl"
    log.unlink()
    {"loop": lambda: log.symlink_to(log), "folder": log.mkdir, "fifo": lambda: os.mkfifo(log)}[what]()
    _skipped(root, bad, "logging.jsonl: ")
    rc, out, err = cli("parse", bad)
    one_line(rc, err, "logging.jsonl: ")


def test_an_unreadable_run_folder_is_named_on_the_skipped_line(tmp_path):
    root, bad, good = tree(tmp_path)
    bad.chmod(0)
    try:
        with permissions_in_force():
            rc, out, err = cli("tables", root, "--format", "json")
    finally:
        bad.chmod(0o755)
    line = one_line(rc, err, "cannot be read (Permission denied)", code=3)
    assert line.startswith(f"swiftbench: skipped {bad}: ") and good.name in _rows(out)


# ------------------------------------------------------------------------------------------------- symlinks

def _linked_copy(tmp_path: Path, root: Path, link: str) -> Path:
    """ROOT with LINK (a path under it) moved elsewhere on the disk and a symlink left in its place."""
    linked = tmp_path / "linked"
    shutil.copytree(root, linked, symlinks=True)
    target = tmp_path / "elsewhere" / link.replace("/", "_")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(linked / link, target)
    (linked / link).symlink_to(target, target_is_directory=True)
    return linked


@pytest.mark.parametrize("link", ["h200", "h200/seed", f"h200/seed/{SEED_RUN.name}"])
def test_a_tree_read_through_symlinks_gives_the_same_tables(tmp_path, link):
    """results/h200 a symlink (a user's disk layout) made every measured H200 row vanish with exit 0; a symlinked run
    folder was dropped and the seed row switched to another run."""
    root, bad, good = tree(tmp_path)
    rc, want, err = cli("tables", root, "--format", "json")
    assert rc == 0, err
    linked = _linked_copy(tmp_path, root, link)
    rc, got, err = cli("tables", linked, "--format", "json")
    assert rc == 0 and err == "", err
    assert _rows(got).keys() == _rows(want).keys() == {bad.name, good.name}
    for name in ("speedup", "convergence"):
        strip = lambda rows: [{k: v for k, v in r.items() if k != "path"} for r in rows]  # noqa: E731
        assert strip(json.loads(got)[name]) == strip(json.loads(want)[name])


def test_a_symlink_loop_in_a_tree_is_said_and_read_once(tmp_path):
    root, bad, good = tree(tmp_path)
    (root / "h200" / "seed" / "back").symlink_to(root / "h200", target_is_directory=True)
    rc, out, err = cli("tables", root, "--format", "json")
    assert rc == 0 and _rows(out).keys() == {bad.name, good.name}
    assert err.strip() == f"swiftbench: note: {root}/h200/seed/back is a symlink loop back to {root}/h200: read once"


# ---------------------------------------------------------------------------------------------- plan

def _config(tmp_path: Path, **change) -> Path:
    cfg = json.loads((SEED_RUN / "model_config.json").read_text())
    cfg.update(change)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return path


@pytest.mark.parametrize("change, needle", [
    ({"num_hidden_layers": -28}, "num_hidden_layers is -28: a model's num_hidden_layers is a whole number from 1"),
    ({"hidden_size": 0}, "hidden_size is 0:"),
    ({"num_attention_heads": 0}, "num_attention_heads is 0:"),
    ({"hidden_size": "3584"}, "hidden_size is a string ('3584')"),
    ({"num_attention_heads": 5}, "num_attention_heads 5 does not divide hidden_size 3584 (and no head_dim is given)"),
    ({"num_key_value_heads": 3}, "num_key_value_heads 3 does not divide num_attention_heads 28"),
])
def test_plan_refuses_a_model_config_no_model_has(tmp_path, change, needle):
    """num_hidden_layers -28 gave a peak of -0.18 GiB that fits; hidden_size 0 fitted too."""
    rc, out, err = cli("plan", "--model", _config(tmp_path, **change), "--hw", "h200", "--json")
    one_line(rc, err, needle)
    assert out == ""


def test_plan_with_a_300_character_model_is_one_line():
    rc, out, err = cli("plan", "--model", "m" * 300, "--hw", "h200")
    one_line(rc, err, "m" * 300)


@pytest.mark.parametrize("flag", ["--gpus", "--samples", "--batch", "--epochs", "--grad-accum", "--lora-rank"])
def test_plan_refuses_an_input_beyond_any_plausible_value(flag):
    """--gpus of 401 digits gave 0 steps and 0 s."""
    rc, out, err = cli("plan", flag, "1" + "0" * 400, "--hw", "h200", "--json")
    one_line(rc, err, f"{flag} a 401-digit number is beyond any plausible value")


# --------------------------------------------------------------------------------------------- run-all

@pytest.mark.parametrize("item", ["output_dir=results/x", "add_version=true", "output-dir=/tmp/x", "model=x",
                                  "resume_from_checkpoint=/c/checkpoint-5", "deepspeed=zero3"])
def test_run_all_refuses_to_set_a_flag_the_runner_owns(tmp_path, monkeypatch, item):
    """--set output_dir put checkpoints into results/ and the run read as "crash (exit code 0)"."""
    from experiments.run import runner

    monkeypatch.setattr(runner, "_run_one", lambda *a, **k: pytest.fail("a run was started"))
    rc, out, err = cli("run-all", "--hw", "cpu", "--model", "dummy", "--experiments", "seed", "--results",
                       tmp_path / "results", "--no-progress", "--set", item)
    flag = item.split("=")[0].lstrip("-").replace("-", "_")
    one_line(rc, err, f"--set {flag}: the runner sets --{flag} for every run")
    assert not (tmp_path / "results").exists()


# ------------------------------------------------------------------------------------ tracebacks and hangs

@pytest.mark.parametrize("command", ["parse", "tables", "report", "import", "plan"])
def test_a_path_component_over_255_bytes_is_one_line(tmp_path, command):
    long = tmp_path / ("x" * 300)
    argv = {"parse": ["parse", long], "tables": ["tables", long], "report": ["report", "--results", long,
                                                                            "--out", tmp_path / "r"],
            "import": ["import", long, "--hw", "h200", "--experiment", "myrun", "--results", tmp_path / "r"],
            "plan": ["plan", "--from-args", long / "args.json", "--hw", "h200"]}[command]
    rc, out, err = cli(*argv)
    one_line(rc, err, "x" * 300)
    assert "File name too long" in err or "no such" in err


def test_a_401_digit_integer_in_a_log_field_is_no_traceback(tmp_path):
    root, bad, _ = tree(tmp_path)
    text = (bad / "logging.jsonl").read_text().replace('"grad_norm": ', '"grad_norm": ' + "9" * 401 + ", \"x\": ", 1)
    (bad / "logging.jsonl").write_text(text)
    rc, out, err = cli("parse", bad, "--json")
    (m,) = json.loads(out)
    assert rc == 0 and m["diverged"] is True and m["first_bad_step"] == 1


@pytest.mark.parametrize("kind", ["billion laughs", "/dev/zero", "fifo", "folder", "self alias"])
def test_a_prices_file_that_no_reader_can_finish_is_one_line(tmp_path, kind):
    prices = tmp_path / "prices.yaml"
    if kind == "billion laughs":
        rows = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
        rows += [f"{c}: &{c} [{', '.join(['*' + p] * 9)}]" for p, c in zip("abcdefgh", "bcdefghi")]
        prices.write_text("\n".join(rows) + "\n")
    elif kind == "/dev/zero":
        prices.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(prices)
    elif kind == "folder":
        prices.mkdir()
    else:
        prices.write_text("h100: &a [1, *a]\n")
    root, _, _ = tree(tmp_path)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for argv in (["tables", root, "--prices", prices], ["plan", "--prices", prices, "--hw", "h100"]):
        rc, out, err = cli(*argv)
        one_line(rc, err, f"{prices}: ")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KiB


@pytest.mark.parametrize("name", ["tokens.jsonl", "profile.json", "gpm.jsonl", "schedule.jsonl", "launch.json"])
@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_a_side_file_that_is_a_fifo_or_dev_zero_is_skipped_not_a_hang(tmp_path, name, kind):
    root, bad, good = tree(tmp_path)
    path = bad / name
    path.unlink(missing_ok=True)
    os.mkfifo(path) if kind == "fifo" else path.symlink_to("/dev/zero")
    _skipped(root, bad, f"{name}: ")
    rc, out, err = cli("parse", bad)
    one_line(rc, err, f"{name}: a ")


def test_a_log_that_is_a_fifo_is_one_line_in_import(tmp_path):
    src = tmp_path / "output" / "v0-20260101-000000"
    src.mkdir(parents=True)
    os.mkfifo(src / "logging.jsonl")
    rc, out, err = cli("import", tmp_path / "output", "--hw", "h200", "--experiment", "myrun", "--results",
                       tmp_path / "results")
    one_line(rc, err, "logging.jsonl: a FIFO (named pipe), not a regular file")
    assert not (tmp_path / "results").exists()


def test_a_folder_name_with_a_newline_and_escape_codes_stays_one_plain_line(tmp_path):
    root, bad, _ = tree(tmp_path)
    odd = bad.with_name("run\n\x1b[31mred")
    bad.rename(odd)
    (odd / "run.json").write_text("{broken")
    rc, out, err = cli("tables", root, "--format", "json")
    line = one_line(rc, err, "run\\n\\x1b[31mred", code=3)
    assert "\x1b" not in err and line.endswith("run.json:1: not valid JSON: Expecting property name enclosed in "
                                               "double quotes")
    rc, out, err = cli("parse", odd)
    assert "\x1b" not in err and err.count("\n") == 1 and rc == 2


def test_a_log_linked_to_a_private_file_never_shows_its_contents(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("password=hunter2 and more of the secret text to be kept\n" * 3)
    secret.chmod(0o600)
    run = tmp_path / "run"
    run.mkdir()
    (run / "logging.jsonl").symlink_to(secret)
    for argv in (["parse", run], ["import", run, "--hw", "h200", "--experiment", "myrun", "--results",
                                  tmp_path / "results"]):
        rc, out, err = cli(*argv)
        line = one_line(rc, err, "logging.jsonl")
        assert "hunter2" not in line and "password" not in line, line


def test_a_json_error_in_an_args_file_is_one_line_in_import(tmp_path):
    src = tmp_path / "output" / "v0-20260101-000000"
    src.mkdir(parents=True)
    shutil.copy(SEED_RUN / "logging.jsonl", src)
    (src / "args.json").write_text('{"model": ' + "[" * 100_000)
    rc, out, err = cli("import", tmp_path / "output", "--hw", "h200", "--experiment", "myrun", "--results",
                       tmp_path / "results")
    one_line(rc, err, "args.json")


def test_a_full_disk_while_writing_run_json_leaves_the_old_one_and_no_temporary_file(tmp_path, monkeypatch):
    from experiments.base.errors import InputError
    from experiments.run import folders

    (tmp_path / "run.json").write_text('{"status": "running"}')

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(InputError, match=r"run.json: cannot be written \(No space left on device\)"):
        folders.write_status(tmp_path, status="ok")
    assert json.loads((tmp_path / "run.json").read_text()) == {"status": "running"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]


def test_any_other_error_of_a_command_is_one_line_naming_its_inputs(tmp_path, monkeypatch):
    """The boundary's last resort: an error no reader recognised (here a division by zero) names the command's input
    and the cause in words, never the exception's own text."""
    from analysis.present import tables

    def broken(*a, **k):
        raise ZeroDivisionError("secret text from a file")
    monkeypatch.setattr(tables, "scan", broken)
    rc, out, err = cli("tables", tmp_path)
    line = one_line(rc, err, ": a zero where a size or a count must be positive")
    assert line.startswith(f"swiftbench: error: {tmp_path}") and "secret" not in line


def test_the_committed_tree_reads_as_before():
    """No committed run folder is refused by the new checks (tables exit 0, nothing on stderr)."""
    rc, out, err = cli("tables", committed_results(), "--format", "json", limit_s=120)
    assert rc == 0 and err == "", err


def test_a_folder_name_that_is_no_utf8_is_skipped_not_the_whole_tree(tmp_path):
    """Bytes that are no UTF-8 in a run folder's name stopped tables (pandas cannot hold them): that folder is
    skipped, the other runs are read."""
    root, bad, good = tree(tmp_path)
    odd = Path(os.fsdecode(os.fsencode(bad.parent) + b"/run\xff\xfe"))
    bad.rename(odd)
    for fmt in ("md", "json"):
        rc, out, err = cli("tables", root, "--format", fmt)
        one_line(rc, err, "run\\udcff\\udcfe: its path is not UTF-8 text: rename the folder", code=3)
    assert good.name in _rows(out)


@pytest.mark.parametrize("kind, needle", [("loop", "a symlink loop"), ("fifo", "a FIFO (named pipe), not a results "
                                                                                "folder"),
                                          ("file", "a file, not a results folder"), ("none", "no such results folder")])
def test_a_results_root_that_is_no_folder_says_what_it_is(tmp_path, kind, needle):
    root = tmp_path / "root"
    {"loop": lambda: root.symlink_to(root.name), "fifo": lambda: os.mkfifo(root), "file": lambda: root.write_text("x"),
     "none": lambda: None}[kind]()
    rc, out, err = cli("tables", root)
    one_line(rc, err, f"{root}: {needle}")


def test_an_error_writing_the_output_is_one_line(tmp_path, monkeypatch):
    """stdout on a full disk: one line naming the command's input, not the suite's own default price table."""
    import sys

    class Full:
        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

        def flush(self):
            pass
    root, _, _ = tree(tmp_path)
    from analysis.cli import main

    monkeypatch.setattr(sys, "stdout", Full())
    err_lines = []
    monkeypatch.setattr(sys, "stderr", type("E", (), {"write": lambda self, t: err_lines.append(t),
                                                      "flush": lambda self: None})())
    assert main(["tables", str(root), "--format", "json"]) == 2
    assert "".join(err_lines) == f"swiftbench: error: {root}: No space left on device\n"


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "loop", "missing"])
def test_a_seeds_folder_that_is_no_folder_is_one_line(tmp_path, kind):
    """tables --seeds naming no folder left the published rows out, exit 0."""
    seeds = tmp_path / "seeds"
    {"fifo": lambda: os.mkfifo(seeds), "/dev/zero": lambda: seeds.symlink_to("/dev/zero"),
     "loop": lambda: seeds.symlink_to(seeds.name), "missing": lambda: None}[kind]()
    root, _, _ = tree(tmp_path)
    rc, out, err = cli("tables", root, "--seeds", seeds)
    one_line(rc, err, f"{seeds}: no such seeds folder")


def test_import_refuses_runner_folders_below_its_source(tmp_path):
    root, bad, _ = tree(tmp_path)
    rc, out, err = cli("import", root / "h200", "--hw", "h200", "--experiment", "myrun", "--results", tmp_path / "r")
    one_line(rc, err, "already a swiftbench run folder (it has run.json)")
    assert not (tmp_path / "r").exists()


def test_a_log_line_past_its_cap_is_one_line_not_held_whole(tmp_path, monkeypatch):
    """A log of one line without end (under the file's cap) would be read whole into memory: one line is bounded too
    (runfiles.LOG_LINE_BYTES; small here)."""
    from experiments.base import runfiles

    monkeypatch.setattr(runfiles, "LOG_LINE_BYTES", 4096)
    root, bad, _ = tree(tmp_path)
    with open(bad / "logging.jsonl", "a") as f:
        f.write('{"loss": 1.0, "pad": "' + "x" * 10_000 + '"}\n')
    rc, out, err = cli("parse", bad)
    one_line(rc, err, "logging.jsonl:11: a line of more than 4096 bytes")
