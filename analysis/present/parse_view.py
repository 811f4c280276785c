"""`swiftbench parse PATH [--json]`: one run's (or every run's under a folder) facts and measurements, printed."""
from __future__ import annotations

import json
import math

from analysis.measure.summary import run_summary
from analysis.parse.results import records_under

SHOWN = [
    ("log_format", "log format"), ("swift_version", "ms-swift"), ("complete", "complete"),
    ("diverged", "diverged"), ("global_steps", "steps"), ("max_steps", "max steps"),
    ("samples_per_step", "samples/step"), ("micro_step_time_ms", "ms/micro-step"),
    ("samples_per_s", "samples/s"), ("tokens_per_s", "tokens/s"), ("peak_mem_gib", "peak GiB"),
    ("final_train_loss", "final train loss"), ("final_eval_loss", "final eval loss"),
    ("final_eval_token_acc", "eval token acc"), ("mfu", "MFU"),
]


def register(sub) -> None:
    p = sub.add_parser("parse", help="parse ms-swift run folders or logging.jsonl files into metrics")
    p.add_argument("path", help="a run folder (vN-...), a parent of several, or a logging.jsonl file")
    p.add_argument("--json", action="store_true", help="print one JSON object per run (a list)")
    p.add_argument("--intervals", action="store_true", help="keep the per-interval step times in --json")
    p.set_defaults(func=run)


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def run(args) -> int:
    results = [run_summary(rec, with_intervals=args.intervals) for rec in records_under(args.path)]
    if args.json:
        print(json.dumps(_json_safe(results), indent=2, allow_nan=False))
        return 0
    from rich.console import Console
    from rich.table import Table

    console = Console()
    for r in results:
        t = Table(title=r["path"], show_header=False)
        st = r["step_time_s"]
        t.add_row("step time (s, steady)", f"median {_fmt(st['median'])}, mean {_fmt(st['mean'])}, "
                  f"95% CI [{_fmt(st['ci95_low'])}, {_fmt(st['ci95_high'])}], n={st['n_intervals']}")
        for key, label in SHOWN:
            t.add_row(label, _fmt(r.get(key)))
        for w in r["warnings"]:
            t.add_row("warning", w)
        console.print(t)
    return 0


def _json_safe(obj):
    """JSON has no NaN or infinity: such values (a diverged loss, a broken memory reading) print as null."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [_json_safe(v) for v in obj]
    return obj
