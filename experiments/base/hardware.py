"""The hardware table (data/hardware.yaml) and model shapes (config.json or models.yaml).

Specs are data, not code: adding a GPU class is one YAML entry. Each entry is read once into a frozen GpuClass
(table()); its fields are what the suite reads of a class, checked for type as the file is read (a missing field, a
string where a number belongs, an unknown field: bad input naming the file and the field, one line, exit 2).
"""
from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import yaml

from experiments.base import paths, runfiles, runschema, userfiles
from experiments.base.errors import InputError

DATA = paths.DATA
HARDWARE_FILE = DATA / "hardware.yaml"
MODELS_FILE = DATA / "models.yaml"
SHAPE_KEYS = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
              "num_key_value_heads", "vocab_size")


@dataclass(frozen=True)
class GpuClass:
    """One class of data/hardware.yaml (its header says what each field means). The figures are None for a class
    without them (`cpu`); `key` is the entry's name in the file."""

    key: str
    name: str
    memory_gb: float | None              # marketing capacity, 10^9 bytes
    bandwidth_gbs: float | None          # memory bandwidth, GB/s
    bf16_dense_tflops: float | None      # dense BF16 tensor-core peak
    nvml_names: tuple[str, ...]          # regular expressions of nvmlDeviceGetName()
    sky_accelerator: str | None          # SkyPilot's request for one such GPU
    source: str                          # where the figures come from
    memory_gib: float | None = None      # the usable pool torch/NVML report, where it differs from memory_gb
    arch: str | None = None
    memory_type: str | None = None
    board_power_w: float | None = None
    board_power_source: str | None = None
    aliases: tuple[str, ...] = ()
    shown: bool = False
    baseline: bool = False

    @property
    def peak_tflops(self) -> float:
        """bf16_dense_tflops of a class that has one (what a time model divides by); bad input for one without."""
        return self._figure("bf16_dense_tflops", self.bf16_dense_tflops)

    @property
    def peak_gbs(self) -> float:
        """bandwidth_gbs of a class that has one; bad input for one without."""
        return self._figure("bandwidth_gbs", self.bandwidth_gbs)

    @property
    def capacity_gb(self) -> float:
        """memory_gb of a class that has one; bad input for one without."""
        return self._figure("memory_gb", self.memory_gb)

    def _figure(self, name: str, value: float | None) -> float:
        if value is None:
            raise InputError(HARDWARE_FILE, f"hardware entry {self.key!r} has no {name!r}")
        return value


_REQUIRED = ("name", "memory_gb", "bandwidth_gbs", "bf16_dense_tflops", "nvml_names", "sky_accelerator", "source")
_NUMBERS = ("memory_gb", "bandwidth_gbs", "bf16_dense_tflops", "memory_gib", "board_power_w")
_NAMES = ("nvml_names", "aliases")
_FLAGS = ("shown", "baseline")
_FIELDS = {f.name for f in dataclasses.fields(GpuClass)} - {"key"}


def _gpu_class(path: str | Path, key: Any, entry: Any) -> GpuClass:
    """ENTRY of hardware.yaml as a GpuClass; bad input naming the entry and field when it is none."""
    if not isinstance(entry, dict):
        raise InputError(path, f"hardware entry {key!r} is not a mapping of fields")
    for name in _REQUIRED:
        if name not in entry:
            raise InputError(path, f"hardware entry {key!r} lacks {name!r}")
    unknown = sorted(set(entry) - _FIELDS, key=str)
    if unknown:
        raise InputError(path, f"hardware entry {key!r}: unknown field {unknown[0]!r} "
                               f"(known: {', '.join(sorted(_FIELDS))})")
    out: dict[str, Any] = dict(entry)
    for name, value in entry.items():
        if name in _NUMBERS:
            ok = value is None or isinstance(value, (int, float)) and not isinstance(value, bool)
            want = "a number or null"
        elif name in _NAMES:
            ok = isinstance(value, list) and all(isinstance(v, str) for v in value) or value is None
            want = "a list of strings"
            out[name] = tuple(value or ())
        elif name in _FLAGS:
            ok, want = isinstance(value, bool), "true or false"
        else:
            ok = value is None and name not in ("name", "source") or isinstance(value, str)
            want = "a string" if name in ("name", "source") else "a string or null"
        if not ok:
            raise InputError(path, f"hardware entry {key!r}: {name!r} is {runschema.describe_value(value)}, not {want}")
    return GpuClass(key=str(key), **out)


