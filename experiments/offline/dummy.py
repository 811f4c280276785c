"""Random-weight, architecture-exact stand-ins for the benchmark model, with the real tokenizer.

No weights can be downloaded on the machines this suite runs on, but speed and memory depend on the
shapes, not on the weight values. So the stand-in has the exact config of Qwen/Qwen2.5-7B-Instruct
(read from ``data/models.yaml``), random weights, and the real Qwen2/2.5 byte-level BPE
tokenizer rebuilt from the ``qwen.tiktoken`` file that the PyPI package ``dashscope`` ships. Loss
values of such a model mean nothing for quality; everything else (step time, memory, token counts)
is what the real model gives.

ms-swift picks a model type from the basename of a local model folder. Either name the folder
``Qwen2.5-7B-Instruct`` or pass :data:`SWIFT_MODEL_ARGS` (``--model_type qwen2 --template qwen2_5``),
which works whatever the folder is called (the tiny smoke model uses these flags).

    python -m experiments.offline.dummy --out .models/Qwen2.5-7B-Instruct --device cuda
    python -m experiments.offline.dummy --out .models/tiny-qwen2 --tiny --device cpu

Stays whole: the tokenizer, the config and the weights are one offline stand-in model folder, built, hashed and checked
together by one command; apart, each part would import the others.
"""
from __future__ import annotations

import argparse
import base64
import copy
import datetime as _dt
import hashlib
import importlib.util
import json
import os
import shutil
import sys
import time
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from experiments.base import paths
from experiments.base.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import torch
    from transformers import Qwen2Config

MODEL_KEY = "Qwen2.5-7B-Instruct"
BASE_MODEL_ID = "Qwen/Qwen2.5-7B-Instruct"
MARKER = "SWIFTBENCH_DUMMY.json"
MODELS_YAML = paths.DATA / "models.yaml"
# Bump when the on-disk layout or the tokenizer recipe changes, so that old caches are rebuilt.
BUILD_FORMAT = 1
# Flags that make `swift sft` treat any folder built here as Qwen2.5 (no basename matching needed).
SWIFT_MODEL_ARGS = ("--model_type", "qwen2", "--template", "qwen2_5")

# Keys of the models.yaml entry that are shapes of the config (everything else there is metadata).
_SHAPE_KEYS = (
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "vocab_size",
    "tie_word_embeddings",
)
# The tiny smoke-test model: the real vocabulary (so the real tokenizer works), everything else small.
TINY_OVERRIDES = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_window_layers": 2,
    "torch_dtype": "float32",
}

