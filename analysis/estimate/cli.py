"""`swiftbench plan`: the planner's command line (arguments, the table it prints)."""
from __future__ import annotations

import argparse
import json

from analysis.estimate.planner import DEFAULT_HW, METHODS, estimate
from analysis.estimate import planner

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
    p.add_argument("--model", required=True,
                   help="known model name (analysis/data/models.yaml) or a local folder / config.json")
    p.add_argument("--method", default="lora", choices=METHODS)
    p.add_argument("--max-length", type=int, default=2048, help="ms-swift --max_length (default 2048)")
    p.add_argument("--seq-len", type=int, help="longest sequence a batch really holds (default: --max-length); "
                                                "padding makes every sample of the batch this long")
    p.add_argument("--mean-len", type=int, help="mean tokens per sample the GPU processes, padding included, for "
                                                 "the time estimate (default: --seq-len)")
    p.add_argument("--batch", type=int, default=1, help="per-device batch size (default 1)")
    p.add_argument("--grad-accum", type=int, default=16, help="gradient accumulation steps (default 16)")
    p.add_argument("--samples", type=int, default=1500, help="training samples per epoch (default 1500)")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--hw", help=f"comma-separated GPU classes (default {','.join(DEFAULT_HW)}; any key of "
                                "analysis/data/hardware.yaml)")
    p.add_argument("--prices", help="YAML mapping hardware key -> price per GPU-hour (no prices are built in)")
    p.add_argument("--gradient-checkpointing", type=_bool, default=True, metavar="true|false",
                   help="ms-swift's default is true")
    p.add_argument("--lora-rank", type=int, default=8)
    p.add_argument("--results", help="results folder with measured runs (default: ./results if present)")
    p.add_argument("--json", action="store_true", help="print a JSON list, one object per GPU class")
    p.set_defaults(func=run)


def run(args) -> int:
    plans = estimate(args.model, method=args.method, max_length=args.max_length, seq_len=args.seq_len,
                     batch=args.batch, grad_accum=args.grad_accum, samples=args.samples, epochs=args.epochs,
                     hw=args.hw, prices=args.prices, gradient_checkpointing=args.gradient_checkpointing,
                     lora_rank=args.lora_rank, results=args.results, mean_len=args.mean_len)
    if args.json:
        print(json.dumps(plans, indent=2, allow_nan=False))
        return 0
    _print(plans)
    return 0


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f} h" if seconds >= 3600 else f"{seconds / 60:.1f} min"


def _logged(p: dict) -> str:
    if p["logged_peak_gib"] is None:
        return "-"
    return f"{p['logged_peak_gib']:.1f}" + ("*" if p["logged_peak_gib"] < p["peak_mem_gib"] else "")


def _print(plans: list[dict]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:
        console = Console(width=160)
    first = plans[0]
    title = (f"{first['model']} {first['method']}: seq-len {first['seq_len']} x batch {first['batch']} x "
             f"grad-accum {first['grad_accum']}, {first['steps']} steps")
    t = Table(title=title)
    for col in ("GPU", "memory GiB", "needs GiB", "fits", "logged peak GiB", "step s", "total", "cost", "time source"):
        t.add_column(col, justify="left" if col in ("GPU", "fits", "time source") else "right")
    for p in plans:
        t.add_row(p["hw"], f"{p['capacity_gib']:.1f}", f"{p['needs_gib']:.1f}",
                  "yes" if p["fits"] else "NO", _logged(p), f"{p['step_time_s']:.3g}",
                  _hours(p["total_time_s"]), "-" if p["cost"] is None else f"{p['cost']:.2f}", p["time_source"])
    console.print(t)
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
    for line in first["assumptions"]:
        console.print(f"assumption: {line}", highlight=False, markup=False)
