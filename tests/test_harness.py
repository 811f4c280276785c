"""Harness 2 (issue 47): what the launcher does per step must not wait for the GPU or open a file; checked on the
CPU with hand-counted batches (the GPU pairs are results/findings/harness_h200_2026-12-04.md)."""
import json
import types

import pytest

torch = pytest.importorskip("torch")

from experiments.launch import launcher  # noqa: E402
from experiments.record import gpm  # noqa: E402


def _batch(lengths, pad_to=None):
    """One padded micro-batch of rows of LENGTHS real tokens (attention mask), labels on every other real token."""
    width = pad_to or max(lengths)
    ids = torch.ones((len(lengths), width), dtype=torch.int64)
    mask = torch.zeros_like(ids)
    labels = torch.full_like(ids, -100)
    for i, n in enumerate(lengths):
        mask[i, :n] = 1
        labels[i, :n:2] = 7
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def test_step_totals_split_gpu_sums_from_host_counts():
    """Real and label tokens are summed as tensors (no host read); padded tokens and micro-batches are Python ints."""
    batches = [_batch([3, 5], pad_to=8), _batch([4])]
    gpu, host = launcher.step_token_totals(batches)
    assert isinstance(gpu, torch.Tensor) and gpu.tolist() == [3 + 5 + 4, 2 + 3 + 2]  # labels: ceil(n / 2) per row
    assert host == (2 * 8 + 1 * 4, 2)
    assert launcher.batch_token_counts(batches) == {"micro_batches": 2, "tokens": 12, "padded_tokens": 20,
                                                    "label_tokens": 7}


def test_a_packed_row_without_mask_is_real_up_to_its_last_position():
    ids = torch.ones((1, 10), dtype=torch.int64)
    pos = torch.tensor([[0, 1, 2, 0, 1, 2, 3, 0, 0, 0]])  # two samples, then 3 padding positions (id 0)
    got = launcher._real_tokens({"input_ids": ids, "position_ids": pos}, ids)
    assert int(got) == 7


def test_token_log_writes_in_batches_not_per_step(tmp_path):
    out = tmp_path / "tokens.jsonl"
    log = launcher.TokenLog(out)
    for step in range(1, 4):
        log.add({"step": step}, launcher.step_token_totals([_batch([step, 2])]))
    assert not out.exists()  # three steps: nothing written yet
    log.flush()
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [(x["step"], x["tokens"], x["padded_tokens"]) for x in lines] == [(1, 3, 4), (2, 4, 4), (3, 5, 6)]
    for step in range(4, 4 + launcher.TokenLog.FLUSH_EVERY):
        log.add({"step": step}, launcher.step_token_totals([_batch([1])]))
    assert len(out.read_text().splitlines()) == 3 + launcher.TokenLog.FLUSH_EVERY  # the 50th line wrote the batch


class _Gpm:
    def __init__(self):
        self.n = 0

    def mark(self):
        self.n += 1
        return {"wall_s": 0.3, "graphics_util": 50.0}

    def close(self):
        pass


def test_gpm_lines_are_held_until_an_evaluation_or_the_end(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    monkeypatch.setattr(gpm.Gpm, "open", classmethod(lambda cls, lib=None, index=None: (_Gpm(), "ok")))
    out = tmp_path / gpm.GPM_FILE
    cb = gpm.make_callback(out, {})
    state = types.SimpleNamespace(global_step=0)
    cb.on_train_begin(None, state, None)
    for step in (1, 2):
        state.global_step = step
        cb.on_step_end(None, state, None)
    assert not out.exists()
    cb.on_evaluate(None, state, None)
    assert [json.loads(x)["step"] for x in out.read_text().splitlines()] == [1, 2]
    state.global_step = 3
    cb.on_step_end(None, state, None)
    cb.on_train_end(None, state, None)
    assert [json.loads(x)["step"] for x in out.read_text().splitlines()] == [1, 2, 3]
