"""Model FLOPs per token and MFU: the one producer of both (the planner's time model uses the same formula).

LoRA: forward 2N + backward through the frozen weights (input gradients only) 2N over the matmul weights N, plus 6
per trainable parameter; full fine-tuning 6N. Gradient checkpointing recomputes the forward: +2N hardware FLOPs (HFU).
Attention-score FLOPs are left out (small at these lengths). MFU = tokens/s x model FLOPs per token / dense BF16 peak.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from analysis.measure.throughput import throughput
from analysis.parse.record import RunRecord
from experiments.base import hardware

FORWARD_BACKWARD_PER_PARAM = 4   # frozen weights: forward 2 + input-gradient backward 2
TRAINABLE_PER_PARAM = 6          # trainable weights: forward 2 + backward 4
FULL_PER_PARAM = 6               # full fine-tuning: every weight trains
RECOMPUTE_PER_PARAM = 2          # gradient checkpointing: one more forward


@dataclass(frozen=True)
class FlopsPerToken:
    """Model FLOPs per token, and hardware FLOPs (with the recomputed forward of gradient checkpointing)."""

    model: int
    hardware: int


def flops_per_token(matmul_params: int, trainable_params: int, method: str = "lora",
                    recompute: bool = False) -> FlopsPerToken:
    """FLOPs per token of a model of MATMUL_PARAMS matmul weights, TRAINABLE_PARAMS of them trained."""
    if method == "full":
        model = FULL_PER_PARAM * matmul_params
    else:
        model = FORWARD_BACKWARD_PER_PARAM * matmul_params + TRAINABLE_PER_PARAM * trainable_params
    return FlopsPerToken(model, model + (RECOMPUTE_PER_PARAM * matmul_params if recompute else 0))


@dataclass(frozen=True)
class RunFlops:
    """FLOPs per token of a run (model and hardware) and its matmul weights (None: its shapes are unknown)."""

    flops_per_token: int | None
    hw_flops_per_token: int | None
    matmul_params: int | None


def run_flops(rec: RunRecord) -> RunFlops:
    """FLOPs per token of a run's model and LoRA (its shapes from model_config.json, the model folder or
    models.yaml)."""
    args = rec.args or {}
    shapes = hardware.model_shapes(args, Path(rec.path))
    if shapes is None:
        return RunFlops(None, None, None)
    n = hardware.matmul_params(shapes)
    trainable = rec.trainable_params
    if trainable is None:
        trainable = hardware.lora_params(shapes, args)
    if trainable is None:
        return RunFlops(None, None, n)
    f = flops_per_token(n, trainable, "lora", bool(args.get("gradient_checkpointing")))
    return RunFlops(f.model, f.hardware, n)


@dataclass(frozen=True)
class Mfu(RunFlops):
    """MFU and HFU of a run on its class's dense BF16 peak, with the FLOPs they rest on (None where a part is
    unknown)."""

    mfu: float | None = None
    hfu: float | None = None
    peak_tflops: float | None = None
    peak_source: str | None = None


def mfu(rec: RunRecord, tokens_per_s: float | None = None) -> Mfu:
    """MFU and HFU of a run on its GPU class's dense BF16 peak (per GPU: a run on N GPUs divides by N peaks)."""
    spec = hardware.get(rec.hw) if rec.hw else None
    flops = run_flops(rec)
    if tokens_per_s is None:
        tokens_per_s = throughput(rec).tokens_per_s
    out = Mfu(**vars(flops), peak_tflops=spec.bf16_dense_tflops if spec else None,
              peak_source=spec.source if spec else None)
    if spec is None or not spec.bf16_dense_tflops or tokens_per_s is None or flops.flops_per_token is None \
            or flops.hw_flops_per_token is None:
        return out
    peak = spec.bf16_dense_tflops * 1e12 * (rec.world_size or 1)
    return replace(out, mfu=tokens_per_s * flops.flops_per_token / peak,
                   hfu=tokens_per_s * flops.hw_flops_per_token / peak,
                   peak_source=f"{spec.name} dense BF16 {spec.bf16_dense_tflops} TFLOPS ({spec.source})")