@functools.lru_cache(maxsize=None)
def table(path: str | Path = HARDWARE_FILE) -> dict[str, GpuClass]:
    """All GPU classes by key (a10, rtx4090, a100, a100-80gb, h100, h200, ...), read once."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise InputError(path, "not a mapping of hardware classes")
    classes = {str(key): _gpu_class(path, key, entry) for key, entry in data.items()}
    baselines = [k for k, spec in classes.items() if spec.baseline]
    if len(baselines) != 1:
        raise InputError(path, f"one class must be the speed-ups' `baseline: true`, not {len(baselines)}")
    seen: dict[str, str] = {}
    for key, spec in classes.items():
        for name in {key, spec.name, *spec.aliases}:
            other = seen.setdefault(_plain(name), key)
            if other != key:
                raise InputError(path, f"hardware name {name!r} of {key!r} is also a name of {other!r}")
    return classes


def baseline() -> str:
    """The class speed-ups are relative to unless asked otherwise (hardware.yaml's `baseline: true`)."""
    return next(k for k, spec in table().items() if spec.baseline)


def board_power() -> dict[str, float]:
    """Each class's board power limit in W where hardware.yaml gives one (`board_power_w`), in the file's order."""
    return {k: spec.board_power_w for k, spec in table().items() if spec.board_power_w}


def shown() -> list[str]:
    """The classes the answer, the tables and the report give a row each (hardware.yaml's `shown: true`), in the
    file's order."""
    return [k for k, spec in table().items() if spec.shown]


def _plain(name: str) -> str:
    """A GPU name as people write it, compared: lower case, no spaces, '-' or '_', no leading NVIDIA / GeForce."""
    text = re.sub(r"[\s_-]+", "", str(name).lower())
    return re.sub(r"^(nvidia)?(geforce)?", "", text)


def resolve(name: str) -> str | None:
    """The class key of a name a user gives ("4090", "RTX 4090", "H100 SXM", "h200"): its key, its name or one of
    its aliases (hardware.yaml), compared as _plain does; None when no class has that name."""
    if name in table():
        return name
    want = _plain(name)
    for key, spec in table().items():
        if want in {_plain(n) for n in (key, spec.name, *spec.aliases)}:
            return key
    return None


def get(key: str) -> GpuClass | None:
    return table().get(key)


def require(key: str) -> GpuClass:
    """The spec of KEY, or bad input naming the known keys."""
    spec = get(key)
    if spec is None:
        raise InputError(HARDWARE_FILE, f"unknown hardware {key!r} (known: {', '.join(table())})")
    return spec


def user_key(name: str) -> str:
    """The class key of a hardware name given on a command line (`H200`, `h200`, `RTX 4090`): one rule for every
    command (resolve's: any case, a name or an alias); bad input naming the known keys when no class has it."""
    key = resolve(str(name))
    if key is None:
        raise InputError(HARDWARE_FILE, f"unknown hardware {name!r} (known: {', '.join(table())}; or a name or alias "
                                        "of one)")
    return key


def match_nvml(gpu_name: str) -> str | None:
    """The hardware key whose nvml_names pattern matches an NVML device name ("NVIDIA A10G", "NVIDIA H100 PCIe"),
    else None. The patterns are exclusive, so the first match is the only one."""
    for key, spec in table().items():
        if any(re.search(p, gpu_name) for p in spec.nvml_names):
            return key
    return None


# --------------------------------------------------------------------------------------- model shapes


@functools.lru_cache(maxsize=None)
def known_models() -> dict[str, dict]:
    return yaml.safe_load(MODELS_FILE.read_text(encoding="utf-8"))


# the shape fields of a config.json and the most each can plausibly be (a model far beyond any trained today)
SHAPE_LIMITS = {"hidden_size": 10**6, "intermediate_size": 10**7, "num_hidden_layers": 10**4,
                "num_attention_heads": 10**5, "num_key_value_heads": 10**5, "head_dim": 10**5, "vocab_size": 10**8}


def config_problem(config: dict) -> str | None:
    """What makes a config.json's shapes no model's (a size that is not a positive whole number within
    SHAPE_LIMITS, attention heads that do not divide the hidden size where no head_dim is given, key-value heads that
    do not divide the attention heads), else None. A missing field is shapes_from_config's to say."""
    cfg = config.get("text_config") or config.get("llm_config") or config
    if not isinstance(cfg, dict):
        return "its text config is not an object"
    for key, most in SHAPE_LIMITS.items():
        value = cfg.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
            return f"{key} is {runschema.describe_value(value)}: a model's {key} is a whole number from 1 to {most:,}"
    moe = moe_problem(cfg)
    if moe:
        return moe
    heads, hidden, kv = cfg.get("num_attention_heads"), cfg.get("hidden_size"), cfg.get("num_key_value_heads")
    if heads and hidden and cfg.get("head_dim") is None and hidden % heads:
        return f"num_attention_heads {heads} does not divide hidden_size {hidden} (and no head_dim is given)"
    if heads and kv and heads % kv:
        return f"num_key_value_heads {kv} does not divide num_attention_heads {heads}"
    return None


EXPERT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts")  # Mixtral; Qwen MoE; DeepSeek


def moe_problem(cfg: dict) -> str | None:
    """A mixture-of-experts config (more than one expert per layer), in words: the shapes below are a dense
    model's (one MLP of intermediate_size per layer), so such a model would be planned with a fraction of its
    weights (Mixtral-8x7B's 46.7 B parameters as 7 B). None for a dense config."""
    for key in EXPERT_KEYS:
        n = cfg.get(key)
        if isinstance(n, int) and not isinstance(n, bool) and n > 1:
            per = cfg.get("num_experts_per_tok")
            active = f", {per} per token" if isinstance(per, int) and not isinstance(per, bool) else ""
            return (f"a mixture-of-experts model ({n} experts{active}): the planner models dense models "
                    "only, and would count one expert's weights and FLOPs")
    return None


class ModelShapes(TypedDict, total=False):
    """A decoder model's shapes (a config.json's fields of those names) and its name where it was looked up."""

    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    vocab_size: int
    head_dim: int
    tie_word_embeddings: bool
    name: str


def shapes_from_config(config: dict) -> ModelShapes | None:
    """The shape fields of a Hugging Face config.json (text config of multimodal models too)."""
    cfg = config.get("text_config") or config.get("llm_config") or config
    if not all(k in cfg for k in ("hidden_size", "intermediate_size", "num_hidden_layers",
                                  "num_attention_heads", "vocab_size")):
        return None
    return ModelShapes(hidden_size=cfg["hidden_size"], intermediate_size=cfg["intermediate_size"],
                       num_hidden_layers=cfg["num_hidden_layers"], num_attention_heads=cfg["num_attention_heads"],
                       num_key_value_heads=cfg.get("num_key_value_heads") or cfg["num_attention_heads"],
                       vocab_size=cfg["vocab_size"],
                       head_dim=cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"],
                       tie_word_embeddings=bool(config.get("tie_word_embeddings",
                                                           cfg.get("tie_word_embeddings", False))))


def lookup_model(name: str) -> ModelShapes | None:
    """Shapes of a known model by id or path basename (case-insensitive; its key or one of its aliases), else None."""
    base = Path(str(name).rstrip("/")).name.lower()
    for key, entry in known_models().items():
        if base in {n.lower() for n in (key, *(entry.get("aliases") or []))}:
            shapes = shapes_from_config(entry)
            if shapes is not None:
                shapes["name"] = key
            return shapes
    return None


def model_shapes(args: dict, run_dir: Path | None = None) -> ModelShapes | None:
    """Model shapes for a run: the runner's copy of config.json, the model folder's, or the known table."""
    candidates: list[Path] = []
    if run_dir is not None:
        candidates.append(Path(run_dir) / runfiles.MODEL_CONFIG)
    for key in ("model_dir", "model", "model_id_or_path"):
        if isinstance(args.get(key), str):
            candidates.append(Path(args[key]) / "config.json")
    for path in candidates:
        try:
            if path.is_file():
                config = userfiles.read_json(path)
                shapes = shapes_from_config(config) if isinstance(config, dict) and not config_problem(config) \
                    else None
                if shapes is not None:
                    return shapes
        except (OSError, InputError):  # a broken config: the next candidate (MFU and memory then go without)
            continue
    for key in ("model", "model_id_or_path", "model_dir"):
        if isinstance(args.get(key), str):
            shapes = lookup_model(args[key])
            if shapes is not None:
                return shapes
    return None


def linear_shapes(s: ModelShapes) -> dict[str, tuple[int, int]]:
    """(in, out) of every linear layer of one decoder block (Llama/Qwen2 family), by its Hugging Face name."""
    h, i = s["hidden_size"], s["intermediate_size"]
    q = s["num_attention_heads"] * s["head_dim"]
    kv = s["num_key_value_heads"] * s["head_dim"]
    return {"q_proj": (h, q), "k_proj": (h, kv), "v_proj": (h, kv), "o_proj": (q, h), "gate_proj": (h, i),
            "up_proj": (h, i), "down_proj": (i, h)}



def matmul_params(s: ModelShapes) -> int:
    """Weights that take part in matrix multiplies: all decoder linears plus lm_head (embeddings excluded)."""
    per_layer = sum(a * b for a, b in linear_shapes(s).values())
    return per_layer * s["num_hidden_layers"] + s["hidden_size"] * s["vocab_size"]


def lora_params(s: ModelShapes, args: dict) -> int | None:
    """Trainable LoRA parameters r x (in + out) per targeted linear; only 'all-linear' is modelled."""
    rank = args.get("lora_rank")
    targets = args.get("target_modules")
    if isinstance(targets, list) and len(targets) == 1:
        targets = targets[0]
    if not isinstance(rank, int) or targets != "all-linear":
        return None
    return rank * sum(a + b for a, b in linear_shapes(s).values()) * s["num_hidden_layers"]


def total_params(s: ModelShapes) -> int:
    """All parameters with biases of q/k/v and RMSNorm weights (Qwen2 layout)."""
    h, kv = s["hidden_size"], s["num_key_value_heads"] * s["head_dim"]
    q = s["num_attention_heads"] * s["head_dim"]
    per_layer = sum(a * b for a, b in linear_shapes(s).values()) + (q + 2 * kv) + 2 * h
    embed = s["hidden_size"] * s["vocab_size"]
    return per_layer * s["num_hidden_layers"] + embed * (1 if s["tie_word_embeddings"] else 2) + h


def describe(key: str) -> str:
    spec = require(key)
    return f"{spec.name} ({spec.memory_gb} GB, {spec.bf16_dense_tflops} TFLOPS bf16 dense)"


DEFAULT_BASELINE = baseline()  # read once: argument defaults name it
