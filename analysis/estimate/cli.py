"""`swiftbench plan`: the planner's command line (arguments, the table it prints).

The recipe comes from flags or from a run's args.json (`--from-args`; flags given beside it win). The table gives, per
GPU class, whether the recipe fits, the largest per-device batch that would, the step and total time and the cost in
the price table's currency; the assumptions follow once, below it.
"""
from __future__ import annotations

import argparse
import json

from analysis.estimate import planner
from analysis.estimate.planner import DEFAULT_HW, METHODS, estimate
from experiments.base.errors import InputError

# estimate()'s defaults, for what neither a flag nor --from-args gives
DEFAULTS = {"method": "lora", "max_length": 2048, "batch": 1, "grad_accum": 16, "samples": 1500, "epochs": 1,
            "gradient_checkpointing": True, "lora_rank": 8}

# ---------------------------------------------------------------------------------------------------- CLI


def _bool(text: str) -> bool:
    t = str(text).strip().lower()
    if t in ("true", "yes", "1", "on"):
        return True
    if t in ("false", "no", "0", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _one_line_error(self: argparse.ArgumentParser, message: str):
    self.exit(2, f"{self.prog}: error: {message}\n")


def register(sub) -> None:
    p = sub.add_parser("plan", help="will a fine-tune fit on each GPU class, how long, what cost",
                       description=planner.__doc__.split("\n\n")[0])
    p.error = _one_line_error.__get__(p)  # argparse's own errors: one line, exit 2, like InputError
    p.add_argument("--from-args", metavar="ARGS_JSON", help="a run's args.json (ms-swift's): model, method, "
                   "max-length, batch, grad-accum, epochs, checkpointing and rank from it, and the epoch's samples and "
                   "longest sample from the log beside it; flags given as well override it")
    p.add_argument("--model", help="known model name (analysis/data/models.yaml) or a local folder / config.json "
                                   "(required without --from-args)")
    p.add_argument("--method", choices=METHODS, help="lora (default), qlora or full")
    p.add_argument("--max-length", type=int, help="ms-swift --max_length (default 2048)")
    p.add_argument("--seq-len", type=int, help="longest sequence a batch really holds (default: --max-length); "
                                                "padding makes every sample of the batch this long")
    p.add_argument("--mean-len", type=int, help="mean tokens per sample the GPU processes, padding included, for "
                                                 "the time estimate (default: --seq-len)")
    p.add_argument("--batch", type=int, help="per-device batch size (default 1)")
    p.add_argument("--grad-accum", type=int, help="gradient accumulation steps (default 16)")
    p.add_argument("--samples", type=int, help="training samples per epoch (default 1500)")
    p.add_argument("--epochs", type=int, help="default 1")
    p.add_argument("--hw", help=f"comma-separated GPU classes, any case (default {','.join(DEFAULT_HW)}; any key of "
                                "analysis/data/hardware.yaml)")
    p.add_argument("--prices", help="YAML mapping hardware key -> price per GPU-hour, and optionally "
                                    "'currency: EUR' (no prices are built in)")
    p.add_argument("--gradient-checkpointing", type=_bool, metavar="true|false",
                   help="ms-swift's default is true")
    p.add_argument("--lora-rank", type=int, help="default 8")
    p.add_argument("--gpus", type=int, help="data-parallel GPUs (default 1); --batch and --grad-accum are per GPU")
    p.add_argument("--parallel", choices=planner.PARALLEL_LAYOUTS,
                   help="ddp (default), zero2 or zero3: how memory is shared over --gpus (per-GPU memory)")
    p.add_argument("--results", help="results folder with measured runs (default: ./results if present)")
    p.add_argument("--json", action="store_true", help="print a JSON list, one object per GPU class")
    p.set_defaults(func=run)


def recipe(args) -> dict:
    """estimate()'s keyword arguments: the defaults, then --from-args, then the flags given."""
    out = dict(DEFAULTS)
    if args.from_args:
        out.update(planner.args_from_run(args.from_args))
    given = {"model": args.model, "method": args.method, "max_length": args.max_length, "seq_len": args.seq_len,
             "mean_len": args.mean_len, "batch": args.batch, "grad_accum": args.grad_accum, "samples": args.samples,
             "epochs": args.epochs, "gradient_checkpointing": args.gradient_checkpointing,
             "lora_rank": args.lora_rank, "gpus": args.gpus, "parallel": args.parallel}
    out.update({k: v for k, v in given.items() if v is not None})
    if not out.get("model"):
        raise InputError(None, "--model or --from-args is required")
    return out


def run(args) -> int:
    plans = estimate(hw=args.hw, prices=args.prices, results=args.results, **recipe(args))
    if args.json:
        print(json.dumps(plans, indent=2, allow_nan=False))
        return 0
    _print(plans, args.prices)
    return 0


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f} h" if seconds >= 3600 else f"{seconds / 60:.1f} min"