# ---------------------------------------------------------------------------------------------
# Tokenizer
# ---------------------------------------------------------------------------------------------
# Qwen2/2.5's pre-tokenizer split (single digits, unlike tiktoken's cl100k \p{N}{1,3}).
QWEN_PRETOKENIZE_REGEX = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
# The 22 added tokens of Qwen2.5, ids 151643..151664, and whether each is "special".
QWEN_ADDED_TOKENS: tuple[tuple[str, bool], ...] = (
    ("<|endoftext|>", True),
    ("<|im_start|>", True),
    ("<|im_end|>", True),
    ("<|object_ref_start|>", True),
    ("<|object_ref_end|>", True),
    ("<|box_start|>", True),
    ("<|box_end|>", True),
    ("<|quad_start|>", True),
    ("<|quad_end|>", True),
    ("<|vision_start|>", True),
    ("<|vision_end|>", True),
    ("<|vision_pad|>", True),
    ("<|image_pad|>", True),
    ("<|video_pad|>", True),
    ("<tool_call>", False),
    ("</tool_call>", False),
    ("<|fim_prefix|>", False),
    ("<|fim_middle|>", False),
    ("<|fim_suffix|>", False),
    ("<|fim_pad|>", False),
    ("<|repo_name|>", False),
    ("<|file_sep|>", False),
)
QWEN_FIRST_ADDED_ID = 151643
# Chat template of Qwen/Qwen2.5-7B-Instruct's tokenizer_config.json, verbatim.
QWEN25_CHAT_TEMPLATE = (
    "{%- if tools %}\n    {{- '<|im_start|>system\\n' }}\n    {%- if messages[0]['role'] == 'system' %}\n"
    "        {{- messages[0]['content'] }}\n    {%- else %}\n"
    "        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}\n    {%- endif %}\n"
    "    {{- \"\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n"
    "You are provided with function signatures within <tools></tools> XML tags:\\n<tools>\" }}\n"
    "    {%- for tool in tools %}\n        {{- \"\\n\" }}\n        {{- tool | tojson }}\n    {%- endfor %}\n"
    "    {{- \"\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\\"name\\\": <function-name>, \\\"arguments\\\": "
    "<args-json-object>}\\n</tool_call><|im_end|>\\n\" }}\n"
    "{%- else %}\n    {%- if messages[0]['role'] == 'system' %}\n"
    "        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}\n    {%- else %}\n"
    "        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant."
    "<|im_end|>\\n' }}\n    {%- endif %}\n{%- endif %}\n"
    "{%- for message in messages %}\n"
    "    {%- if (message.role == \"user\") or (message.role == \"system\" and not loop.first) or "
    "(message.role == \"assistant\" and not message.tool_calls) %}\n"
    "        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}\n"
    "    {%- elif message.role == \"assistant\" %}\n        {{- '<|im_start|>' + message.role }}\n"
    "        {%- if message.content %}\n            {{- '\\n' + message.content }}\n        {%- endif %}\n"
    "        {%- for tool_call in message.tool_calls %}\n"
    "            {%- if tool_call.function is defined %}\n"
    "                {%- set tool_call = tool_call.function %}\n            {%- endif %}\n"
    "            {{- '\\n<tool_call>\\n{\"name\": \"' }}\n            {{- tool_call.name }}\n"
    "            {{- '\", \"arguments\": ' }}\n            {{- tool_call.arguments | tojson }}\n"
    "            {{- '}\\n</tool_call>' }}\n        {%- endfor %}\n        {{- '<|im_end|>\\n' }}\n"
    "    {%- elif message.role == \"tool\" %}\n"
    "        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != \"tool\") %}\n"
    "            {{- '<|im_start|>user' }}\n        {%- endif %}\n        {{- '\\n<tool_response>\\n' }}\n"
    "        {{- message.content }}\n        {{- '\\n</tool_response>' }}\n"
    "        {%- if loop.last or (messages[loop.index0 + 1].role != \"tool\") %}\n"
    "            {{- '<|im_end|>\\n' }}\n        {%- endif %}\n    {%- endif %}\n{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n    {{- '<|im_start|>assistant\\n' }}\n{%- endif %}\n"
)


def qwen_tiktoken_path() -> Path:
    """Where ``qwen.tiktoken`` is: $SWIFTBENCH_QWEN_TIKTOKEN, else inside the installed dashscope.

    dashscope is located without importing it (its import pulls in a web stack); on a host where
    it is not installed, ``pip install --no-deps dashscope`` or the environment variable suffices.
    """
    env = os.environ.get("SWIFTBENCH_QWEN_TIKTOKEN")
    if env:
        path = Path(env)
    else:
        spec = importlib.util.find_spec("dashscope")
        if spec is None or not spec.submodule_search_locations:
            raise InputError(None, "the PyPI package dashscope (which ships qwen.tiktoken) is not installed; "
                             "pip install --no-deps dashscope, or set SWIFTBENCH_QWEN_TIKTOKEN")
        path = Path(list(spec.submodule_search_locations)[0]) / "resources" / "qwen.tiktoken"
    if not path.is_file():
        raise InputError(path, "qwen.tiktoken not found")
    return path


def _load_tiktoken_ranks(path: Path) -> dict[bytes, int]:
    """Parse a .tiktoken file (one ``base64(token) rank`` per line) without needing tiktoken."""
    ranks: dict[bytes, int] = {}
    with open(path, "rb") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
            except ValueError as e:
                raise InputError(path, f"not a tiktoken rank line: {e}", line=lineno) from None
    return ranks


