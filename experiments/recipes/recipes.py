"""Recipes as data (experiments/recipes/recipes.yaml) rendered into the exact `swift sft` command line.

The base recipe is the article's command, flag for flag; an experiment overrides some flags; the installed
ms-swift version decides the few adaptations that keep the command's meaning (renamed flags, changed
defaults). The rendered command is saved with every run (command.sh), so a run says what it ran.
"""
from __future__ import annotations

import functools
import hashlib
import json
import shlex
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from experiments.base.datafiles import read_yaml
from experiments.base.errors import InputError

RECIPES_FILE = Path(__file__).resolve().parent / "recipes.yaml"
# Flags the runner owns for every run: where outputs go and what is being trained on.
RUN_FLAGS = ("output_dir", "model", "dataset", "max_steps", "add_version")
# `external_plugins: swiftbench` in a recipe names the package's plugin file (swift_plugin.py beside this module): a
# run gets its path, a printed command `"$(swiftbench plugin || ...)"`, which prints that path where swiftbench is
# installed. Where it is not, bash says "swiftbench: command not found" and ms-swift refuses the plugin it is given
# instead ("Cannot import external file: .../swiftbench-not-installed"), before it loads anything: an empty argument
# would pass unnoticed on the command line. `bash -n` accepts it; one line.
PLUGIN = "swiftbench"
MEASURED_SWIFT = "4.6.0"  # the ms-swift every committed GPU run used: a command is spelled for it when none is known
PLUGIN_SHELL = '"$(swiftbench plugin || echo swiftbench-not-installed)"'


def plugin_path() -> Path:
    """The plugin file ms-swift imports for `--external_plugins swiftbench` (experiments/recipes/swift_plugin.py)."""
    return Path(__file__).resolve().parent / "swift_plugin.py"


@functools.lru_cache(maxsize=None)
def load(path: str | Path = RECIPES_FILE) -> dict:
    path = Path(path)
    data = read_yaml(path)
    for key in ("base", "experiments", "adaptations"):
        if key not in (data or {}):
            raise InputError(path, f"missing top-level key {key!r}")
    return data


def experiments(path: str | Path = RECIPES_FILE, matrix_only: bool = True) -> list[str]:
    """Experiment names in file order (only those of the hardware matrix unless matrix_only is False)."""
    return [k for k, v in load(path)["experiments"].items() if v.get("matrix", True) or not matrix_only]


def launcher(experiment: str, path: str | Path = RECIPES_FILE) -> dict:
    """experiments/launch/launcher.py options of a matrix experiment: its own `launcher`, else the file's default."""
    data = load(path)
    if experiment not in data["experiments"]:
        raise InputError(path, f"unknown experiment {experiment!r} (known: {', '.join(data['experiments'])})")
    own = (data["experiments"][experiment] or {}).get("launcher")
    return dict(own if own is not None else data.get("launcher") or {})


def profile_options(path: str | Path = RECIPES_FILE) -> dict:
    """The launcher options of a profiled matrix run (recipes.yaml `profile`): a run that asks for a profile."""
    return dict(load(path).get("profile") or {})


def flags(experiment: str, path: str | Path = RECIPES_FILE) -> dict:
    """Base flags with the experiment's overrides applied (a None override removes the flag)."""
    data = load(path)
    if experiment not in data["experiments"]:
        raise InputError(path, f"unknown experiment {experiment!r} (known: {', '.join(data['experiments'])})")
    out = dict(data["base"])
    for k, v in (data["experiments"][experiment].get("overrides") or {}).items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = v
    return out


def adapt(flag_map: dict, swift_version: str, path: str | Path = RECIPES_FILE) -> tuple[dict, list[str]]:
    """Apply the version adaptations; returns the new flags and a note for each change made."""
    out, notes = dict(flag_map), []
    version = Version(swift_version)
    for rule in load(path)["adaptations"]:
        if version not in SpecifierSet(rule["when"]):
            continue
        for old, new in (rule.get("rename") or {}).items():
            if old in out:  # rename in place: the command keeps the article's flag order
                out = {(new if k == old else k): v for k, v in out.items()}
                notes.append(f"--{old} -> --{new}: {rule['why']}")
        for k, v in (rule.get("add") or {}).items():
            if k not in out:
                out[k] = v
                notes.append(f"--{k} {v}: {rule['why']}")
    return out, notes


def _value(v) -> list[str]:
    if isinstance(v, bool):
        return ["true" if v else "false"]
    if isinstance(v, list):
        return [str(x) for x in v]
    return [str(v)]


def _plugin_value(value, plugin: str):
    """`external_plugins` with the package's plugin named by PLUGIN (the recipe's `swiftbench`) resolved to PLUGIN."""
    items = value if isinstance(value, list) else [value]
    return [plugin if x == PLUGIN else x for x in items]


def command_flags(experiment: str, swift_version: str, overrides: dict | None = None,
                  path: str | Path = RECIPES_FILE) -> tuple[dict, list[str]]:
    """The recipe's flags for SWIFT_VERSION (adaptations applied) with OVERRIDES on top: what `swift sft` is given,
    apart from the plugin's path. Returns the flags and the adaptation notes."""
    f = flags(experiment, path)
    for k, v in (overrides or {}).items():
        if v is None:
            f.pop(k, None)
        else:
            f[k] = v
    return adapt(f, swift_version, path)


