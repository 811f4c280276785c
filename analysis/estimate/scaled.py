"""An H200 step for a recipe, model or data that has no profile of its own, built from the reference profiles
(time_model.yaml scaled.references), then carried to any class by transfer.step_on like a measured step.

    scaled_step(shapes, recipe, stats, refs) -> ProfiledStep    the candidate's H200 step, in kernel groups

GPU work per kind from the reference with the same checkpointing: GEMM work per FLOP (FLOPs/token x tokens),
attention work per attention FLOP (layers x heads x head_dim x the rows' squared lengths), memory-bound work per
byte-proxy token (layers x one layer's saved bytes, a third more with checkpointing, + the loss's 12 x vocab), kernel
floors per micro-step and layer. Host: a micro-step takes s + max(c, its GPU work), s the serial host time
(data, syncs), c the host time a busy GPU hides (Python and launches; per layer), from the seed and bs16 pair
(checkpointing on); without checkpointing c shrinks with the kernel count. Formulas in docs/time-model.md.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from analysis.estimate import transfer, workload
from analysis.estimate.lengths import BatchStats
from analysis.estimate.transfer import KernelGroup, ProfiledStep
from analysis.measure.steps import steady_steps
from analysis.parse.record import RunRecord
from experiments.base import hardware
from experiments.base.errors import InputError
from experiments.base.runfolder import Profile
from experiments.base.runfolder import ProfileWindow as W


@dataclass(frozen=True)
class Recipe:
    """The flags a candidate adds to the seed recipe (global batch = batch x grad_accum on one GPU)."""

    batch: int
    grad_accum: int
    padding_free: bool = False
    liger: bool = False
    gradient_checkpointing: bool = True
    lora_rank: int = 8


@dataclass(frozen=True)
class Reference:
    """A reference run's profiled step and what sets its scale: model, recipe, tokens and attention work per step."""

    name: str
    step: ProfiledStep
    step_s: float  # its steady median step
    shapes: hardware.ModelShapes
    recipe: Recipe
    tokens_per_step: float
    row_sq_per_step: float
    events_per_micro: float


@dataclass(frozen=True)
class Overlap:
    """A micro-step's host time on the H200 (per GC setting): serial_s + max(hidden_s x layers / 28, GPU work)."""

    serial_s: float
    hidden_s: float
    layers: int


def _reference(rec: RunRecord, name: str) -> Reference:
    args = rec.args or {}
    shapes = hardware.model_shapes(args, Path(rec.path) if rec.path else None)
    if shapes is None or not rec.per_device_batch or not rec.grad_accum:
        raise InputError(rec.path, f"reference {name}: model shapes or batch unknown")
    flags = workload.run_flags(args)
    recipe = Recipe(batch=rec.per_device_batch, grad_accum=rec.grad_accum, padding_free=flags.padding_free,
                    liger=flags.liger, gradient_checkpointing=rec.gradient_checkpointing is not False,
                    lora_rank=int(args.get("lora_rank") or 8))
    step = transfer.profile_step(rec)
    if not step.steady_step_s:
        raise InputError(rec.path, f"reference {name}: no steady median step")
    by_step = rec.padded_by_step or rec.tokens_by_step or {}
    steady = [by_step[s] for s in steady_steps(rec) if s in by_step]
    if not steady:
        raise InputError(rec.path, f"reference {name}: no tokens per steady step (tokens.jsonl)")
    tokens = statistics.mean(steady)
    micro = recipe.grad_accum
    if recipe.padding_free:   # one packed row per micro-batch
        row_sq = statistics.mean((t / micro) ** 2 * micro for t in steady)
    else:                     # B rows of the micro-batch's padded length
        row_sq = statistics.mean(recipe.batch * (t / micro / recipe.batch) ** 2 * micro for t in steady)
    windows = [w for w in (rec.profile or {}).get(Profile.STEPS, []) if not w.get(W.WARMUP) and w.get(W.GPU_EVENTS)]
    events = statistics.mean(w[W.GPU_EVENTS] for w in windows) / micro if windows else 0.0
    return Reference(name=name, step=step, step_s=step.steady_step_s, shapes=shapes, recipe=recipe,
                     tokens_per_step=tokens, row_sq_per_step=row_sq, events_per_micro=events)


def references(records: list[RunRecord]) -> dict[str, Reference]:
    """The reference runs named in time_model.yaml scaled.references, found among RECORDS."""
    named = transfer.model_constants()["scaled.references"]
    out = {}
    for key, label in named.items():
        rec = next((r for r in records if f"{r.hw}/{r.experiment}/{r.run}" == label), None)
        if rec is None:
            raise InputError(transfer.TIME_MODEL_FILE, f"scaled.references {key}: {label} is not among the runs read")
        out[key] = _reference(rec, label)
    return out


