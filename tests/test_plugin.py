"""experiments/recipes/swift_plugin.py, the file a copied recipe passes with --external_plugins: what importing it does
and what each of its callbacks does, on ms-swift's own classes (the real template, the real fused AdamW)."""
import importlib.util
import json
import os
from types import SimpleNamespace

import pytest

from experiments.recipes import recipes
from experiments.run import prepare as run_prepare
from experiments.run import spec as run_spec


def _plugin():
    """The plugin imported as ms-swift imports it: from its file path (swift.utils.import_external_file)."""
    from swift.utils import import_external_file

    return import_external_file(str(recipes.plugin_path()))


def test_the_plugin_is_one_file_of_the_package_and_registers_its_callbacks():
    from swift.callbacks import callbacks_map

    path = recipes.plugin_path()
    assert path.is_file() and path.parent.name == "recipes" and path.name == "swift_plugin.py"
    mod = _plugin()
    assert set(mod.CALLBACKS) <= set(callbacks_map)
    # self-contained: it imports nothing of swiftbench (a user may copy the file on its own)
    spec = importlib.util.spec_from_file_location("lonely_plugin", path)
    assert spec is not None and spec.loader is not None
    source = path.read_text()
    assert "from experiments" not in source and "import experiments" not in source
    assert "from analysis" not in source and "import analysis" not in source


def test_padding_free_check_accepts_sdpa_eager_and_flex_only(monkeypatch):
    """ms-swift refuses padding_free without flash attention; importing the plugin lets SDPA, eager and flex attention
    through (transformers builds their packed-sequence masks alike) and leaves every other case to ms-swift."""
    from swift.arguments import SftArguments

    plugin = _plugin()
    original = SftArguments._check_padding_free
    while getattr(original, "_swiftbench", False):  # undo an earlier import's patch to see ms-swift's own check
        original = original.__closure__[0].cell_contents
    monkeypatch.setattr(SftArguments, "_check_padding_free", original)
    probe = SimpleNamespace(padding_free=True, packing=False, attn_impl="sdpa")
    with pytest.raises(ValueError, match="flash attention"):
        SftArguments._check_padding_free(probe)
    assert plugin.allow_sdpa_padding_free() is True
    SftArguments._check_padding_free(probe)  # accepted now
    packing = SimpleNamespace(padding_free=False, packing=True, attn_impl=None)
    SftArguments._check_padding_free(packing)
    assert packing.padding_free is True  # packing implies padding_free, as in ms-swift
    SftArguments._check_padding_free(SimpleNamespace(padding_free=True, packing=False, attn_impl="flex_attention"))
    with pytest.raises(ValueError, match="flash attention"):
        SftArguments._check_padding_free(SimpleNamespace(padding_free=True, packing=False, attn_impl="xformers"))
    assert plugin.allow_sdpa_padding_free() is True  # a second import (a dataloader worker) patches nothing twice
    assert not getattr(SftArguments._check_padding_free.__closure__[0].cell_contents, "_swiftbench", False)


def test_sdpa_no_cudnn_switches_only_cudnn_off():
    import torch

    switches = ("cudnn_sdp_enabled", "flash_sdp_enabled", "mem_efficient_sdp_enabled", "math_sdp_enabled")
    before = {s: getattr(torch.backends.cuda, s)() for s in switches}
    try:
        torch.backends.cuda.enable_cudnn_sdp(True)
        _plugin().make_callbacks()["sdpa_no_cudnn"](SimpleNamespace(), SimpleNamespace())
        assert torch.backends.cuda.cudnn_sdp_enabled() is False
        assert all(getattr(torch.backends.cuda, s)() == before[s] for s in switches[1:])
    finally:
        torch.backends.cuda.enable_cudnn_sdp(before["cudnn_sdp_enabled"])


@pytest.mark.parametrize("tokens, multiple, want", [(1, 1024, 1024), (1024, 1024, 1024), (1025, 1024, 2048),
                                                    (3007, 512, 3072), (0, 512, 512), (7, 1, 7)])
def test_bucket_length_by_hand(tokens, multiple, want):
    assert _plugin().bucket_length(tokens, multiple) == want


def _template(padding_free=True):
    from swift.model import get_processor
    from swift.template import get_template

    path, _, _ = run_prepare.resolve_model(run_spec.DUMMY_TINY, "cpu")
    t = get_template(get_processor(path, model_type="qwen2"), template_type="qwen2_5", padding_free=padding_free)
    t.set_mode("train")
    return t


def _samples(t, sizes):
    out = []
    for n in sizes:
        e = t.encode({"messages": [{"role": "user", "content": "hi " * n},
                                   {"role": "assistant", "content": "ok " * n}]})
        e["length"] = len(e["input_ids"])
        out.append(e)
    return out