def _logged(p: dict) -> str:
    if p["logged_peak_gib"] is None:
        return "-"
    return f"{p['logged_peak_gib']:.1f}" + ("*" if p["logged_peak_gib"] < p["peak_mem_gib"] else "")


def _print(plans: list[dict], prices: str | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:
        console = Console(width=160)
    first = plans[0]
    title = (f"{first['model']} {first['method']}: seq-len {first['seq_len']} x batch {first['batch']} x "
             f"grad-accum {first['grad_accum']}, {first['steps']} steps"
             + (f", {first['gpus']} GPUs ({first['parallel']}; memory per GPU, time at perfect scaling)"
                if first["gpus"] > 1 or first["parallel"] != "ddp" else ""))
    currency = planner.price_currency(prices) if prices else None
    cost_col = f"cost ({currency})" if currency else "cost"
    t = Table(title=title)
    for col in ("GPU", "memory GiB", "needs GiB", "fits", "largest batch", "logged peak GiB", "step s", "total",
                "GPU-hours", cost_col, "time source"):
        t.add_column(col, justify="left" if col in ("GPU", "fits", "time source") else "right")
    for p in plans:
        t.add_row(p["hw"], f"{p['capacity_gib']:.1f}", f"{p['needs_gib']:.1f}",
                  "yes" if p["fits"] else "NO", str(p["max_batch"]), _logged(p), f"{p['step_time_s']:.3g}",
                  _hours(p["total_time_s"]), f"{p['total_hours'] * p['gpus']:.3g}",
                  "-" if p["cost"] is None else f"{p['cost']:.2f}", p["time_source"])
    console.print(t)
    if not prices:
        console.print("cost: no prices given, none are built in: --prices FILE (YAML 'h100: 2.5' per GPU-hour, "
                      "optionally 'currency: EUR'); GPU-hours x your price is the cost", highlight=False, markup=False)
    else:
        console.print(f"cost: GPU-hours x the price per GPU-hour of {prices}, in "
                      + (currency if currency else "its currency (it names none: add 'currency: EUR')"),
                      highlight=False, markup=False)
    console.print(f"largest batch: the largest per-device batch whose needs fit the GPU with every sample "
                  f"{first['seq_len']} tokens long (--seq-len)", highlight=False, markup=False)
    if any(p["logged_peak_gib"] is not None and p["logged_peak_gib"] < p["peak_mem_gib"] for p in plans):
        console.print(f"* capped at the GPU's memory: on a GPU with room to spare ms-swift would log "
                      f"{first['peak_mem_gib']:.1f} GiB (cached blocks); here the allocator frees them instead",
                      highlight=False, markup=False)
    b = first["breakdown"]
    parts = ", ".join(f"{k.removesuffix('_gib').replace('_', ' ')} {v:.2f}" for k, v in b.items())
    detail = ", ".join(f"{k.replace('_', ' ')} {v:.2f}" for k, v in first["activations_detail_gib"].items())
    console.print(f"breakdown (GiB): {parts}", highlight=False)
    console.print(f"activations (GiB): {detail}", highlight=False)
    for p in plans:
        if p["time_note"]:
            console.print(f"{p['hw']}: {p['time_note']}", highlight=False, markup=False)
    console.print("assumptions (the same for every GPU class):", highlight=False)
    for line in first["assumptions"]:
        console.print(f"  assumption: {line}", highlight=False, markup=False)
