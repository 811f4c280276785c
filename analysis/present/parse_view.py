"""`swiftbench parse PATH... [--json]`: one run's facts and measurements, or one row per run for several.

One run prints its facts one per line; several runs (a folder of runs, or several paths) print a table, one row per
run, and `--json` gives the full records. A run the runner marked failed (OOM, crash, interrupted, timeout) says
`complete: false` and its status whatever its log holds: ms-swift may write its closing summary line even when a step
ran out of memory, so the log alone would call such a run complete. MFU prints as a percentage, as in the report.
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from analysis.measure.summary import run_summary
from analysis.measure.summary_row import RunSummary
from analysis.parse import bench
from analysis.parse.logs import LOG_NAME
from analysis.parse.record import RunRecord
from analysis.parse.results import STATUS_NAME, find_folders, read_runs, records_under
from experiments.base.errors import SKIPPED_EXIT
from experiments.base.paths import relative
from experiments.base.userfiles import present, shown

SHOWN = [
    ("log_format", "log format"), ("swift_version", "ms-swift"), ("complete", "complete"),
    ("diverged", "diverged"), ("global_steps", "steps"), ("max_steps", "max steps"),
    ("samples_per_step", "samples/step"), ("micro_step_time_ms", "ms/micro-step"),
    ("samples_per_s", "samples/s"), ("tokens_per_s", "tokens/s"), ("peak_mem_gib", "peak GiB"),
    ("final_train_loss", "final train loss"), ("final_eval_loss", "final eval loss"),
    ("final_eval_token_acc", "eval token acc"), ("mfu", "MFU"),
]
ROW = [("status", "status"), ("complete", "complete"), ("global_steps", "steps"), ("ms_per_step", "ms/step"),
       ("tokens_per_s", "tokens/s"), ("peak_mem_gib", "peak GiB"), ("mfu", "MFU"),
       ("final_eval_loss", "eval loss")]


def register(sub) -> None:
    p = sub.add_parser("parse", help="parse ms-swift run folders or logging.jsonl files into metrics")
    p.add_argument("path", nargs="+", help="run folders (vN-...), parents of several, or logging.jsonl files")
    p.add_argument("--json", action="store_true", help="print one JSON object per run (a list): the full records")
    p.add_argument("--intervals", action="store_true", help="keep the per-interval step times in --json")
    p.set_defaults(func=run)


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _fmt_key(key: str, value) -> str:
    if key == "mfu" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:.2%}"
    if key == "status" and value is not None:
        return str(value)
    return _fmt(value)


def summary(rec: RunRecord, with_intervals: bool) -> RunSummary:
    """run_summary with the runner's verdict on top: a run marked failed is not complete, whatever its log holds."""
    out = run_summary(rec, with_intervals=with_intervals)
    out["log_complete"] = out["complete"]  # the log's own end-of-training line
    out["complete"] = bool(out["complete"] and rec.ok)
    out["path"] = relative(out["path"]) if out.get("path") else out.get("path")
    return out


def _status(r: RunSummary, width: int | None = None) -> str:
    """'failed (OOM: CUDA out of memory)'; cut to WIDTH characters of the reason in a table row."""
    why = str(r.get("failure") or "")
    if width and len(why) > width:
        why = why[:width - 1] + "…"
    return r["status"] + (f" ({why})" if why else "")


def records(path: str | Path, skipped: list[tuple[Path, str]] | None = None) -> list[RunRecord]:
    """The runs under PATH (records_under), and the runner's folders that failed before ms-swift wrote a log. With
    SKIPPED, a bad run folder of a tree is noted there and left out (records_under)."""
    path = Path(path)
    no_log: list[Path] = []
    if path.is_dir():
        found = find_folders(path)
        no_log = [d for d in found.folders if present(d / STATUS_NAME) and not present(d / LOG_NAME)]
        if no_log and len(no_log) == len(found.folders):
            if skipped is not None:
                skipped += found.skipped
            return read_runs(no_log, skipped)
    recs = records_under(path, skipped) + read_runs(no_log, skipped)
    return sorted(recs, key=lambda r: str(r.path))


