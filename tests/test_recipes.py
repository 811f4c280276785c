"""Recipes as data: the base equals the published command; rendering per ms-swift version."""
import pytest

from analysis.core.seeds import published_recipe
from experiments.base.errors import InputError
from experiments.recipes import recipes


def _norm(v):
    """Compare values as the command line sees them: numbers by value ('1e-4' == 0.0001), the rest as text."""
    if isinstance(v, list):
        return [_norm(x) for x in v]
    try:
        return float(v)
    except (TypeError, ValueError):
        return str(v)


def test_base_recipe_is_the_published_command():
    published = published_recipe()
    base = recipes.flags("seed")
    assert {k: _norm(v) for k, v in base.items()} == {k: _norm(v) for k, v in published.items()}


def test_bs16_keeps_the_global_batch():
    f = recipes.flags("bs16")
    assert f["per_device_train_batch_size"] * f["gradient_accumulation_steps"] == 16
    assert {k: v for k, v in f.items() if k not in ("per_device_train_batch_size", "gradient_accumulation_steps")} \
        == {k: v for k, v in recipes.flags("seed").items()
            if k not in ("per_device_train_batch_size", "gradient_accumulation_steps")}


def test_render_for_4x():
    r = recipes.render("seed", "4.6.0", output_dir="/out/run", max_steps=30)
    argv = r["argv"]
    assert argv[:2] == ["swift", "sft"] and "--train_type" not in argv
    assert argv[argv.index("--tuner_type") + 1] == "lora"
    assert argv[argv.index("--split_dataset_ratio") + 1] == "0.01"
    assert argv[argv.index("--output_dir") + 1] == "/out/run" and argv[argv.index("--max_steps") + 1] == "30"
    assert argv[argv.index("--add_version") + 1] == "false"
    i = argv.index("--dataset")
    assert argv[i + 1:i + 4] == ["AI-ModelScope/alpaca-gpt4-data-zh#500", "AI-ModelScope/alpaca-gpt4-data-en#500",
                                 "swift/self-cognition#500"]
    assert "--system 'You are a helpful assistant.'" in r["shell"]
    assert argv.index("--tuner_type") == 4  # renamed in place, in the article's order


@pytest.mark.parametrize("version,train_flag,split", [("3.5.0", "--train_type", False), ("3.6.0", "--train_type", True),
                                                      ("2.6.1", "--train_type", False)])
def test_render_for_older_versions(version, train_flag, split):
    argv = recipes.render("seed", version, output_dir="/o")["argv"]
    assert train_flag in argv and ("--split_dataset_ratio" in argv) is split


def test_unknown_experiment():
    with pytest.raises(InputError, match="unknown experiment 'nope'"):
        recipes.flags("nope")


def test_recipe_hash_changes_with_flags():
    assert recipes.recipe_hash("seed") != recipes.recipe_hash("bs16")


# ------------------------------------------------------------------------------------- the copyable command


def _argv_of(command: str, plugin: str) -> list[str]:
    """A printed command as the argv bash gives swift: its lines joined, recipes.PLUGIN_SHELL as PLUGIN."""
    import shlex

    return shlex.split(command.replace("\\\n", " ").replace(recipes.PLUGIN_SHELL, shlex.quote(plugin)))


def _flags(argv: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    key = None
    for a in argv[2:]:
        if a.startswith("--"):
            key = a[2:]
            out[key] = []
        else:
            assert key is not None, argv
            out[key].append(a)
    return out


@pytest.mark.parametrize("experiment", recipes.experiments(matrix_only=False))
def test_a_runs_swift_arguments_are_the_printed_commands(experiment):
    """What the runner gives `swift sft` (recipes.render) equals the command the answer prints (recipes.copyable),
    flag for flag, apart from what the runner owns for every run (RUN_FLAGS: where outputs go, which model folder
    and data files, a cut) and the machine's own (offline check_model)."""
    plugin = str(recipes.plugin_path())
    printed = _flags(_argv_of(recipes.copyable(experiment, recipes.MEASURED_SWIFT), plugin))
    ran = recipes.render(experiment, recipes.MEASURED_SWIFT, output_dir="/tmp/x", model="/models/Qwen2.5-7B-Instruct",
                         datasets=["/data/a.json#500"], overrides={"check_model": False})
    ran_flags = _flags(ran["argv"])
    owned = set(recipes.RUN_FLAGS) | {"check_model"}
    assert {k: v for k, v in ran_flags.items() if k not in owned} == \
        {k: v for k, v in printed.items() if k not in owned}
    assert "experiments.launch" not in recipes.copyable(experiment, recipes.MEASURED_SWIFT)
    if "external_plugins" in printed:
        assert printed["external_plugins"] == [plugin] and ran_flags["external_plugins"] == [plugin]


def test_the_committed_fast_run_ran_the_printed_command():
    """The fast epoch of 2026-12-03 (device call 47): its run.json's swift argv is the printed command's, apart from
    the runner's own flags and the plugin's path on that machine."""
    import json
    from pathlib import Path

    run = Path(__file__).resolve().parents[1] / "results/h200/fast/20261203-090811-b2a21682bc96"
    argv = json.loads((run / "run.json").read_text())["command"]
    ran = _flags(argv)
    printed = _flags(_argv_of(recipes.copyable("fast", "4.6.0"), ran["external_plugins"][0]))
    owned = set(recipes.RUN_FLAGS) | {"check_model"}
    assert ran["external_plugins"][0].endswith("experiments/recipes/swift_plugin.py")
    assert {k: v for k, v in ran.items() if k not in owned} == {k: v for k, v in printed.items() if k not in owned}