@lru_cache(maxsize=2)
def _qwen_tokenizer_json(tiktoken_file: str) -> str:
    """The serialized ``tokenizers`` pipeline of Qwen2.5 (cached per process; ~5 s to build)."""
    from tokenizers import (
        AddedToken,
        Regex,
        Tokenizer,
        decoders,
        normalizers,
        pre_tokenizers,
        processors,
    )
    from transformers.convert_slow_tokenizer import TikTokenConverter

    path = Path(tiktoken_file)

    class _QwenConverter(TikTokenConverter):
        # transformers' converter reads the file through tiktoken; this reads it directly.
        @staticmethod
        def load_tiktoken_bpe(tiktoken_url: str) -> dict[bytes, int]:
            return _load_tiktoken_ranks(Path(tiktoken_url))

    converter = _QwenConverter(vocab_file=str(path), pattern=QWEN_PRETOKENIZE_REGEX)
    tok: Tokenizer = converter.tokenizer()
    n_ranks = tok.get_vocab_size()
    if n_ranks != QWEN_FIRST_ADDED_ID:
        raise InputError(path, f"expected {QWEN_FIRST_ADDED_ID} BPE ranks, found {n_ranks}")
    # Qwen2.5's tokenizer.json: BPE merges applied normally (not tiktoken's whole-word lookup first).
    tok.model.ignore_merges = False
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN_PRETOKENIZE_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    # Added tokens get ids in order after the ranks; specials and non-specials are added in id order.
    for content, special in QWEN_ADDED_TOKENS:
        token = AddedToken(content, single_word=False, lstrip=False, rstrip=False, normalized=False,
                           special=special)
        (tok.add_special_tokens if special else tok.add_tokens)([token])
    for i, (content, _) in enumerate(QWEN_ADDED_TOKENS):
        if tok.token_to_id(content) != QWEN_FIRST_ADDED_ID + i:
            raise RuntimeError(f"added token {content} got id {tok.token_to_id(content)}")
    return tok.to_str()


def _qwen_tokenizer_config() -> dict[str, Any]:
    decoder = {
        str(QWEN_FIRST_ADDED_ID + i): {
            "content": content, "lstrip": False, "normalized": False, "rstrip": False,
            "single_word": False, "special": special,
        }
        for i, (content, special) in enumerate(QWEN_ADDED_TOKENS)
    }
    return {
        "add_bos_token": False,
        "add_prefix_space": False,
        "added_tokens_decoder": decoder,
        "additional_special_tokens": [c for c, s in QWEN_ADDED_TOKENS if s and c != "<|endoftext|>"],
        "bos_token": None,
        "chat_template": QWEN25_CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>",
        "errors": "replace",
        "model_max_length": 131072,
        "pad_token": "<|endoftext|>",
        "split_special_tokens": False,
        "tokenizer_class": "Qwen2Tokenizer",
        "unk_token": None,
    }


