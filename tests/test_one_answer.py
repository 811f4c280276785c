"""One question, every path (issue 43): the fast recipe on the H100 and the seed recipe on the A10 get the same
epoch, band and fit from `tables`, the report's predicted row, `plan`, `plan --from-args` and `plan --optimize`,
because all of them ask analysis.estimate.epoch. Each path runs as a user runs it (the CLI, JSON out), on a copy of
the committed results (never the live tree)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from committed import committed_results

REPO = Path(__file__).resolve().parents[1]
FAST_FLAGS = ["--batch", "16", "--grad-accum", "1", "--padding-free", "true", "--liger", "true",
              "--gradient-checkpointing", "false"]
FAST_RUN = "h200/fast/20261205-075221-8ef7b8ca406d"  # a timed full epoch of fast (harness 2)
SEED_RUN = "h200/seed/20261202-145024-363c2fc28e7a"  # a full epoch of the seed recipe


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """A copy of the committed H200 runs (the estimator reads nothing else)."""
    out = tmp_path_factory.mktemp("one-answer") / "results"
    shutil.copytree(committed_results() / "h200", out / "h200",
                    ignore=shutil.ignore_patterns("gpm.jsonl", "events.out.*", "images", "nvml.csv", "sft.ipynb"))
    return out


def _cli(*args: str) -> dict | list:
    p = subprocess.run([sys.executable, "-m", "analysis.cli", *args], capture_output=True, text=True, cwd=REPO,
                       timeout=600)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def _same(a: tuple[float, float, float], b: tuple[float, float, float]) -> None:
    assert a == pytest.approx(b, rel=0.01), (a, b)


def test_fast_on_the_h100_one_figure_on_every_path(results):
    tables = _cli("tables", str(results), "--format", "json")
    cls = next(c for c in tables["classes"] if c["hw"] == "h100")
    assert cls["recipe"] == "fast" and cls["fits"] and not cls["measured"]
    answer = (cls["epoch_s"], cls["low_s"], cls["high_s"])
    assert answer[1] < answer[0] < answer[2]  # modelled: a band

    [plan] = _cli("plan", *FAST_FLAGS, "--hw", "h100", "--results", str(results), "--json")
    assert plan["fit"] == "yes" and plan["time_kind"] == "profiled"
    _same((plan["total_time_s"], plan["total_low_s"], plan["total_high_s"]), answer)

    [from_args] = _cli("plan", "--from-args", str(results / FAST_RUN / "args.json"), "--hw", "h100",
                       "--results", str(results), "--json")
    assert from_args["fit"] == "yes"
    _same((from_args["total_time_s"], from_args["total_low_s"], from_args["total_high_s"]), answer)

    opt = _cli("plan", "--optimize", "time", "--hw", "h100", "--results", str(results), "--json")
    best = opt["choices"][0]["best"]
    assert best["recipe"] == {"batch": 16, "grad_accum": 1, "padding_free": True, "liger": True,
                              "gradient_checkpointing": False, "lora_rank": 8}
    assert best["fit"] == "yes"
    _same((best["epoch_s"], best["low_s"], best["high_s"]), answer)
    # the job: start-up + epoch, the same start-up on every path, and the cost is the job's
    assert best["startup_s"] == pytest.approx(plan["startup_s"]) == pytest.approx(from_args["startup_s"])
    assert cls["job_s"] == pytest.approx(cls["epoch_s"] + plan["startup_s"], rel=0.01)
    assert plan["cost"] == pytest.approx(plan["job_s"] / 3600 * plan["price_per_gpu_hour"])


def test_fast_fits_the_a100_40gb_on_every_path_by_its_measured_peak(results):
    """The committed fast runs peaked at 35.52 GiB, within the A100 40GB's 37.25: the answer and plan say it fits
    (measured) although the memory model alone needs more."""
    tables = _cli("tables", str(results), "--format", "json")
    cls = next(c for c in tables["classes"] if c["hw"] == "a100")
    assert cls["recipe"] == "fast" and cls["fits"] and "35.52" in cls["fit_basis"]
    [plan] = _cli("plan", *FAST_FLAGS, "--hw", "a100", "--results", str(results), "--json")
    # plan matches runs by their flags (the fast recipe's flags under other experiment names too: peak 35.28 GiB)
    assert plan["needs_gib"] > plan["capacity_gib"] and plan["fit"] == "yes"
    assert plan["fit_basis"].startswith("measured: peak 35.")
    _same((plan["total_time_s"], plan["total_low_s"], plan["total_high_s"]),
          (cls["epoch_s"], cls["low_s"], cls["high_s"]))


def test_seed_on_the_a10_one_figure_on_every_path(results, tmp_path):
    [plan] = _cli("plan", "--hw", "a10", "--results", str(results), "--json")
    [from_args] = _cli("plan", "--from-args", str(results / SEED_RUN / "args.json"), "--hw", "a10",
                       "--results", str(results), "--json")
    figure = (plan["total_time_s"], plan["total_low_s"], plan["total_high_s"])
    assert plan["time_kind"] == "profiled" and plan["fit"] == from_args["fit"] == "yes"
    _same((from_args["total_time_s"], from_args["total_low_s"], from_args["total_high_s"]), figure)
    # the report's predicted row for the A10 (the seed recipe's table)
    from analysis.present.report import answer as report_answer
    from analysis.present.report.context import Context

    ctx = Context.load(results, out_dir=tmp_path)
    row = next(r for r in report_answer.answer_rows(ctx) if r.hw == "a10" and r.source == "predicted")
    assert row.planner_epoch_s == pytest.approx(plan["total_time_s"], rel=0.01)


def test_an_imported_log_never_becomes_a_classs_figure(results, tmp_path):
    """An H200 log imported as `--hw a100` is the user's word about its GPU: plan's A100 figure stays what it was,
    and the report's header keeps the A100 out of "Measured on" (it names the import apart)."""
    src = tmp_path / "my-swift-output"
    src.mkdir()
    for name in ("logging.jsonl", "args.json"):
        shutil.copy(results / SEED_RUN / name, src / name)
    tree = tmp_path / "results"
    shutil.copytree(results, tree)
    [before] = _cli("plan", "--hw", "a100", "--results", str(tree), "--json")
    p = subprocess.run([sys.executable, "-m", "analysis.cli", "import", str(src), "--hw", "a100", "--experiment",
                        "seed", "--results", str(tree)], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert p.returncode == 0, p.stderr
    assert list((tree / "a100").rglob("logging.jsonl"))  # it is there, under the class the user named
    [after] = _cli("plan", "--hw", "a100", "--results", str(tree), "--json")
    for key in ("total_time_s", "total_low_s", "total_high_s", "time_kind", "time_source", "fit", "startup_s"):
        assert after[key] == before[key], key
    from analysis.present.report.context import Context
    from analysis.present.report.header import header

    text = header(Context.load(tree, out_dir=tmp_path / "report"))
    assert "Measured on h200 (imported logs, their GPU as their owner says: a100)" in text


def test_every_class_has_a_command_that_bash_parses(results, tmp_path):
    """Issue 43: a command per class (the recommended one where the recipe is the same), the 24 GB classes' recipe
    shown to fit by a committed run under their 22.35 GiB cap; every command parses with `bash -n`, and the answer
    prints each class's."""
    tables = _cli("tables", str(results), "--format", "json")
    for c in tables["classes"]:
        assert c["command"] and c["command"].startswith("swift sft"), c["hw"]
        script = tmp_path / f"{c['hw']}.sh"
        script.write_text(c["command"] + "\n")
        assert subprocess.run(["bash", "-n", str(script)]).returncode == 0, c["hw"]
        if c["capacity_gib"] < 23:
            assert "--gradient_checkpointing false" not in c["command"]  # ms-swift's default: on
            assert c["fit_basis"].startswith("trained under a 22.35 GiB allocator cap")
    p = subprocess.run([sys.executable, "-m", "analysis.cli", "tables", str(results), "--answer"], capture_output=True,
                       text=True, cwd=REPO, timeout=600)
    assert p.returncode == 0, p.stderr
    blocks = p.stdout.split("```bash\n")[1:]
    commands = {b.split("\n```")[0].replace(" \\\n  ", " ") for b in blocks}
    assert {" ".join(c["command"].split(" \\\n  ")) for c in tables["classes"]} == commands