def _memory_proxy(shapes: hardware.ModelShapes, recipe: Recipe) -> float:
    """Bytes-like weight of a token's memory-bound work: layers x one layer's saved bytes (workload.yaml, with
    Liger's), a third more with checkpointing's recomputed forward, + the loss's 12 x vocab."""
    per = workload.activation_bytes_per_token(shapes, "lora", False, recipe.batch, 1, padding_free=recipe.padding_free,
                                             liger=recipe.liger)
    extra = transfer.model_constants()["scaled.recompute_share"] if recipe.gradient_checkpointing else 0.0
    return shapes["num_hidden_layers"] * per.layer_per_token * (1 + extra) + 12 * shapes["vocab_size"]


def _attention_weight(shapes: hardware.ModelShapes, recipe: Recipe) -> float:
    """Attention FLOPs per unit of sum(row length^2): layers x heads x head_dim x passes (forward, two backward,
    and the recompute)."""
    return shapes["num_hidden_layers"] * shapes["num_attention_heads"] * shapes["head_dim"] \
        * (3 + (1 if recipe.gradient_checkpointing else 0))


def overlap(refs: dict[str, Reference], gradient_checkpointing: bool) -> Overlap:
    """serial_s and hidden_s of a micro-step: from the seed (batch 1, host-bound) and bs16 (GPU-bound) references,
    s + c = the seed's micro-step, s + GPU work = bs16's; without checkpointing, c scaled by the kernel count per
    micro-step (best / bs16) and s what the best reference's step leaves."""
    one, big = refs["gc_on_batch1"], refs["gc_on"]
    w1 = one.step_s / one.recipe.grad_accum
    g1 = one.step.busy_s / one.recipe.grad_accum
    w2 = big.step_s / big.recipe.grad_accum
    g2 = big.step.busy_s / big.recipe.grad_accum
    serial = w2 - g2
    hidden = w1 - serial
    if not g1 <= hidden <= g2:
        raise InputError(transfer.TIME_MODEL_FILE, "scaled.references: the seed and bs16 references do not bracket "
                                                   "the host's hidden time (host-bound seed, GPU-bound bs16)")
    layers = int(big.shapes["num_hidden_layers"])
    if gradient_checkpointing:
        return Overlap(serial_s=serial, hidden_s=hidden, layers=layers)
    off = refs["gc_off"]
    hidden_off = hidden * off.events_per_micro / big.events_per_micro
    w3 = off.step_s / off.recipe.grad_accum
    g3 = off.step.busy_s / off.recipe.grad_accum
    return Overlap(serial_s=w3 - max(hidden_off, g3), hidden_s=hidden_off, layers=layers)


def scaled_step(shapes: hardware.ModelShapes, recipe: Recipe, stats: BatchStats, refs: dict[str, Reference],
                label: str = "candidate") -> ProfiledStep:
    """RECIPE's H200 step on the model SHAPES with micro-batches as STATS describes them (tokens the GPU processes,
    rows' squared lengths), from the reference of the same checkpointing setting."""
    ref = refs["gc_on" if recipe.gradient_checkpointing else "gc_off"]
    micro = recipe.grad_accum
    tokens = stats.mean_tokens * micro
    fpt = workload.flops_per_token(shapes, "lora", recipe.gradient_checkpointing, recipe.lora_rank)
    fpt0 = workload.flops_per_token(ref.shapes, "lora", ref.recipe.gradient_checkpointing, ref.recipe.lora_rank)
    scale = {
        "gemm": fpt * tokens / (fpt0 * ref.tokens_per_step),
        "attention": _attention_weight(shapes, recipe) * stats.mean_row_sq * micro
        / (_attention_weight(ref.shapes, ref.recipe) * ref.row_sq_per_step),
        "memory": _memory_proxy(shapes, recipe) * tokens / (_memory_proxy(ref.shapes, ref.recipe)
                                                           * ref.tokens_per_step),
        "communication": 0.0,
    }
    calls = micro * shapes["num_hidden_layers"] / (ref.recipe.grad_accum * ref.shapes["num_hidden_layers"])
    floor_s = transfer.model_constants()["kernel_floor_us"] * 1e-6
    groups = []
    busy = 0.0
    for g in ref.step.groups:
        base, work = transfer.split(g, floor_s)
        seconds = base * calls + work * ref.step.token_scale * scale[g.kind]
        groups.append(KernelGroup(g.name, g.kind, g.calls * calls, seconds))
        busy += seconds
    ov = overlap(refs, recipe.gradient_checkpointing)
    hidden = ov.hidden_s * shapes["num_hidden_layers"] / ov.layers
    wall = micro * (ov.serial_s + max(hidden, busy / micro))
    name = f"{label} (scaled from {transfer.without_host(ref.name)})"
    return ProfiledStep(run=name, hw=ref.step.hw, groups=tuple(groups), windows=0,
                        profiled_wall_s=wall, profiled_busy_s=busy, profiled_tokens=tokens, steady_tokens=tokens,
                        token_scale=1.0, steady_step_s=wall, busy_s=busy, host_s=wall - busy, profile_only_s=wall,
                        gpm_host_s=None, world_size=1)