def _bucket_trainer(plugin, t):
    """A trainer as far as pad_buckets sees one: ms-swift's collator, and a training loader that takes it."""
    from functools import partial

    trainer = SimpleNamespace(template=t, data_collator=partial(t.data_collator, padding_to=None))
    trainer.get_train_dataloader = lambda: trainer.data_collator  # the collator the training loader was built with
    plugin.make_callbacks()["pad_buckets"](SimpleNamespace(), trainer)
    return trainer


def test_pad_buckets_pads_the_packed_row_with_nothing_that_trains(monkeypatch):
    """A packed row of 39 + 53 + 47 = 139 tokens padded to the next multiple of 64: 192 positions, the first 139 the
    unpadded row's exactly, the 53 after them pad tokens with labels -100 (no loss term) and position id 0 (each its own
    one-token sequence: transformers' packed-row mask keeps every sample attending only to itself)."""
    plugin = _plugin()
    monkeypatch.setenv(plugin.PAD_ENV, "64")
    t = _template()
    plain = t.data_collator(_samples(t, (3, 10, 7)))
    trainer = _bucket_trainer(plugin, t)
    train_collate = trainer.get_train_dataloader()
    padded = train_collate(_samples(t, (3, 10, 7)))
    n = plain["input_ids"].shape[1]
    assert n == 139 and padded["input_ids"].shape == (1, 192)
    for key in ("input_ids", "labels", "position_ids"):
        assert padded[key][0, :n].tolist() == plain[key][0, :n].tolist()
    assert padded["labels"][0, n:].eq(-100).all() and padded["position_ids"][0, n:].eq(0).all()
    assert padded["input_ids"][0, n:].eq(t.tokenizer.pad_token_id).all()
    assert (padded["labels"] != -100).sum() == (plain["labels"] != -100).sum()
    from transformers.masking_utils import find_packed_sequence_indices

    docs = find_packed_sequence_indices(padded["position_ids"])[0].tolist()
    assert docs[:n] == find_packed_sequence_indices(plain["position_ids"])[0].tolist()
    assert len(set(docs[n:])) == 192 - n  # every pad token a sequence of its own
    # the trainer's own collator (evaluation's) is left as it was
    assert trainer.data_collator(_samples(t, (3, 10, 7)))["input_ids"].shape == (1, 139)
    import pickle

    assert pickle.loads(pickle.dumps(plugin.BucketCollator(len, 64))).multiple == 64  # spawned workers get it


def test_launcher_counts_a_padded_rows_real_tokens(monkeypatch):
    """tokens.jsonl's real tokens of a bucket-padded packed row are the row's own 139, not the 192 positions."""
    from experiments.launch.launcher import batch_token_counts

    plugin = _plugin()
    monkeypatch.setenv(plugin.PAD_ENV, "64")
    t = _template()
    plain = t.data_collator(_samples(t, (3, 10, 7)))
    padded = _bucket_trainer(plugin, t).get_train_dataloader()(_samples(t, (3, 10, 7)))
    got = batch_token_counts([padded])
    assert got == {**batch_token_counts([plain]), "padded_tokens": 192}
    assert got["tokens"] == 139 and got["label_tokens"] == int((plain["labels"] != -100).sum())


def test_pad_buckets_refuses_a_bad_multiple_and_ignores_padded_batches(monkeypatch):
    plugin = _plugin()
    for bad in ("0", "-5", "1k"):
        monkeypatch.setenv(plugin.PAD_ENV, bad)
        with pytest.raises(ValueError, match=plugin.PAD_ENV):
            plugin.pad_multiple()
    monkeypatch.setenv(plugin.PAD_ENV, "64")
    t = _template(padding_free=False)
    trainer = _bucket_trainer(plugin, t)
    assert trainer.get_train_dataloader()(_samples(t, (3, 10)))["input_ids"].shape == (2, 53)  # as before


def test_liger_callbacks_set_the_trainers_liger_config(monkeypatch):
    plugin = _plugin()
    cbs = plugin.make_callbacks()
    args = SimpleNamespace(liger_kernel_config=None)
    cbs["liger_loss_only"](args, SimpleNamespace())
    assert args.liger_kernel_config == {"rope": False, "rms_norm": False, "swiglu": False,
                                        "fused_linear_cross_entropy": True}
    monkeypatch.setenv(plugin.LIGER_ENV, json.dumps({"fused_linear_cross_entropy": False, "cross_entropy": True}))
    args = SimpleNamespace(liger_kernel_config=None)
    cbs["liger_config"](args, SimpleNamespace())
    assert args.liger_kernel_config == {"fused_linear_cross_entropy": False, "cross_entropy": True}
    for bad in ("{oops", '{"rope": "yes"}', "[true]", ""):
        monkeypatch.setenv(plugin.LIGER_ENV, bad)
        with pytest.raises(ValueError, match=plugin.LIGER_ENV):
            cbs["liger_config"](SimpleNamespace(liger_kernel_config=None), SimpleNamespace())


