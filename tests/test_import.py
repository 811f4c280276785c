"""`swiftbench import` (issue 16): a user's plain `swift sft` output folder, laid out as swift writes it
(output/<model>/vN-<timestamp>/logging.jsonl + args.json, made from a ../shared/reallogs log and its args), joins the
tables labelled imported; `tables` given the plain folder points at the import instead of dropping it silently."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SHARED

from analysis.parse.results import read_run
from experiments.base.errors import SKIPPED_EXIT

REPO = Path(__file__).resolve().parents[1]
STEM = "01_lgc-FINANCE_DeepClima-R1_root"  # ms-swift 3.x, DeepSeek-R1-0528-Qwen3-8B LoRA, 438 steps, complete
REAL = SHARED / "reallogs"

pytestmark = pytest.mark.skipif(not (REAL / f"{STEM}.jsonl").is_file(), reason="../shared/reallogs is not present")


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "analysis.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, timeout=300)


@pytest.fixture
def swift_output(tmp_path) -> Path:
    """output/<model>/vN-<timestamp>/ as `swift sft` writes it: the run folder named from args.json's output_dir."""
    args = json.loads((REAL / f"{STEM}.args.json").read_text())
    version_dir = Path(args["output_dir"]).name  # v0-20260124-040114
    run = tmp_path / "output" / Path(args["model"]).name / version_dir
    run.mkdir(parents=True)
    shutil.copy(REAL / f"{STEM}.jsonl", run / "logging.jsonl")
    shutil.copy(REAL / f"{STEM}.args.json", run / "args.json")
    (run / "checkpoint-438").mkdir()  # swift's adapters: not copied
    (run / "checkpoint-438" / "adapter_model.safetensors").write_bytes(b"w")
    return tmp_path / "output"


def test_plain_output_is_pointed_at_import(swift_output):
    p = _cli("tables", swift_output, "--format", "json")
    assert p.returncode == SKIPPED_EXIT
    assert "plain ms-swift output folder" in p.stderr and "swiftbench import" in p.stderr
    assert p.stderr.count("\n") == 1
    assert not [r for r in json.loads(p.stdout)["speedup"] if r["source"] == "measured"]


def _as_seed_recipe(swift_output: Path) -> None:
    """Rewrite the run's args.json to the seed recipe's identity (model, tuner, batch, grad-accum, length, rank)."""
    from experiments.recipes import recipes

    args_file = next(swift_output.glob("*/v0-*/args.json"))
    args = json.loads(args_file.read_text())
    seed = recipes.flags("seed")
    args.update({k: seed[k] for k in ("model", "per_device_train_batch_size", "gradient_accumulation_steps",
                                      "max_length", "lora_rank")}, train_type="lora")
    args.pop("tuner_type", None)
    args_file.write_text(json.dumps(args))


def test_imported_run_joins_the_tables_labelled_imported(swift_output, tmp_path):
    results = tmp_path / "results"
    _as_seed_recipe(swift_output)
    p = _cli("import", swift_output, "--hw", "a100", "--experiment", "seed", "--results", results)
    assert p.returncode == 0, p.stderr
    (run,) = list((results / "a100" / "seed").iterdir())
    assert run.name.startswith("20260124-040114-import-") and p.stdout.startswith("imported: ")
    assert sorted(f.name for f in run.iterdir()) == ["args.json", "env.json", "logging.jsonl", "run.json"]
    status, env = json.loads((run / "run.json").read_text()), json.loads((run / "env.json").read_text())
    assert status["imported"]["source"] == str(next(swift_output.glob("*/v0-*")).resolve())
    assert "gpu" in status["unknown"] and "host" in env["unknown"] and env["imported"] is True
    rec = read_run(run)
    assert rec.hw == "a100" and rec.experiment == "seed" and "imported" in rec.labels and rec.host_id is None
    assert (rec.global_steps, rec.complete, rec.peak_mem_gib) == (438, True, 16.56)

    p = _cli("tables", results, "--format", "json")
    assert p.returncode == 0 and p.stderr == "", p.stderr
    tables = json.loads(p.stdout)
    (row,) = [r for r in tables["speedup"] if r["source"] == "measured"]
    assert (row["hw"], row["experiment"], row["run"]) == ("a100", "seed", run.name) and "imported" in row["labels"]
    assert row["ms_per_step"] and row["peak_gib"] == 16.56
    (conv,) = [r for r in tables["convergence"] if r["source"] == "measured"]
    assert "imported" in conv["labels"] and conv["steps"] == 438

    # importing again copies nothing and overwrites nothing
    before = {f: f.read_bytes() for f in run.iterdir()}
    p = _cli("import", swift_output, "--hw", "a100", "--experiment", "seed", "--results", results)
    assert p.returncode == 0 and p.stdout.startswith("already there: ")
    assert {f: f.read_bytes() for f in run.iterdir()} == before and len(list(run.parent.iterdir())) == 1


