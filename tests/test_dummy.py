"""experiments/offline/dummy.py: the Qwen2.5 tokenizer rebuilt from qwen.tiktoken, configs from models.yaml,
random-weight model folders with a marker and a cache."""
from __future__ import annotations

import importlib.util
import json
import os
import time
from pathlib import Path

import pytest
import yaml

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from experiments.base.errors import InputError  # noqa: E402
from experiments.offline import dummy  # noqa: E402

needs_dashscope = pytest.mark.skipif(
    importlib.util.find_spec("dashscope") is None and not os.environ.get("SWIFTBENCH_QWEN_TIKTOKEN"),
    reason="needs qwen.tiktoken from the PyPI package dashscope",
)


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    return dummy.build_qwen_tokenizer(tmp_path_factory.mktemp("tok"))


@pytest.fixture(scope="module")
def tokenizer(tokenizer_dir):
    return transformers.AutoTokenizer.from_pretrained(tokenizer_dir)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("models") / "tiny-qwen2"
    dummy.build_dummy_model(dummy.tiny_qwen2_config(), out, device="cpu")
    return out


# --- tokenizer ---------------------------------------------------------------------------------
@needs_dashscope
def test_hello_world_ids(tokenizer):
    assert tokenizer.encode("Hello world!") == [9707, 1879, 0]


@needs_dashscope
def test_chinese_and_special_tokens_round_trip(tokenizer):
    text = "你好，世界！这是一个测试：大语言模型的微调。"
    ids = tokenizer.encode(text)
    assert tokenizer.decode(ids) == text
    assert len(ids) < len(text)  # real BPE merges, not one token per byte
    assert tokenizer.encode("<|im_start|>") == [151644]
    chat = "<|im_start|>user\n你好<|im_end|>\n"
    ids = tokenizer.encode(chat)
    assert ids[0] == 151644 and 151645 in ids
    assert tokenizer.decode(ids) == chat


@needs_dashscope
def test_added_tokens_and_special_ids(tokenizer):
    assert len(tokenizer) == 151665
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.eos_token_id == 151645
    assert tokenizer.pad_token == "<|endoftext|>" and tokenizer.pad_token_id == 151643
    assert tokenizer.bos_token is None
    assert tokenizer.convert_tokens_to_ids("<|file_sep|>") == 151664
    assert tokenizer.convert_tokens_to_ids("<tool_call>") == 151657
    # every id the vocabulary can produce decodes without error
    assert isinstance(tokenizer.decode([0, 151642, 151643, 151664]), str)


@needs_dashscope
def test_chat_template_is_qwen25(tokenizer):
    text = tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False,
                                         add_generation_prompt=True)
    assert text == ("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant."
                    "<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")


@needs_dashscope
def test_tokenizer_files(tokenizer_dir):
    cfg = json.loads((Path(tokenizer_dir) / "tokenizer_config.json").read_text())
    assert cfg["eos_token"] == "<|im_end|>" and cfg["pad_token"] == "<|endoftext|>"
    assert "<|im_start|>" in cfg["chat_template"]
    tok = json.loads((Path(tokenizer_dir) / "tokenizer.json").read_text())
    assert tok["normalizer"]["type"] == "NFC"
    assert [t["id"] for t in tok["added_tokens"]] == list(range(151643, 151665))


def test_bad_tiktoken_file_is_input_error(tmp_path):
    bad = tmp_path / "bad.tiktoken"
    bad.write_text("IQ== 0\nnot-a-line\n")
    with pytest.raises(InputError) as e:
        dummy._load_tiktoken_ranks(bad)
    assert e.value.line == 2


# --- configs ---------------------------------------------------------------------------------
def test_7b_config_from_yaml_has_exact_parameter_count():
    cfg = dummy.QWEN25_7B_CONFIG
    entry = yaml.safe_load(dummy.MODELS_YAML.read_text())["Qwen2.5-7B-Instruct"]
    assert cfg.hidden_size == entry["hidden_size"] == 3584
    assert cfg.num_key_value_heads == 4 and cfg.vocab_size == 152064
    assert cfg.rms_norm_eps == 1e-6 and cfg.max_position_embeddings == 32768
    assert cfg.sliding_window == 131072 and cfg.max_window_layers == 28
    assert cfg.bos_token_id == 151643 and cfg.eos_token_id == 151645
    assert cfg.tie_word_embeddings is False
    assert str(cfg.dtype).removeprefix("torch.") == "bfloat16"
    assert dummy.count_parameters(cfg) == 7_615_616_512 == entry["total_params"]