def build_qwen_tokenizer(out_dir: str | Path, tiktoken_file: str | Path | None = None) -> Path:
    """Write Qwen2/2.5's fast tokenizer (tokenizer.json + tokenizer_config.json) into ``out_dir``.

    Built from ``qwen.tiktoken`` (the same 151,643 byte-level BPE ranks as Qwen2.5) with transformers'
    ``TikTokenConverter``, Qwen2's pre-tokenizer regex, an NFC normalizer and the 22 added tokens;
    encodes "Hello world!" as [9707, 1879, 0] as Qwen2.5 does. Load it with ``AutoTokenizer``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    src = Path(tiktoken_file) if tiktoken_file is not None else qwen_tiktoken_path()
    (out / "tokenizer.json").write_text(_qwen_tokenizer_json(str(src.resolve())), encoding="utf-8")
    (out / "tokenizer_config.json").write_text(
        json.dumps(_qwen_tokenizer_config(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return out


# ---------------------------------------------------------------------------------------------
# Configs
# ---------------------------------------------------------------------------------------------
def _model_entry(key: str = MODEL_KEY, yaml_path: Path = MODELS_YAML) -> dict[str, Any]:
    import yaml

    try:
        with open(yaml_path, encoding="utf-8") as f:
            data = yaml.safe_load(f) or {}
    except OSError as e:
        raise InputError(yaml_path, f"cannot read: {e.strerror}") from None
    for name, entry in data.items():
        if str(name).lower() == key.lower():
            return entry
    raise InputError(yaml_path, f"no entry {key!r}")


def qwen25_7b_config_dict(yaml_path: Path = MODELS_YAML) -> dict[str, Any]:
    """config.json fields of Qwen2.5-7B-Instruct: shapes + ``config:`` of its models.yaml entry."""
    entry = _model_entry(MODEL_KEY, yaml_path)
    missing = [k for k in (*_SHAPE_KEYS, "architecture", "config") if k not in entry]
    if missing:
        raise InputError(yaml_path, f"{MODEL_KEY}: missing {', '.join(missing)}")
    cfg: dict[str, Any] = {"architectures": [entry["architecture"]]}
    cfg.update({k: entry[k] for k in _SHAPE_KEYS})
    cfg.update(entry["config"])
    return cfg


def generation_config_dict(yaml_path: Path = MODELS_YAML) -> dict[str, Any]:
    return dict(_model_entry(MODEL_KEY, yaml_path).get("generation_config") or {})


def _make_config(fields: dict[str, Any]) -> "Qwen2Config":
    from transformers import Qwen2Config

    fields = dict(fields)
    fields.pop("model_type", None)
    dtype = fields.pop("torch_dtype", None) or fields.pop("dtype", None)
    cfg = Qwen2Config(**fields)
    # transformers 5 stores sliding_window=None when use_sliding_window is false (no layer uses it
    # either way); keep the original value so config.json reads as Qwen's does.
    if fields.get("sliding_window") is not None and getattr(cfg, "sliding_window", None) is None:
        cfg.sliding_window = fields["sliding_window"]
    if dtype is not None:
        cfg.dtype = dtype
    return cfg


def qwen25_7b_config(**overrides: Any) -> "Qwen2Config":
    """A fresh Qwen2Config equal to Qwen/Qwen2.5-7B-Instruct's config.json (plus ``overrides``).

    Change shapes through ``overrides``, not by setting attributes afterwards: transformers derives
    fields such as ``layer_types`` from them at construction.
    """
    fields = qwen25_7b_config_dict()
    fields.update(overrides)
    return _make_config(fields)


def tiny_qwen2_config() -> "Qwen2Config":
    """Qwen2-shaped config small enough for CPU smoke tests, with the real 152,064-token vocabulary."""
    return qwen25_7b_config(**TINY_OVERRIDES)


def __getattr__(name: str):  # lazy module constant: importing this module must not import transformers
    if name == "QWEN25_7B_CONFIG":
        return _cached_7b_config()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@lru_cache(maxsize=1)
def _cached_7b_config() -> "Qwen2Config":
    return qwen25_7b_config()


def count_parameters(config: "Qwen2Config") -> int:
    """Parameters of a Qwen2ForCausalLM with this config, computed on the meta device (no memory)."""
    import torch
    from transformers import Qwen2ForCausalLM

    with torch.device("meta"):
        model = Qwen2ForCausalLM(copy.deepcopy(config))
    return sum(p.numel() for p in model.parameters())


def _dtype_name(dtype: Any) -> str:
    import torch

    if isinstance(dtype, torch.dtype):
        return str(dtype).removeprefix("torch.")
    return str(dtype)


def config_sha256(config: "Qwen2Config", dtype: Any = None) -> str:
    """Hash of the config (and the weights' dtype) that identifies a cached build."""
    d = config.to_dict()
    for k in ("transformers_version", "dtype", "torch_dtype", "_name_or_path"):
        d.pop(k, None)
    d["_weights_dtype"] = _dtype_name(dtype if dtype is not None else (config.dtype or "float32"))
    d["_build_format"] = BUILD_FORMAT
    blob = json.dumps(d, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


# ---------------------------------------------------------------------------------------------
# Model
# ---------------------------------------------------------------------------------------------
def read_marker(model_dir: str | Path) -> dict[str, Any] | None:
    path = Path(model_dir) / MARKER
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputError(path, f"unreadable marker: {e}") from None
    if not isinstance(data, dict):
        raise InputError(path, "marker is not a JSON object")
    return data


def is_dummy(model_dir: str | Path) -> bool:
    """True when ``model_dir`` holds a random-weight stand-in built by this module."""
    marker = read_marker(model_dir)
    return bool(marker and marker.get("dummy_weights") is True)


def _is_complete(model_dir: Path, sha: str) -> bool:
    try:
        marker = read_marker(model_dir)
    except InputError:
        return False
    if not marker or marker.get("config_sha256") != sha:
        return False
    files = marker.get("files") or {}
    if not files:
        return False
    for name, size in files.items():
        p = model_dir / name
        if not p.is_file() or p.stat().st_size != size:
            return False
    return True


def _resolve_dtype(dtype: Any, config: "Qwen2Config") -> "torch.dtype":
    import torch

    if dtype is None:
        dtype = config.dtype or "float32"
    if isinstance(dtype, torch.dtype):
        return dtype
    name = str(dtype).removeprefix("torch.")
    aliases = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32", "float": "float32"}
    resolved = getattr(torch, aliases.get(name, name), None)
    if not isinstance(resolved, torch.dtype):
        raise InputError(None, f"unknown dtype {dtype!r}")
    return resolved


def build_dummy_model(
    config: "Qwen2Config",
    out_dir: str | Path,
    device: str = "cuda",
    dtype: Any = None,
    *,
    seed: int = 0,
    max_shard_size: str = "4GB",
    force: bool = False,
) -> Path:
    """Random-init a Qwen2ForCausalLM directly on ``device`` and save it as a loadable model folder.

    ``out_dir`` gets safetensors shards, config.json, generation_config.json, the Qwen2.5 tokenizer
    and the marker ``SWIFTBENCH_DUMMY.json``. If ``out_dir`` already holds a complete build with the
    same config hash, it is reused as is. The build goes into a sibling temp folder that is renamed
    at the end, so an interrupted build never leaves a half-written ``out_dir``.
    A non-empty ``out_dir`` without our marker (a real model?) is never overwritten.
    Stays whole: one ordered build (weights, configs, tokenizer, marker, rename) whose order is what makes a folder
    complete.
    """
    import torch
    from transformers import GenerationConfig, Qwen2ForCausalLM

    out = Path(out_dir).absolute()
    config = copy.deepcopy(config)
    torch_dtype = _resolve_dtype(dtype, config)
    config.dtype = torch_dtype
    sha = config_sha256(config, torch_dtype)
    if not force and _is_complete(out, sha):
        return out
    if out.exists() and any(out.iterdir()) and read_marker(out) is None:
        raise InputError(out, "exists and is not a swiftbench dummy model; refusing to overwrite it")

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.building-{os.getpid()}"
    old = out.parent / f".{out.name}.old-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    t0 = time.perf_counter()
    try:
        tmp.mkdir()
        torch.manual_seed(seed)
        prev_default = torch.get_default_dtype()
        try:
            # Floating default dtype so parameters are created in the target dtype, on the device,
            # without a float32 copy on the host first.
            torch.set_default_dtype(torch_dtype)
            with torch.device(device):
                model = Qwen2ForCausalLM(config)
        finally:
            torch.set_default_dtype(prev_default)
        model.eval()
        t_init = time.perf_counter() - t0
        gen = generation_config_dict()
        model.generation_config = GenerationConfig(**gen) if gen else model.generation_config
        model.save_pretrained(tmp, max_shard_size=max_shard_size)
        del model
        if device != "cpu" and torch.cuda.is_available():
            torch.cuda.empty_cache()
        build_qwen_tokenizer(tmp)
        files = {p.name: p.stat().st_size for p in sorted(tmp.iterdir()) if p.is_file()}
        marker = {
            "dummy_weights": True,
            "base": BASE_MODEL_ID,
            "seed": seed,
            "config_sha256": sha,
            "dtype": _dtype_name(torch_dtype),
            "device": str(device),
            "num_parameters": count_parameters(config),
            "init_seconds": round(t_init, 3),
            "build_seconds": round(time.perf_counter() - t0, 3),
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "note": "random weights with the real config and tokenizer: losses are meaningless, "
                    "speed and memory are the real model's",
            "files": files,
        }
        (tmp / MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
        if out.exists():
            shutil.rmtree(old, ignore_errors=True)
            os.replace(out, old)
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if old.exists() and not out.exists():  # interrupted between the two renames: put it back
            os.replace(old, out)
        shutil.rmtree(old, ignore_errors=True)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.offline.dummy", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="model folder to write (name it Qwen2.5-7B-Instruct, or "
                   "pass --model_type qwen2 --template qwen2_5 to swift)")
    p.add_argument("--tiny", action="store_true", help="tiny Qwen2-shaped model for CPU smoke tests")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available)")
    p.add_argument("--dtype", default=None, help="weights dtype (default: the config's: bf16, tiny fp32)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--force", action="store_true", help="rebuild even if a matching build exists")
    p.add_argument("--tokenizer-only", action="store_true", help="write only the tokenizer into --out")
    a = p.parse_args(argv)
    try:
        if a.tokenizer_only:
            print(build_qwen_tokenizer(a.out))
            return 0
        import torch

        device = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
        cfg = tiny_qwen2_config() if a.tiny else qwen25_7b_config()
        t0 = time.perf_counter()
        out = build_dummy_model(cfg, a.out, device=device, dtype=a.dtype, seed=a.seed, force=a.force)
        marker = read_marker(out) or {}
        print(json.dumps({"out": str(out), "seconds": round(time.perf_counter() - t0, 2),
                          **{k: marker.get(k) for k in ("dtype", "num_parameters", "config_sha256",
                                                        "build_seconds")}}))
        return 0
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