def benchmark_folder(path: str | Path) -> bool:
    """A benchmark's folder beside the runs (results/<hw>/allreduce/<id>/: allreduce.json, no log, no run.json):
    `swiftbench tables` reads it; it is not a training run."""
    path = Path(path)
    return path.is_dir() and (path / bench.FILE).is_file() and not (path / LOG_NAME).exists() \
        and not (path / STATUS_NAME).exists()


def run(args) -> int:
    skipped: list[tuple[Path, str]] = []
    paths = list(args.path)
    if len(paths) > 1:  # `swiftbench parse results/h200/*/*` names the benchmark folders too: said, not an error
        for path in [p for p in paths if benchmark_folder(p)]:
            print(f"swiftbench: not a run: {relative(Path(path))} (a benchmark folder: {bench.FILE}; "
                  "swiftbench tables reads it)", file=sys.stderr)
        paths = [p for p in paths if not benchmark_folder(p)] or paths
    recs = [rec for path in paths for rec in records(path, skipped)]
    for folder, why in skipped:  # a bad run folder of a tree: said, left out, and the exit code says so
        print(shown(f"swiftbench: skipped {relative(folder)}: {why}"), file=sys.stderr)
    done = SKIPPED_EXIT if skipped else 0
    results = [summary(rec, args.intervals) for rec in recs]
    if args.json:
        write_json(_json_safe(results), sys.stdout)
        return done
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:  # a pipe or a file: wide enough that a row stays one line
        console = Console(width=max(160, 110 + max((len(str(r["path"])) for r in results), default=0)))
    if len(results) > 1:
        t = Table(title=f"{len(results)} runs (--json: the full records)")
        t.add_column("run")
        for _, label in ROW:
            t.add_column(label, justify="left" if label in ("status", "complete") else "right")
        for r in results:
            med = r["step_time_s"]["median"]
            values = {**r, "status": _status(r, 32), "ms_per_step": med * 1000 if med else None}
            t.add_row(r["path"], *(_fmt_key(k, values.get(k)) for k, _ in ROW))
        console.print(t)
        return done
    for r in results:
        t = Table(title=r["path"], show_header=False)
        t.add_row("status", _status(r))
        st = r["step_time_s"]
        t.add_row("step time (s, steady)", f"median {_fmt(st['median'])}, mean {_fmt(st['mean'])}, "
                  f"95% CI [{_fmt(st['ci95_low'])}, {_fmt(st['ci95_high'])}], n={st['n_intervals']}")
        for key, label in SHOWN:
            t.add_row(label, _fmt_key(key, r.get(key)))
        if r["log_complete"] and not r["complete"]:
            t.add_row("note", "the log has its end-of-training line, but the runner marked the run failed")
        for w in r["warnings"]:
            t.add_row("warning", w)
        console.print(t)
    return done


def write_json(results: list[dict], out) -> None:
    """json.dumps(RESULTS, indent=2) written to OUT a field at a time, a long list (a curve, the intervals) on one
    line by the C encoder: a 200 MB log's record is ~120 MB of JSON, which json.dumps with indent builds from
    millions of pieces held at once in pure Python (indent has no C encoder), a peak of gigabytes."""
    def text(value) -> str:
        if isinstance(value, (list, tuple)) and len(value) > 100:
            return json.dumps(value, allow_nan=False)
        return json.dumps(value, indent=2, allow_nan=False).replace("\n", "\n    ")

    if not results:
        out.write("[]\n")
        return
    out.write("[\n")
    for n, rec in enumerate(results):
        if not rec:
            out.write("  {}")
        else:
            out.write("  {\n")
            for m, (key, value) in enumerate(rec.items()):
                out.write(f"    {json.dumps(key)}: {text(value)}{',' if m < len(rec) - 1 else ''}\n")
            out.write("  }")
        out.write(",\n" if n < len(results) - 1 else "\n")
    out.write("]\n")


def _json_safe(obj):
    """JSON has no NaN or infinity: such values (a diverged loss, a broken memory reading) print as null. A list or
    tuple with none of them is returned as it is (a long log's curves are not copied)."""
    if obj.__class__ is float:
        return obj if math.isfinite(obj) else None
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        items = [_json_safe(v) for v in obj]
        return obj if all(a is b for a, b in zip(items, obj)) else items
    if isinstance(obj, (set, frozenset)):
        return [_json_safe(v) for v in obj]
    return obj
