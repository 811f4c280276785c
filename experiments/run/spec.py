"""What one run is asked to do (RunSpec) and everything that decides whether an earlier run already did it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from experiments.base import runfiles
from experiments.base.errors import InputError
from experiments.base.runfolder import RunKey
from experiments.launch import quick_stop
from experiments.recipes import catalog, recipes

ROOT = Path(__file__).resolve().parents[2]


NOTEBOOK = Path(__file__).resolve().parent / runfiles.NOTEBOOK


CACHE = ROOT / ".cache"


DUMMY = "dummy"          # the architecture-exact random-weight stand-in of the recipe's model


DUMMY_TINY = "dummy:tiny"  # a tiny Qwen2-shaped model for CPU smoke tests


PARALLEL = ("ddp", "zero2", "zero3")  # how a multi-GPU run shares its work (zero*: ms-swift's DeepSpeed configs)


OOM_PATTERNS = ("CUDA out of memory", "OutOfMemoryError", "torch.OutOfMemoryError", "CUBLAS_STATUS_ALLOC_FAILED")


@dataclass
class RunSpec:
    """What one run is asked to do; everything that decides whether an earlier run already did it."""

    hw: str
    experiment: str
    model: str = "Qwen/Qwen2.5-7B-Instruct"
    data: str | None = None          # folder of local data files standing in for the hub datasets
    max_steps: int | None = None     # a cut run when set
    results_dir: str = "results"
    force_hw: bool = False
    timeout_s: float | None = None
    overrides: dict = field(default_factory=dict)  # extra swift flags (claims experiments, CPU dtype)
    recipe: str | None = None        # recipes.yaml experiment the flags start from (None: `experiment` itself)
    launcher: dict | None = None     # run through experiments/launch/launcher.py with these options (None: `swift sft`)
    gpus: int = 1                    # data-parallel processes on this host (NPROC_PER_NODE); global batch kept
    parallel: str = "ddp"            # ddp | zero2 | zero3 (ms-swift's shipped DeepSpeed configs)
    budget_s: float | None = None    # a quick run within this many seconds (experiments/launch/quick_stop.py)
    env: dict = field(default_factory=dict)  # the command's environment (a claims experiment's `env`)
    repeat: bool = False             # run again even where a complete run of the same key exists (not in the key)
    plain: bool = False              # a matrix run as the printed command alone: `bash command.sh`, no launcher
    profile: bool = False            # a matrix run that also profiles (recipes.yaml `profile`); its epoch holds it
    round: dict | None = None        # its place in an interleaved set (runner --repeats): set, round, of, slot

    def _resolve(self):
        """A claims experiment (experiments/recipes/claims/) brings its recipe, overrides, launcher, steps and limit;
        what the caller gave explicitly wins (a CLI --max-steps, --set FLAG=VALUE, --timeout)."""
        if not isinstance(self.gpus, int) or self.gpus < 1:
            raise InputError(None, f"--gpus wants a whole number of GPUs >= 1, got {self.gpus!r}")
        if self.parallel not in PARALLEL:
            raise InputError(None, f"--parallel {self.parallel!r}: use one of {', '.join(PARALLEL)}")
        if self.recipe is not None:
            return
        if self.experiment in recipes.load()["experiments"]:  # a matrix run: measured through the launcher
            if self.plain and (self.profile or self.launcher):
                raise InputError(None, f"{self.experiment}: a plain run has no launcher, so no profile or cap")
            if self.launcher is None and not self.plain:
                self.launcher = recipes.launcher(self.experiment)
                if self.profile:
                    self.launcher.update(recipes.profile_options())
            return
        definition = catalog.experiment(self.experiment)
        if definition is None:
            return
        self.recipe = definition["recipe"]
        self.overrides = {**(definition.get("overrides") or {}), **(self.overrides or {})}
        if self.launcher is None:
            self.launcher = dict(definition.get("launcher") or {})
        self.env = {**{k: str(v) for k, v in (definition.get("env") or {}).items()}, **(self.env or {})}
        self.max_steps = self.max_steps or definition.get("max_steps")
        self.timeout_s = self.timeout_s or definition.get("timeout_s")

    def __post_init__(self):
        """The experiment's definition (above), then a quick run's launcher options and logging on top of it."""
        self._resolve()
        quick_stop.apply(self)

    @property
    def recipe_name(self) -> str:
        return self.recipe or self.experiment

    @property
    def layout(self) -> str:
        """'' for one GPU with plain DDP (every run made before multi-GPU support), else e.g. '2gpu' or
        '2gpu-zero3': part of the run folder's name and of the tables' grouping."""
        if self.gpus == 1 and self.parallel == "ddp":
            return ""
        return f"{self.gpus}gpu" + ("" if self.parallel == "ddp" else f"-{self.parallel}")

    def key(self) -> dict:
        """Two runs with equal keys measure the same thing: the second is skipped."""
        key = {RunKey.EXPERIMENT: self.experiment, RunKey.RECIPE: recipes.recipe_hash(self.recipe_name),
               RunKey.MODEL: self.model, RunKey.DATA: "local" if self.data else "hub",
               RunKey.MAX_STEPS: self.max_steps or None, RunKey.OVERRIDES: self.overrides or {}}
        if self.recipe is not None:
            key[RunKey.RECIPE_NAME] = self.recipe
        if self.launcher is not None:
            key[RunKey.LAUNCHER] = self.launcher
        if self.env:  # absent without one, so earlier runs keep their keys
            key[RunKey.ENV] = self.env
        if self.layout:  # absent for one GPU, so runs made before multi-GPU support keep their keys
            key[RunKey.GPUS], key[RunKey.PARALLEL] = self.gpus, self.parallel
        return key