@pytest.mark.parametrize("argv,needle", [(["--hw", "tpu9", "--experiment", "seed"], "unknown hardware 'tpu9'"),
                                         (["--hw", "a100", "--experiment", "seed"], "not the 'seed' recipe"),
                                         (["--hw", "a100", "--experiment", "qcap24-bs4"], "claims experiment"),
                                         (["--hw", "a100", "--experiment", "../x"], "experiment name '../x'"),
                                         (["--hw", "a100", "--experiment", "h100"], "experiment name 'h100'")])
def test_bad_import_arguments_are_one_line_exit_2(swift_output, tmp_path, argv, needle):
    p = _cli("import", swift_output, *argv, "--results", tmp_path / "results")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and needle in p.stderr
    assert not (tmp_path / "results").exists()


def test_a_folder_without_a_log_or_a_runner_folder_is_refused(tmp_path, results_tree):
    (tmp_path / "empty").mkdir()
    p = _cli("import", tmp_path / "empty", "--hw", "a100", "--experiment", "seed", "--results", tmp_path / "r")
    assert p.returncode == 2 and "no logging.jsonl" in p.stderr
    p = _cli("import", results_tree / "h200" / "seed" / "run-20261130-000000", "--hw", "h200", "--experiment", "seed",
             "--results", tmp_path / "r")
    assert p.returncode == 2 and "already a swiftbench run folder" in p.stderr


def _answer_table(results: Path, out: Path) -> str:
    """The report's answer table (analysis/present/report/answer.py) of a results tree, as HTML."""
    from analysis.present.report import answer
    from analysis.present.report.context import Context

    ctx = Context.load(results, out_dir=out)
    per_class = {c.hw: c for c in ctx.answer().classes}
    best = {hw: answer.class_cell(per_class.get(hw)) for hw in answer.classes(ctx)}
    return answer.table_html(answer.answer_rows(ctx), best)


def test_a_run_of_another_recipe_never_changes_the_answer(swift_output, results_tree, tmp_path):
    """Issue 32: the DeepSeek-R1-Qwen3-8B run imported as `--hw rtx4090 --experiment seed` became the RTX 4090's
    measured row and redefined the epoch (94 -> 438 steps). Now it is refused under seed, kept under its own name,
    and the answer table and the tables stay byte-identical."""
    before = _answer_table(results_tree, tmp_path / "r1")
    tables_before = _cli("tables", results_tree, "--format", "json").stdout
    p = _cli("import", swift_output, "--hw", "rtx4090", "--experiment", "seed", "--results", results_tree)
    assert p.returncode == 2 and "not the 'seed' recipe" in p.stderr and "model: run deepseek-r1-0528-qwen3-8b" \
        in p.stderr and p.stderr.count("\n") == 1
    assert not (results_tree / "rtx4090").exists()
    p = _cli("import", swift_output, "--hw", "rtx4090", "--experiment", "myrun", "--results", results_tree)
    assert p.returncode == 0, p.stderr
    (run,) = list((results_tree / "rtx4090" / "myrun").iterdir())
    assert read_run(run).experiment == "myrun"
    assert _answer_table(results_tree, tmp_path / "r2") == before
    after = json.loads(_cli("tables", results_tree, "--format", "json").stdout)
    mine = after.pop("your_runs")
    assert after == {k: v for k, v in json.loads(tables_before).items() if k != "your_runs"}
    # the user's run is named by the tables (issue 36), beside the matrix, with the recipe it is nearest to
    (row,) = mine
    assert row["experiment"] == "myrun" and row["hw"] == "rtx4090" and row["nearest"]
    assert "model: yours" in row["differs"] and "imported" in row["labels"]
    text = _cli("tables", results_tree).stdout
    assert "## Your runs" in text and "myrun" in text

    # the same log under a second label is refused, whatever the label
    p = _cli("import", swift_output, "--hw", "a100", "--experiment", "other", "--results", results_tree)
    assert p.returncode == 2 and "already imported as rtx4090/myrun" in p.stderr
    assert not (results_tree / "a100" / "other").exists()


def test_an_older_import_under_a_recipe_it_is_not_is_left_out(swift_output, results_tree, tmp_path):
    """A tree imported before the recipe check (the run under rtx4090/seed) is skipped with its reason, so the answer
    table is what it was without it."""
    before = _answer_table(results_tree, tmp_path / "r1")
    p = _cli("import", swift_output, "--hw", "rtx4090", "--experiment", "myrun", "--results", results_tree)
    assert p.returncode == 0, p.stderr
    (run,) = list((results_tree / "rtx4090" / "myrun").iterdir())
    (results_tree / "rtx4090" / "seed").mkdir()
    planted = results_tree / "rtx4090" / "seed" / run.name
    run.rename(planted)
    status = json.loads((planted / "run.json").read_text())
    (planted / "run.json").write_text(json.dumps({**status, "experiment": "seed"}))
    assert _answer_table(results_tree, tmp_path / "r2") == before
    p = _cli("tables", results_tree, "--format", "json")
    assert "imported as 'seed' but not its recipe" in p.stderr