def test_no_host_sync_skips_a_non_finite_step_on_the_device_and_takes_a_finite_one(monkeypatch):
    """ms-swift drops the update when the gradient norm is NaN (after an .item()); no_host_sync hands the fused AdamW a
    found_inf flag instead: a NaN norm leaves the weights and the step count as they were, a finite one updates."""
    import torch
    from transformers import masking_utils

    plugin = _plugin()
    monkeypatch.setattr(masking_utils, "find_packed_sequence_indices", masking_utils.find_packed_sequence_indices)
    p = torch.nn.Parameter(torch.ones(4))
    opt = torch.optim.AdamW([p], lr=0.1, fused=True)
    norms = iter([torch.tensor(float("nan")), torch.tensor(2.0)])
    trainer = SimpleNamespace(_fix_grad_norm_nan=None, _clip_grad_norm=lambda model: next(norms),
                              optimizer=SimpleNamespace(optimizer=opt), get_train_dataloader=list)
    with pytest.raises(ValueError, match="adamw_torch_fused"):
        plugin.make_callbacks()["no_host_sync"](SimpleNamespace(optim="adamw_torch"), trainer)
    from transformers.training_args import OptimizerNames

    plugin.make_callbacks()["no_host_sync"](SimpleNamespace(optim=OptimizerNames.ADAMW_TORCH_FUSED), trainer)
    assert trainer._fix_grad_norm_nan is not None
    with trainer._fix_grad_norm_nan():  # ms-swift's own NaN check (an .item() every step) is gone
        pass
    p.grad = torch.full((4,), float("nan"))
    trainer._clip_grad_norm(None)
    opt.step()
    assert p.detach().tolist() == [1.0] * 4 and opt.state[p]["step"].item() == 0
    p.grad = torch.ones(4)
    trainer._clip_grad_norm(None)
    opt.step()
    assert all(x < 1.0 for x in p.detach().tolist()) and opt.state[p]["step"].item() == 1


def test_compile_layers_finds_the_decoder_layers_and_keeps_its_cache(tmp_path, monkeypatch):
    import torch
    from transformers import AutoModelForCausalLM

    plugin = _plugin()
    monkeypatch.setenv(plugin.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    path, _, _ = run_prepare.resolve_model(run_spec.DUMMY_TINY, "cpu")
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    layers = plugin.decoder_layers(model)
    assert len(layers) == model.config.num_hidden_layers and type(layers[0]).__name__ == "Qwen2DecoderLayer"
    seen = []
    trainer = SimpleNamespace(evaluate=lambda *a, **k: seen.append(torch.compiler.is_compiling()) or {"ok": 1})
    cb = plugin.make_callbacks()["compile_layers"](SimpleNamespace(), trainer)
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "cache") and (tmp_path / "cache").is_dir()
    cb.on_train_begin(None, None, None, model=model)
    assert cb.compiled == model.config.num_hidden_layers
    assert all(getattr(layer, "_compiled_call_impl", None) is not None for layer in layers)
    assert trainer.evaluate() == {"ok": 1} and seen == [False]


def test_the_parser_knows_the_plugins_default_bucket():
    """analysis/parse/record.py caps a step's padded tokens with pad_buckets' bucket (it cannot import the plugin:
    that would load ms-swift into `swiftbench tables`)."""
    from analysis.parse.record import PAD_BUCKET_DEFAULT

    assert _plugin().DEFAULT_PAD_MULTIPLE == PAD_BUCKET_DEFAULT


def test_packed_sequence_indices_without_the_host_test_by_hand(monkeypatch):
    """Three sequences of 2, 3 and 1 tokens packed in one row are sequences 0, 0, 1, 1, 1, 2 (transformers' own
    docstring example); a row of one sequence is all zeros where transformers' version returns None after an .all()
    that makes the host wait."""
    import torch
    from transformers import masking_utils

    plugin = _plugin()
    original = masking_utils.find_packed_sequence_indices
    original = getattr(original, "original", original)  # an earlier no_host_sync in this process replaced it
    fn = plugin.packed_sequence_indices_no_sync(SimpleNamespace(find_packed_sequence_indices=original))
    packed = torch.tensor([[0, 1, 0, 1, 2, 0]])
    assert fn(packed).tolist() == [[0, 0, 1, 1, 1, 2]] == original(packed).tolist()
    one = torch.arange(5)[None]
    assert fn(one).tolist() == [[0] * 5] and original(one) is None
    assert plugin.packed_sequence_indices_no_sync(SimpleNamespace(find_packed_sequence_indices=fn)) is fn