def copyable(experiment: str, swift_version: str, path: str | Path = RECIPES_FILE) -> str:
    """The recipe as a command a user pastes into bash: the article's hub model and datasets, its output folder, the
    installed ms-swift's spelling of every flag, and the plugin as PLUGIN_SHELL. A run of the recipe
    gives `swift sft` these same arguments, apart from what the runner owns (RUN_FLAGS) and the machine's own
    (tests/test_recipes.py compares them)."""
    f, _ = command_flags(experiment, swift_version, path=path)
    own = [k for k, v in (load(path)["experiments"][experiment].get("overrides") or {}).items()
           if v is not None and k in f]
    # the model, then what this recipe changes from the article's (the flags that matter, on the first lines a
    # reader sees), then the article's own flags in its order
    order = [k for k in f if k == "model"] + [k for k in own if k != "model"]
    order += [k for k in f if k not in order]
    lines = ["swift sft"]
    for k, v in ((k, f[k]) for k in order):
        if k == "external_plugins":
            values = [PLUGIN_SHELL if x == PLUGIN else shlex.quote(str(x)) for x in _plugin_value(v, PLUGIN)]
            lines.append(" ".join([f"--{k}", *values]))
        else:
            lines.append(shlex.join([f"--{k}", *_value(v)]))
    return " \\\n  ".join(lines)


def render(experiment: str, swift_version: str, *, output_dir: str, model: str | None = None,
           datasets: list[str] | None = None, max_steps: int | None = None, overrides: dict | None = None,
           path: str | Path = RECIPES_FILE) -> dict:
    """The argv of `swift sft` for one run, and notes on every flag that differs from the article's.

    model / datasets replace the recipe's hub ids (local folder, dummy model, local files); overrides carry
    the runner's machine-specific flags (e.g. float32 on a CPU, --check_model false offline); `external_plugins:
    swiftbench` becomes the plugin file's path.
    """
    f = flags(experiment, path)
    notes = []
    f["output_dir"] = output_dir
    f["add_version"] = False  # the run folder is ours: ms-swift must not add vN-<timestamp> below it
    if model is not None and model != f["model"]:
        notes.append(f"--model {model} instead of {f['model']}")
        f["model"] = model
    if datasets is not None and datasets != f["dataset"]:
        notes.append("--dataset: local files instead of the hub datasets")
        f["dataset"] = datasets
    if max_steps:
        f["max_steps"] = int(max_steps)
        notes.append(f"--max_steps {max_steps}: a cut run")
    for k, v in (overrides or {}).items():
        if v is None:
            f.pop(k, None)
        else:
            f[k] = v
        notes.append(f"--{k} {v}: set by the runner")
    f, adapt_notes = adapt(f, swift_version, path)
    if f.get("external_plugins") is not None:
        f["external_plugins"] = _plugin_value(f["external_plugins"], str(plugin_path()))
    argv = ["swift", "sft"]
    lines = ["swift sft"]
    for k, v in f.items():
        argv += [f"--{k}", *_value(v)]
        lines.append(shlex.join([f"--{k}", *_value(v)]))
    return {"argv": argv, "flags": f, "notes": adapt_notes + notes, "shell": " \\\n  ".join(lines)}


def recipe_hash(experiment: str, path: str | Path = RECIPES_FILE) -> str:
    """Short hash of an experiment's flags: a changed recipe is a new experiment for resumption."""
    blob = json.dumps(flags(experiment, path), sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


# What makes a run one of the matrix's recipes, and the args.json names each has had (ms-swift 4.x, 2.x-3.x, 1.x):
# a run of other flags on these is another job, whatever it is called.
RECIPE_IDENTITY = {
    "model": ("model", "model_id_or_path", "model_type"),
    "tuner": ("tuner_type", "train_type", "sft_type"),
    "per_device_train_batch_size": ("per_device_train_batch_size", "batch_size"),
    "gradient_accumulation_steps": ("gradient_accumulation_steps",),
    "max_length": ("max_length",),
    "lora_rank": ("lora_rank",),
    "quant_bits": ("quant_bits", "quantization_bit"),
}


def _identity_value(args: dict, field: str):
    for name in RECIPE_IDENTITY[field]:
        value = args.get(name)
        if value is not None:
            if field == "model":
                return Path(str(value).rstrip("/")).name.lower()
            if isinstance(value, float) and value.is_integer():
                return int(value)
            return value
    return None


def recipe_mismatch(experiment: str, args: dict, path: str | Path = RECIPES_FILE) -> list[str]:
    """Why ARGS (a run's args.json) is not EXPERIMENT's recipe: one 'field: run X, recipe Y' per differing field of
    RECIPE_IDENTITY (model by basename; LoRA rank only for LoRA); [] when it is that recipe. A field the run did not
    record differs: nothing shows it ran the recipe."""
    want = flags(experiment, path)
    out = []
    for field in RECIPE_IDENTITY:
        ran, recipe = _identity_value(args, field), _identity_value(want, field)
        if field == "lora_rank" and _identity_value(want, "tuner") not in ("lora", None):
            continue
        if ran != recipe:
            out.append(f"{field}: run {'not recorded' if ran is None else ran}, recipe {recipe}")
    return out