def test_7b_lora_r8_all_linear_trainable_count():
    cfg = dummy.QWEN25_7B_CONFIG
    h, i = cfg.hidden_size, cfg.intermediate_size
    kv = cfg.num_key_value_heads * (cfg.hidden_size // cfg.num_attention_heads)
    pairs = [(h, h), (h, kv), (h, kv), (h, h), (h, i), (h, i), (i, h)]  # q k v o gate up down
    assert cfg.num_hidden_layers * sum(8 * (a + b) for a, b in pairs) == 20_185_088


def test_tiny_config():
    cfg = dummy.tiny_qwen2_config()
    assert (cfg.hidden_size, cfg.num_hidden_layers, cfg.num_attention_heads, cfg.num_key_value_heads) == (64, 2, 4, 2)
    assert cfg.vocab_size == 152064  # real vocabulary: every tokenizer id is valid
    assert str(cfg.dtype).removeprefix("torch.") == "float32"


def test_config_hash_depends_on_shapes_and_dtype():
    a = dummy.tiny_qwen2_config()
    b = dummy.tiny_qwen2_config()
    assert dummy.config_sha256(a) == dummy.config_sha256(b)
    b.hidden_size = 128
    assert dummy.config_sha256(a) != dummy.config_sha256(b)
    assert dummy.config_sha256(a, torch.float32) != dummy.config_sha256(a, torch.bfloat16)


# --- model folders ---------------------------------------------------------------------------
@needs_dashscope
def test_tiny_model_builds_with_marker(tiny_dir):
    names = {p.name for p in tiny_dir.iterdir()}
    assert {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
            dummy.MARKER} <= names
    assert any(n.endswith(".safetensors") for n in names)
    assert dummy.is_dummy(tiny_dir)
    marker = json.loads((tiny_dir / dummy.MARKER).read_text())
    assert marker["dummy_weights"] is True
    assert marker["base"] == "Qwen/Qwen2.5-7B-Instruct"
    assert marker["config_sha256"] == dummy.config_sha256(dummy.tiny_qwen2_config(), torch.float32)
    assert isinstance(marker["seed"], int)
    # no temp folders left beside it
    assert [p.name for p in tiny_dir.parent.iterdir()] == ["tiny-qwen2"]


@needs_dashscope
def test_tiny_model_loads_and_runs_on_every_token_id(tiny_dir):
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny_dir, dtype=torch.float32)
    tok = transformers.AutoTokenizer.from_pretrained(tiny_dir)
    ids = torch.tensor([tok.encode("Hello world! 你好") + [151643, 151644, 151645, 151664]])
    with torch.no_grad():
        out = model(input_ids=ids)
    assert out.logits.shape == (1, ids.shape[1], 152064)
    gen = json.loads((tiny_dir / "generation_config.json").read_text())
    assert gen["eos_token_id"] == [151645, 151643]


@needs_dashscope
def test_second_build_reuses_cache(tiny_dir):
    weights = sorted(tiny_dir.glob("*.safetensors"))
    before = {p: p.stat().st_mtime_ns for p in weights}
    t0 = time.perf_counter()
    out = dummy.build_dummy_model(dummy.tiny_qwen2_config(), tiny_dir, device="cpu")
    assert time.perf_counter() - t0 < 5
    assert out == tiny_dir.absolute()
    assert {p: p.stat().st_mtime_ns for p in weights} == before


@needs_dashscope
def test_incomplete_cache_is_rebuilt(tmp_path):
    out = tmp_path / "m"
    dummy.build_dummy_model(dummy.tiny_qwen2_config(), out, device="cpu")
    (out / "tokenizer.json").unlink()  # damaged cache
    dummy.build_dummy_model(dummy.tiny_qwen2_config(), out, device="cpu")
    assert (out / "tokenizer.json").is_file() and dummy.is_dummy(out)


def test_interrupted_build_leaves_nothing(tmp_path, monkeypatch):
    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(dummy, "build_qwen_tokenizer", boom)
    out = tmp_path / "m"
    with pytest.raises(KeyboardInterrupt):
        dummy.build_dummy_model(dummy.tiny_qwen2_config(), out, device="cpu")
    assert list(tmp_path.iterdir()) == []


def test_refuses_to_overwrite_a_real_model(tmp_path):
    real = tmp_path / "Qwen2.5-7B-Instruct"
    real.mkdir()
    (real / "config.json").write_text("{}")
    with pytest.raises(InputError):
        dummy.build_dummy_model(dummy.tiny_qwen2_config(), real, device="cpu")
    assert (real / "config.json").read_text() == "{}"


def test_is_dummy_without_marker(tmp_path):
    assert dummy.is_dummy(tmp_path) is False
    (tmp_path / dummy.MARKER).write_text('{"dummy_weights": false}')
    assert dummy.is_dummy(tmp_path) is False
    (tmp_path / dummy.MARKER).write_text("{not json")
    with pytest.raises(InputError):
        dummy.is_dummy(tmp_path)