def test_no_host_sync_drops_training_token_accuracy_only_and_names_the_waits_it_leaves(monkeypatch):
    import torch
    from transformers import masking_utils
    from transformers.training_args import OptimizerNames

    plugin = _plugin()
    monkeypatch.setattr(masking_utils, "find_packed_sequence_indices", masking_utils.find_packed_sequence_indices)
    calls = []
    model = SimpleNamespace(training=True)
    trainer = SimpleNamespace(_fix_grad_norm_nan=None, _clip_grad_norm=lambda m: torch.tensor(1.0),
                              optimizer=None, model=model, _compute_acc=lambda *a, **k: calls.append(a),
                              get_train_dataloader=list)
    args = SimpleNamespace(optim=OptimizerNames.ADAMW_TORCH_FUSED, use_logits_to_keep=None, use_liger_kernel=True,
                           liger_kernel_config={"fused_linear_cross_entropy": True})
    plugin.make_callbacks()["no_host_sync"](args, trainer)
    assert getattr(masking_utils.find_packed_sequence_indices, "_swiftbench", False)
    trainer._compute_acc("train")
    model.training = False
    trainer._compute_acc("eval")
    assert calls == [("eval",)]
    waits = plugin.remaining_syncs(args)
    assert len(waits) == 2 and "use_logits_to_keep false" in waits[0] and "Liger" in waits[1]
    assert plugin.remaining_syncs(SimpleNamespace(use_logits_to_keep=False, use_liger_kernel=False)) == []
    assert plugin.remaining_syncs(SimpleNamespace(use_logits_to_keep=False, use_liger_kernel=True,
                                                  liger_kernel_config={"fused_linear_cross_entropy": False})) == []


@pytest.mark.parametrize("pinned", [True, False])
@pytest.mark.parametrize("kind", ["swift", "accelerate"])
def test_no_host_sync_copies_pinned_training_batches_without_a_wait(monkeypatch, pinned, kind):
    """ms-swift 4.6.0 trains from its own DataLoaderShard, whose copies to the GPU block (a wait for the step before,
    every step: sync_debug's stacks, results/calls/2026-12-07-call29); no_host_sync makes the training
    loader's copies non-blocking where its batches are pinned, and only there. The batches are the same."""
    import torch
    from swift import utils as swift_utils

    plugin = _plugin()
    if kind == "swift":
        from swift.dataloader.shard import DataLoaderShard
    else:
        from accelerate.data_loader import DataLoaderShard
    made, copies = [], []
    to_device = swift_utils.to_device

    def spy(data, device, non_blocking=False):
        copies.append(non_blocking)
        return to_device(data, device, non_blocking)

    monkeypatch.setattr(swift_utils, "to_device", spy)

    def get_train_dataloader():
        loader = DataLoaderShard(list(range(8)), device=torch.device("cpu"), batch_size=4)
        loader.pin_memory = pinned  # a CPU-only torch turns pinning off; a GPU host keeps it (ms-swift's default)
        made.append(loader)
        return loader

    trainer = SimpleNamespace(get_train_dataloader=get_train_dataloader)
    plugin.nonblocking_train_loader(trainer)
    loader = trainer.get_train_dataloader()
    assert loader is made[0] and isinstance(loader, DataLoaderShard) and len(loader) == 2
    assert [b.tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    if kind == "accelerate":
        assert loader._non_blocking is pinned
    else:
        assert copies == ([True, True] if pinned else [])  # the unpatched class copies with swift's own import


@pytest.mark.parametrize(("text", "want"), [("20-21", range(20, 22)), ("7", range(7, 8)), (" 3-3 ", range(3, 4))])
def test_sync_debug_steps(monkeypatch, text, want):
    plugin = _plugin()
    monkeypatch.setenv(plugin.SYNC_ENV, text)
    assert plugin.sync_debug_steps() == want


@pytest.mark.parametrize("text", ["", "a-b", "0-2", "5-4", "3-"])
def test_sync_debug_refuses_bad_steps(monkeypatch, text):
    plugin = _plugin()
    monkeypatch.setenv(plugin.SYNC_ENV, text)
    if text == "3-":  # '3-' reads as step 3 alone
        assert plugin.sync_debug_steps() == range(3, 4)
        return
    with pytest.raises(ValueError, match=plugin.SYNC_ENV):
        plugin.sync_debug_steps()


def test_sync_debug_counts_each_distinct_stack_once_per_wait(monkeypatch, capsys):
    import torch

    plugin = _plugin()
    monkeypatch.setenv(plugin.SYNC_ENV, "2-3")
    modes = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", modes.append)
    cb = plugin.make_callbacks()["sync_debug"](SimpleNamespace(), SimpleNamespace())
    assert cb.steps == range(2, 4)
    cb.on_step_begin(None, SimpleNamespace(global_step=0), None)  # step 1: off
    assert modes == [] and not cb.on
    cb.on_step_begin(None, SimpleNamespace(global_step=1), None)  # step 2: on
    import warnings

    def wait():
        warnings.warn("called a synchronizing CUDA operation", UserWarning, stacklevel=1)

    for _ in range(3):
        wait()
    warnings.warn("called a synchronizing CUDA operation", UserWarning, stacklevel=1)  # another line: another stack
    cb.on_step_end(None, SimpleNamespace(global_step=2), None)  # step 3 is next: stays on
    assert cb.on
    cb.on_step_end(None, SimpleNamespace(global_step=3), None)
    assert not cb.on and modes == ["warn", "default"]
    assert sorted(cb.seen.values()) == [1, 3]
    out = capsys.readouterr().out
    assert "4 host waits in 2 step(s), 2 distinct" in out and "3x " in out and "test_plugin.py" in out


def test_compile_dynamic_compiles_each_layer_with_the_row_length_symbolic(tmp_path, monkeypatch):
    import torch
    from transformers import AutoModelForCausalLM

    plugin = _plugin()
    monkeypatch.setenv(plugin.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    path, _, _ = run_prepare.resolve_model(run_spec.DUMMY_TINY, "cpu")
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    seen = []
    for layer in plugin.decoder_layers(model):
        monkeypatch.setattr(layer, "compile", lambda **kw: seen.append(kw))
    cb = plugin.make_callbacks()["compile_dynamic"](SimpleNamespace(), SimpleNamespace(evaluate=lambda: {}))
    model.requires_grad_(False)  # as under LoRA: the base weights frozen
    ids = torch.tensor([[1, 2, 3]])
    assert not model.get_input_embeddings()(ids).requires_grad  # frozen: the first layer's input asks no gradient
    cb.on_train_begin(None, None, None, model=model)
    assert seen == [{"dynamic": True}] * model.config.num_hidden_layers and cb.name == "compile_dynamic"
    # ... until compile_dynamic asks one, so that every layer sees the same input (one graph, not two)
    assert model.get_input_embeddings()(ids).requires_grad
    static = plugin.make_callbacks()["compile_layers"](SimpleNamespace(), SimpleNamespace(evaluate=lambda: {}))
    assert static.dynamic is False and static.name == "compile_layers"


@pytest.mark.parametrize("tokens, want", [(1, 256), (47, 256), (255, 256), (256, None), (1911, None)])
def test_min_row_length_by_hand(tokens, want):
    assert _plugin().min_row_length(tokens, 256) == want


def test_compile_dynamic_pads_only_a_short_training_row(tmp_path, monkeypatch):
    """The epoch's last batch of call 24 (one row, 47 tokens: one FlexAttention block, a recompile) is padded to
    MIN_DYNAMIC_ROW with labels -100 and position id 0, as pad_buckets pads; a row of 139 tokens under a minimum of
    100 is left as it is; evaluation's collator is not touched."""
    plugin = _plugin()
    monkeypatch.setenv(plugin.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    from functools import partial

    t = _template()
    trainer = SimpleNamespace(template=t, data_collator=partial(t.data_collator, padding_to=None), evaluate=lambda: {})
    trainer.get_train_dataloader = lambda: trainer.data_collator
    plugin.make_callbacks()["compile_dynamic"](SimpleNamespace(), trainer)
    collate = trainer.get_train_dataloader()
    plain = t.data_collator(_samples(t, (3,)))
    n = plain["input_ids"].shape[1]
    padded = collate(_samples(t, (3,)))
    assert n < plugin.MIN_DYNAMIC_ROW and padded["input_ids"].shape == (1, plugin.MIN_DYNAMIC_ROW)
    assert padded["labels"][0, :n].tolist() == plain["labels"][0, :n].tolist()
    assert padded["labels"][0, n:].eq(-100).all() and padded["position_ids"][0, n:].eq(0).all()
    monkeypatch.setattr(plugin, "MIN_DYNAMIC_ROW", 100)
    trainer2 = SimpleNamespace(template=t, data_collator=partial(t.data_collator, padding_to=None), evaluate=lambda: {})
    trainer2.get_train_dataloader = lambda: trainer2.data_collator
    plugin.make_callbacks()["compile_dynamic"](SimpleNamespace(), trainer2)
    assert trainer2.get_train_dataloader()(_samples(t, (3, 10, 7)))["input_ids"].shape == (1, 139)
    assert trainer.data_collator(_samples(t, (3,)))["input_ids"].shape == (1, n)  # evaluation's, unpadded


@pytest.mark.parametrize("cache, want", [
    ({"files_before": 0, "warm": False}, "compiled in the run (empty cache)"),
    ({"files_before": 1830, "warm": True}, "compiled code from this host's cache of an earlier run (1830 files)"),
    ({"files_before": 0, "artifacts": "/x/compile_cache/sm90-torch2.11.0+cu130-triton3.6.0.bin",
      "artifacts_bytes": 29_842_000},
     "compiled code loaded from a saved file (sm90-torch2.11.0+cu130-triton3.6.0.bin, 29.8 MB)"),
    ({"files_before": 12, "artifacts": "/x/a.bin", "artifacts_bytes": None},
     "compiled code loaded from a saved file (a.bin) over this host's cache of an earlier run (12 files)"),
    ({"files_before": -1}, None), ({"files_before": True}, None), ("cold", None),
])
def test_compiled_code_words_of_launch_json(cache, want):
    from analysis.parse import sidefiles

    assert sidefiles.read_compiled_code({"compile_cache": cache}) == want
    assert sidefiles.read_compiled_code({}) is None  # a run that compiled nothing


def test_the_committed_compiled_runs_say_where_their_compiled_code_came_from():
    """The H200 compiled recipe of 2026-12-03: the first run on host b2a21682bc96 compiled everything, the two after it
    found 1,830 files in the inductor cache (their launch.json); each row carries it as a label."""
    from pathlib import Path

    from analysis.parse.results import read_run

    root = Path(__file__).resolve().parents[1] / "results" / "h200" / "compiled"
    got = {r: read_run(root / r) for r in ("20261203-091225-b2a21682bc96", "20261203-091516-b2a21682bc96")}
    assert got["20261203-091225-b2a21682bc96"].labels[-1] == "compiled in the run (empty cache)"
    assert got["20261203-091516-b2a21682bc96"].compiled_code == \
        "compiled code from this host's cache of an earlier run (1830 files)"
    assert "dummy weights" in got["20261203-091516-b2a21682bc96"].labels


def test_the_launcher_records_the_compiled_code_file_a_dynamic_run_will_load(tmp_path, monkeypatch):
    from experiments.launch.launcher import compile_cache_state

    plugin = _plugin()
    monkeypatch.setenv(plugin.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    saved = tmp_path / "artifacts.bin"
    saved.write_bytes(b"x" * 1234)
    monkeypatch.setenv(plugin.ARTIFACTS_ENV, str(saved))
    state = compile_cache_state(["--callbacks", "compile_dynamic", "no_host_sync", "--optim", "adamw_torch_fused"])
    assert state == {"dir": str(tmp_path / "cache"), "files_before": 0, "warm": False, "artifacts": str(saved),
                     "artifacts_bytes": 1234}
    assert compile_cache_state(["--callbacks", "no_host_sync"]) is None


def test_compile_callbacks_report_torchs_compiled_code_cache_counts(tmp_path, monkeypatch):
    """What a run's stdout says at the end of training: torch's own cache counters, cache keys only (a CPU run given
    the compiled code of an earlier one reported {'fxgraph_cache_hit': 2, 'autograd_cache_hit': 1, ...})."""
    from torch._dynamo.utils import counters

    plugin = _plugin()
    monkeypatch.setenv(plugin.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    cb = plugin.make_callbacks()["compile_dynamic"](SimpleNamespace(), SimpleNamespace(evaluate=lambda: {}))
    counters.clear()
    counters["inductor"]["fxgraph_cache_hit"] += 2
    counters["inductor"]["pattern_matcher_count"] += 7  # not a cache count
    counters["aot_autograd"]["autograd_cache_miss"] += 1
    try:
        assert cb.cache_counts() == {"fxgraph_cache_hit": 2, "autograd_cache_miss": 1}
    finally:
        counters.clear()


def test_the_shipped_gzipped_file_of_this_build_is_loaded_decompressed(tmp_path, monkeypatch):
    """compile_cache/<build>.bin.gz beside the plugin: found by the build's name like the .bin, given to torch
    decompressed; SWIFTBENCH_COMPILE_ARTIFACTS=none loads nothing, not even a shipped file."""
    import gzip

    plugin = _plugin()
    fake_torch = SimpleNamespace(__version__="9.9", cuda=SimpleNamespace(is_available=lambda: False))
    name = plugin.artifacts_name(fake_torch)
    monkeypatch.setattr(plugin, "SHIPPED_CACHE", tmp_path)
    monkeypatch.delenv(plugin.ARTIFACTS_ENV, raising=False)
    assert plugin.artifacts_to_load(fake_torch) is None
    (tmp_path / (name + ".gz")).write_bytes(gzip.compress(b"compiled code"))
    assert plugin.artifacts_to_load(fake_torch) == tmp_path / (name + ".gz")
    given = []
    fake_torch.compiler = SimpleNamespace(load_cache_artifacts=lambda data: given.append(data))
    cb = SimpleNamespace(torch=fake_torch, name="compile_dynamic")
    assert plugin.CompileLayers._load_artifacts(cb) == tmp_path / (name + ".gz") and given == [b"compiled code"]
    (tmp_path / name).write_bytes(b"newer, as saved")  # a run's own file (epoch_gpu.sh NAME~) comes first
    assert plugin.artifacts_to_load(fake_torch) == tmp_path / name
    monkeypatch.setenv(plugin.ARTIFACTS_ENV, "none")
    assert plugin.artifacts_to_load(fake_torch) is None


def test_the_shipped_file_is_the_code_call_25s_runs_saved():
    """experiments/recipes/compile_cache's file unpacks to the bytes the H100 run 20261207-103643 reported saving."""
    import gzip
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    (shipped,) = (root / "experiments" / "recipes" / "compile_cache").glob("*.bin.gz")
    log = (root / "results/h100/gpu-bound/20261207-103643-d396bcf5564b/stdout.log").read_text(errors="replace")
    saved = re.search(r"compiled code saved to \S+/(\S+) \((\d+) bytes", log)
    assert saved and shipped.name == saved.group(1) + ".gz"
    assert len(gzip.decompress(shipped.read_bytes())) == int(saved.group(2)) == 18_691_412


def test_gc_clock_counts_and_times_collections_per_generation(monkeypatch):
    """Hand-fed gc callback phases with a stepped clock: totals per generation, and those after step 2 apart."""
    plugin = _plugin()
    clock = plugin.GcClock()
    ticks = iter([0.0, 0.5, 1.0, 1.25, 2.0, 4.0])
    monkeypatch.setattr(plugin.time, "perf_counter", lambda: next(ticks))
    clock("start", {"generation": 2})
    clock("stop", {"generation": 2})   # 0.5 s, gen2
    clock("start", {"generation": 0})
    clock("stop", {"generation": 0})   # 0.25 s, gen0
    clock.at_step(1)
    assert clock.mark is None
    clock.at_step(2)
    clock("start", {"generation": 2})
    clock("stop", {"generation": 2})   # 2.0 s, gen2, after step 2
    assert clock.count == [1, 0, 2] and clock.seconds == [0.25, 0.0, 2.5]
    text = clock.stop()
    assert text.startswith("whole training: gen0 1 in 0.25 s, gen1 0 in 0.00 s, gen2 2 in 2.50 s; after step 2 (")
    assert text.endswith("objects tracked then): gen0 0 in 0.00 s, gen1 0 in 0.00 s, gen2 1 in 2.00 s")


def test_gc_clock_sees_a_real_collection():
    import gc

    plugin = _plugin()
    clock = plugin.GcClock()
    clock.start()
    try:
        gc.collect()
    finally:
        clock.stop()
    assert clock.count[2] >= 1 and clock.seconds[2] > 0 and clock not in gc.callbacks


def test_step1_stacks_counts_each_function_once_per_sample_by_hand():
    """Three samples of the main thread: two inside load_by_key_path (one of them in a subprocess wait below it), one
    in the trainer alone; a recursive frame counts once per sample. Shares are of the rounds: load 2/3, wait 1/3."""
    from types import SimpleNamespace as NS

    plugin = _plugin()

    class Code:  # a code object's two fields (hashable, as code objects are)
        def __init__(self, co_filename, co_name):
            self.co_filename, self.co_name = co_filename, co_name

    def stack(*names):
        frame = None
        for name in names:  # outermost first
            file, func = name.split(":")
            frame = NS(f_code=Code(f"/x/{file}", func), f_back=frame)
        return frame

    st = plugin.Step1Stacks(top=3)
    train = "trainer.py:train"
    st.sample({1: stack(train, "codecache.py:load_by_key_path", "codecache.py:load_by_key_path")}, {1: "main"})
    st.sample({1: stack(train, "codecache.py:load_by_key_path", "subprocess.py:wait")}, {1: "main"})
    st.sample({1: stack(train), 2: stack("threading.py:wait")}, {1: "main", 2: "pool"})
    lines = st.report(0.03)
    assert lines[0] == "3 samples over 0.0 s (every 20 ms asked)"
    assert lines[1] == ("thread main (100% of the rounds; 1 functions on every sample left out): "
                        "x/codecache.py:load_by_key_path 67%; x/subprocess.py:wait 33%")
    assert lines[2].startswith("thread main: innermost x/codecache.py:load_by_key_path 33%;")
    assert len(lines) == 3  # the pool thread waited in one stack all along: left out
    st.sample({3: stack("threading.py:wait"), 4: stack("a.py:f", "b.py:g")}, {3: "pool", 4: "pool"})
    st.sample({4: stack("a.py:f")}, {4: "pool"})  # a second thread of the same name: told apart by its id
    assert [x.split(" (")[0] for x in st.report(0.05) if "innermost" not in x][1:] == ["thread main", "thread pool 0x4"]


@pytest.mark.parametrize(("argv", "want"), [
    (["swift", "sft", "--callbacks", "compile_dynamic", "no_host_sync"], True),
    (["x", "--callbacks=compile_layers"], True),
    (["x", "--callbacks", '["pad_buckets", "compile_layers"]'], True),
    (["x", "--callbacks", "no_host_sync", "--output_dir", "compile_dynamic_out"], False),
    (["x", "--output_dir", "compile_layers", "--callbacks", "no_host_sync"], False),  # another flag's value
    (["x", "--callbacks", "no_host_sync", "compile_dynamic", "--lora_rank", "8"], True),
    (["x", "--callbacks", "compile_dynamic", "--callbacks", "no_host_sync"], False),  # the last one wins
    (["x"], False),
])
def test_the_compile_workers_start_at_import_only_for_a_compiling_run(monkeypatch, argv, want):
    """torch's own warm-up is called only for a command line naming a compiling callback, and not with
    SWIFTBENCH_WARM_POOL=0; it says True only where a pool now exists that did not (a stand-in pool here: creating
    inductor's real one needs Triton)."""
    import functools

    from torch._inductor import async_compile

    plugin = _plugin()
    calls = []

    @functools.lru_cache(1)
    def pool():
        return "pool"

    monkeypatch.setattr(async_compile.AsyncCompile, "process_pool", staticmethod(pool))
    monkeypatch.setattr(async_compile, "maybe_warm_pool",
                        lambda: calls.append(async_compile.AsyncCompile.process_pool()))
    monkeypatch.delenv(plugin.WARM_ENV, raising=False)
    assert plugin.compiles(argv) is want
    monkeypatch.setenv(plugin.WARM_ENV, "0")
    assert plugin.warm_compile_pool(argv) is False and calls == []
    monkeypatch.delenv(plugin.WARM_ENV)
    assert plugin.warm_compile_pool(argv) is want and len(calls) == int(want)
    assert plugin.warm_compile_pool(argv) is False  # the pool exists: a second import starts nothing


def test_the_plugins_import_starts_the_workers_in_the_training_process_only(monkeypatch):
    """register() (run at the plugin's import) asks torch to start the compile workers for a compiling command line;
    a process multiprocessing started (a dataloader worker re-importing the plugin under spawn) does not."""
    import functools
    import multiprocessing
    import sys

    from torch._inductor import async_compile

    plugin = _plugin()
    calls = []

    @functools.lru_cache(1)
    def pool():
        return "pool"

    monkeypatch.setattr(async_compile.AsyncCompile, "process_pool", staticmethod(pool))
    monkeypatch.setattr(async_compile, "maybe_warm_pool",
                        lambda: calls.append(async_compile.AsyncCompile.process_pool()))
    monkeypatch.delenv(plugin.WARM_ENV, raising=False)
    argv = ["swift", "sft", "--callbacks", "compile_dynamic"]
    monkeypatch.setattr(sys, "argv", argv)
    monkeypatch.setattr(multiprocessing, "parent_process", lambda: object())
    assert plugin.warm_compile_pool(argv) is False and calls == []
    monkeypatch.setattr(multiprocessing, "parent_process", lambda: None)
    plugin.register()
    assert calls == ["pool"]


def test_the_compile_s_objects_are_collected_then_frozen_once_after_step_2(tmp_path, monkeypatch):
    """After step 2 the compiling callbacks collect (a garbage cycle of the compile is freed, not frozen) and freeze
    the rest out of the collector's scans, once; a run resumed past step 2 freezes at its first step."""
    import gc
    import weakref

    plugin = _plugin()
    monkeypatch.setenv(plugin.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv(plugin.ARTIFACTS_ENV, "none")
    cb = plugin.make_callbacks()["compile_dynamic"](SimpleNamespace(), SimpleNamespace(evaluate=lambda *a, **k: {}))
    cb.compiled = 28

    class Node:
        pass

    freezes = []
    freeze = gc.freeze
    monkeypatch.setattr(gc, "freeze", lambda: freezes.append(1) or freeze())
    gc.unfreeze()
    gc.disable()  # no automatic collection but the callback's own
    try:
        a, b = Node(), Node()
        a.other, b.other = b, a
        dead = weakref.ref(a)
        del a, b
        cb.on_step_end(None, SimpleNamespace(global_step=1), None)
        assert freezes == [] and not cb.frozen and dead() is not None
        cb.on_step_end(None, SimpleNamespace(global_step=3), None)  # resumed past step 2
        assert dead() is None and freezes == [1] and gc.get_freeze_count() > 0 and cb.frozen
        cb.on_step_end(None, SimpleNamespace(global_step=4), None)
        assert freezes == [1]  # once
    finally:
        gc.enable()
        gc.unfreeze()
