"""`swiftbench plan`: the planner's command line (arguments, the table it prints).

The recipe comes from flags or from a run's args.json (`--from-args`; flags given beside it win). Every flag also
takes ms-swift's own name (`--per_device_train_batch_size 4 --lora_rank 8`), so a `swift sft` command line's recipe
flags can be pasted; GPU classes take the names people use ("RTX 4090", "H100 SXM": hardware.yaml aliases). The
table gives, per GPU class, whether the recipe fits (yes, tight or no), the largest per-device batch that surely
would, the step and total time and the cost in the price table's currency (none where it does not fit); the
assumptions follow once, below it.
"""
from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import cast

from analysis.estimate import planner, transfer
from analysis.estimate.jobinputs import JobArgs
from analysis.estimate.planner import METHODS, PlanRow, estimate
from analysis.estimate.prices import DEFAULT_PRICES, price_currency, price_source
from experiments.base import hardware
from experiments.base.errors import InputError

# estimate()'s defaults (the seed recipe's), for what neither a flag nor --from-args gives; the model: default_model()
DEFAULTS: JobArgs = {"method": "lora", "max_length": 2048, "batch": 1, "grad_accum": 16, "samples": 1500,
                     "epochs": 1, "gradient_checkpointing": True, "lora_rank": 8}

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
    p.add_argument("--model", help="known model name or alias (data/models.yaml) or a local folder / "
                                   "config.json (default: the seed recipe's, Qwen/Qwen2.5-7B-Instruct)")
    p.add_argument("--method", "--tuner_type", "--train_type", dest="method", choices=METHODS,
                   help="lora (default), qlora or full (ms-swift's --tuner_type / --train_type)")
    p.add_argument("--quant_bits", "--quant-bits", dest="quant_bits", type=int, choices=(4,),
                   help="4: QLoRA (ms-swift's --quant_bits 4 with --tuner_type lora), the same as --method qlora")
    p.add_argument("--max-length", "--max_length", dest="max_length", type=int,
                   help="ms-swift --max_length (default 2048)")
    p.add_argument("--seq-len", type=int, help="longest sequence a batch really holds (default: --max-length); "
                                                "padding makes every sample of the batch this long")
    p.add_argument("--mean-len", type=int, help="your data's mean sample length in tokens (with --seq-len, its "
                                                 "longest); without any of --lengths/--mean-len/--seq-len the "
                                                 "recipe's data is assumed (mean 127.74, longest 593)")
    p.add_argument("--lengths", metavar="FILE", help="your data's sample lengths in tokens: one per line, or a "
                                                     "JSON list (padded and packed rows are drawn from them)")
    p.add_argument("--padding-free", "--padding_free", dest="padding_free", type=_bool, metavar="true|false",
                   help="ms-swift's --padding_free: the batch's samples in one row, no padding (default false)")
    p.add_argument("--liger", "--use_liger_kernel", dest="liger", type=_bool, metavar="true|false",
                   help="ms-swift's --use_liger_kernel: Liger's kernels and fused cross-entropy (default false)")
    p.add_argument("--attn-impl", "--attn_impl", dest="attn_impl",
                   help="ms-swift's --attn_impl: sdpa (default), flash_attn (no mask: packed rows keep k/v per "
                        "group), eager (not modelled)")
    p.add_argument("--optimize", choices=("time", "cost"),
                   help="search the recipes of global batch 16 (batch x grad-accum 16x1 .. 1x16, padding-free, "
                        "Liger, checkpointing on/off) for the fastest that fits each class; order the classes by "
                        "time or cost")
    p.add_argument("--batch", "--per_device_train_batch_size", dest="batch", type=int,
                   help="per-device batch size (default 1)")
    p.add_argument("--grad-accum", "--gradient_accumulation_steps", dest="grad_accum", type=int,
                   help="gradient accumulation steps (default 16)")
    p.add_argument("--samples", type=int, help="training samples per epoch (default 1500)")
    p.add_argument("--epochs", "--num_train_epochs", dest="epochs", type=int, help="default 1")
    p.add_argument("--hw", help="comma-separated GPU classes, any case (default: the classes data/hardware.yaml "
                                "marks shown, " + ",".join(hardware.shown()) + "; any key of data/hardware.yaml)")
    p.add_argument("--prices", help="YAML mapping hardware key -> price per GPU-hour, and optionally "
                                    "'currency: EUR' (default: the built-in table, data/prices.yaml)")
    p.add_argument("--gradient-checkpointing", "--gradient_checkpointing", dest="gradient_checkpointing", type=_bool,
                   metavar="true|false", help="ms-swift's default is true")
    p.add_argument("--lora-rank", "--lora_rank", dest="lora_rank", type=int, help="default 8")
    p.add_argument("--gpus", type=int, help="data-parallel GPUs (default 1); --batch and --grad-accum are per GPU")
    p.add_argument("--parallel", choices=planner.PARALLEL_LAYOUTS,
                   help="ddp (default), zero2 or zero3: how memory is shared over --gpus (per-GPU memory)")
    p.add_argument("--results", help="results folder with measured runs (default: ./results if present)")
    p.add_argument("--json", action="store_true", help="print a JSON list, one object per GPU class")
    p.add_argument("--checks", action="store_true",
                   help="print the time model's checks on the committed runs (each H200 run's steady step given back "
                        "from its profile; the published cross-GPU ratios predicted, with their errors and the band) "
                        "and exit")
    p.set_defaults(func=run)


def recipe(args) -> JobArgs:
    """estimate()'s keyword arguments: the defaults, then --from-args, then the flags given."""
    out = DEFAULTS.copy()
    if args.from_args:
        out.update(planner.args_from_run(args.from_args, need_model=not args.model))
    method = args.method
    if args.quant_bits == 4:
        if method not in (None, "lora", "qlora"):
            raise InputError(None, f"--quant_bits 4 is QLoRA: it goes with --tuner_type lora, not {method}")
        method = "qlora"
    given = {"model": args.model, "method": method, "max_length": args.max_length, "seq_len": args.seq_len,
             "mean_len": args.mean_len, "batch": args.batch, "grad_accum": args.grad_accum, "samples": args.samples,
             "epochs": args.epochs, "gradient_checkpointing": args.gradient_checkpointing,
             "lora_rank": args.lora_rank, "gpus": args.gpus, "parallel": args.parallel,
             "padding_free": args.padding_free, "liger": args.liger, "lengths": args.lengths,
             "attn_impl": args.attn_impl}
    if args.lengths is not None or args.mean_len is not None or args.seq_len is not None:
        # the user's data: the run's lengths (from --from-args) do not describe it
        out.pop("packed_len", None)
        out.pop("mean_len", None)
        out.pop("seq_len", None)
    out.update(cast(JobArgs, {k: v for k, v in given.items() if v is not None}))  # given's keys are JobArgs' names
    if not out.get("model"):
        out["model"] = default_model()
    return out


def default_model() -> str:
    """The seed recipe's model (experiments/recipes.yaml base), as the other defaults are the seed recipe's."""
    from experiments.recipes import recipes

    return str(recipes.load()["base"]["model"])


def run(args) -> int:
    if args.checks:
        _print_checks(args.results or "results", args.json)
        return 0
    if args.optimize:
        return _run_optimize(args)
    plans = estimate(hw=args.hw, prices=args.prices, results=args.results, **recipe(args))
    if args.json:
        print(json.dumps([asdict(p) for p in plans], indent=2, allow_nan=False))
        return 0
    _print(plans, args.prices)
    return 0


def _run_optimize(args) -> int:
    """--optimize: the job's fields from the flags (and --from-args), the recipe's own flags ignored (searched)."""
    import dataclasses

    from analysis.estimate.optimize import optimize

    job = recipe(args)
    if job.get("method", "lora") != "lora":
        raise InputError(None, "--optimize searches LoRA recipes (bf16); QLoRA and full fine-tuning are not searched")
    plan = optimize(job["model"], samples=job["samples"], epochs=job["epochs"], max_length=job["max_length"],
                    seq_len=job.get("seq_len"), mean_len=job.get("mean_len"), lengths=job.get("lengths"),
                    lora_rank=job["lora_rank"], hw=args.hw, prices=args.prices, results=args.results,
                    objective=args.optimize)
    if args.json:
        print(json.dumps(dataclasses.asdict(plan), indent=2, allow_nan=False))
        return 0
    _print_optimize(plan)
    return 0


def _print_optimize(plan) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:
        console = Console(width=200)
    t = Table(title=f"{plan.model}: {plan.samples} samples x {plan.epochs} epoch(s), global batch 16; best recipe per "
                    f"class by {plan.objective}")
    currency = next((ch.currency for ch in plan.choices if ch.currency), "USD")
    for col in ("GPU", "GiB", "recipe (swift sft flags added to the seed recipe)", "needs GiB", "epoch (band)",
                "start-up", "job GPU-hours", f"job cost ({currency})", "time from", "fit"):
        t.add_column(col, justify="left" if col in ("GPU", "time from", "fit") or col.startswith("recipe")
                     else "right")
    for ch in plan.choices:
        b = ch.best
        if b is None:
            t.add_row(ch.hw, f"{ch.capacity_gib:.1f}", "nothing tried fits", "-", "-", "-", "-", "-", "-",
                      f"0 of {ch.tried}")
            continue
        t.add_row(ch.hw, f"{ch.capacity_gib:.1f}", b.flags, f"{b.needs_gib:.1f}",
                  _banded(b.epoch_s, b.low_s, b.high_s), _hours(b.startup_s), f"{b.gpu_hours:.3g}",
                  "-" if b.cost is None else f"{b.cost:.2f}", b.time_kind or "-", f"{ch.fitting} of {ch.tried}")
    console.print(t)
    say = []
    if plan.soonest:
        say.append(f"{plan.soonest} finishes soonest" + (" (its band clear of every other class's)"
                                                          if plan.sure_soonest else " (bands overlap: not sure)"))
    if plan.cheapest:
        say.append(f"{plan.cheapest} costs least" + (" (clear of the others' bands)" if plan.sure_cheapest
                                                     else " (bands overlap: not sure)"))
    console.print("; ".join(say) or "no class fits", highlight=False, markup=False)
    console.print(f"data: {plan.data}; prices: {plan.prices}; time from: measured (a committed run), profiled (a "
                  "committed H200 profile carried over), scaled (built from the reference profiles): "
                  "docs/time-model.md; GPU-hours and cost: the job (start-up + epoch); padding-free rows with SDPA "
                  "need the plugin the flags name (`swiftbench plugin`; ms-swift refuses them otherwise) or "
                  "--attn_impl flash_attn", highlight=False, markup=False)


def _unit(seconds: float) -> tuple[float, str, str]:
    """(divisor, unit, number format) that _hours prints SECONDS in."""
    if seconds >= 3600:
        return 3600.0, "h", ".2f"
    return (60.0, "min", ".1f") if seconds >= 60 else (1.0, "s", ".0f")


def _hours(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    div, unit, fmt = _unit(seconds)
    return f"{seconds / div:{fmt}} {unit}"


def _banded(seconds: float | None, low: float | None, high: float | None) -> str:
    """A time with its band in the time's unit: 1.6 min (1.4-1.7); a measured time (no band) alone."""
    if seconds is None:
        return "-"
    if low is None or high is None or low == high:
        return _hours(seconds)
    div, unit, fmt = _unit(seconds)
    return f"{seconds / div:{fmt}} {unit} ({low / div:{fmt}}-{high / div:{fmt}})"


def _total(p: PlanRow) -> str:
    """The total time, with its band where it is modelled."""
    return _banded(p.total_time_s, p.total_low_s, p.total_high_s)


def _logged(p: PlanRow) -> str:
    if p.logged_peak_gib is None:
        return "-"
    return f"{p.logged_peak_gib:.1f}" + ("*" if p.logged_peak_gib < p.peak_mem_gib else "")


def _print(plans: list[PlanRow], prices: str | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:
        console = Console(width=160)
    first = plans[0]
    title = (f"{first.model} {first.method}: seq-len {first.seq_len} x batch {first.batch} x "
             f"grad-accum {first.grad_accum}, {first.steps} steps"
             + (f", {first.gpus} GPUs ({first.parallel}; memory per GPU, time at perfect scaling)"
                if first.gpus > 1 or first.parallel != "ddp" else ""))
    currency = price_currency(prices) if prices else None
    cost_col = f"cost ({currency})" if currency else "cost"
    t = Table(title=title)
    for col in ("GPU", "memory GiB", "needs GiB", "fits", "largest batch", "logged peak GiB", "step s", "epoch",
                "start-up", "job GPU-hours", f"job {cost_col}", "time source"):
        t.add_column(col, justify="left" if col in ("GPU", "fits", "time source") else "right")
    for p in plans:
        fits = p.fit != "no"  # a job that does not fit gets no time and no cost
        t.add_row(p.hw, f"{p.capacity_gib:.1f}", f"{p.needs_gib:.1f}",
                  {"yes": "yes", "tight": "tight", "no": "NO"}[p.fit], str(p.max_batch), _logged(p),
                  f"{p.step_time_s:.3g}" if fits else "-", _total(p) if fits else "-",
                  _hours(p.startup_s) if fits else "-",
                  f"{p.total_hours * p.gpus:.3g}" if fits and p.total_hours is not None else "-",
                  "-" if p.cost is None else f"{p.cost:.2f}", p.time_source)
    console.print(t)
    if not prices:
        console.print(f"job cost: the job's GPU-hours (start-up + epoch) x the built-in price table "
                      f"({DEFAULT_PRICES.name}: "
                      f"{price_source(DEFAULT_PRICES) or 'list prices'}), in USD; --prices FILE for yours",
                      highlight=False, markup=False)
    else:
        console.print(f"job cost: the job's GPU-hours (start-up + epoch) x the price per GPU-hour of {prices}, in "
                      + (currency if currency else "its currency (it names none: add 'currency: EUR')"),
                      highlight=False, markup=False)
    console.print(f"largest batch: the largest per-device batch whose needs fit the GPU with every sample "
                  f"{first.seq_len} tokens long (the longest sample)", highlight=False, markup=False)
    if any(p.fit == "tight" for p in plans):
        console.print("tight: the live peak fits, the fragmentation margin does not; under a memory cap such runs "
                      "both trained and ran out of memory: try it, or take the largest batch", highlight=False,
                      markup=False)
    if any(p.fit == "no" for p in plans):
        console.print("NO: not even the live peak fits, so no time and no cost", highlight=False, markup=False)
    for p in plans:
        if p.fit == "yes":
            continue
        tries = p.suggestions
        text = "; ".join(f"{s.change} (needs {s.needs_gib:.1f} GiB)" for s in tries[:4])
        console.print(f"{p.hw}: fits with " + text if text else
                      f"{p.hw}: nothing tried fits (checkpointing, Liger, padding-free, a smaller batch, QLoRA)",
                      highlight=False, markup=False)
    if any(p.logged_peak_gib is not None and p.logged_peak_gib < p.peak_mem_gib for p in plans):
        console.print(f"* capped at the GPU's memory: on a GPU with room to spare ms-swift would log "
                      f"{first.peak_mem_gib:.1f} GiB (cached blocks); here the allocator frees them instead",
                      highlight=False, markup=False)
    b = first.breakdown
    parts = ", ".join(f"{k.removesuffix('_gib').replace('_', ' ')} {v:.2f}" for k, v in asdict(b).items())
    detail = ", ".join(f"{k.replace('_', ' ')} {v:.2f}" for k, v in first.activations_detail_gib.items())
    console.print(f"breakdown (GiB): {parts}", highlight=False)
    console.print(f"activations (GiB): {detail}", highlight=False)
    for p in plans:
        if p.time_note:
            console.print(f"{p.hw}: {p.time_note}", highlight=False, markup=False)
        if p.fit_basis.startswith("measured"):  # the memory model's verdict overruled by a committed full epoch
            console.print(f"{p.hw}: fits, {p.fit_basis} (the memory model says {p.needs_gib:.1f} GiB)",
                          highlight=False, markup=False)
    console.print("assumptions (the same for every GPU class):", highlight=False)
    for line in first.assumptions:
        console.print(f"  assumption: {line}", highlight=False, markup=False)


def _print_checks(results: str, as_json: bool) -> None:
    """The time model's checks (analysis.estimate.time_checks), as a table or JSON."""
    import dataclasses

    from analysis.estimate.time_checks import run_checks

    checks = run_checks(results)
    if as_json:
        out = dataclasses.asdict(checks)
        out["anchors"] = [{**dataclasses.asdict(a), "error": a.error} for a in checks.anchors]
        out["given_back"] = [{**dataclasses.asdict(g), "profile_only_error": g.profile_only_error,
                              "model_error": g.model_error} for g in checks.given_back]
        out["measured"] = [{**dataclasses.asdict(m), "step_error": m.step_error, "epoch_error": m.epoch_error,
                            "within_band": m.within_band} for m in checks.measured]
        print(json.dumps(out, indent=2, allow_nan=False))
        return
    print("(1) each committed H200 run's steady step, given back from its own profile (seconds per optimizer step)")
    print(f"{'run':58} {'steady':>7} {'profiled':>8} {'profile':>8} {'err':>6} {'GPU':>6} {'host':>6} {'GPM host':>8}"
          f" {'model':>7}")
    for g in checks.given_back:
        gpm = f"{g.gpm_host_s:8.3f}" if g.gpm_host_s is not None else f"{'-':>8}"
        print(f"{g.run:58} {g.steady_s:7.3f} {g.profiled_wall_s:8.3f} {g.profile_only_s:8.3f} "
              f"{g.profile_only_error:+6.1%} {g.busy_s:6.3f} {g.host_s:6.3f} {gpm} {g.model_s:7.3f}")
    errs = [abs(g.profile_only_error) for g in checks.given_back]
    if errs:
        print(f"profile alone vs steady median: {len(errs)} runs, |error| up to {max(errs):.1%} (the profiled steps'"
              " host time carries the tracer's cost and two steps' own batches); the model keeps the GPU work of the"
              " profile at the steady steps' tokens and takes the host's part from the steady median, so it gives"
              " the median back (model column)")
    print()
    print(f"(2) published same-source ratios, predicted from {checks.reference_run} (bs16: padded rows, "
          "checkpointing on)")
    rp = checks.reference_parts
    print(f"its steady step on the H200: {rp.total_s:.3f} s = GEMM {rp.gemm_s:.3f} + attention {rp.attention_s:.3f} + "
          f"memory-bound {rp.memory_s:.3f} ({rp.memory_s / rp.gpu_s:.0%} of the GPU's) + host {rp.host_s:.3f}")
    print(f"{'source':10} {'pair (faster / slower)':42} {'published':>9} {'predicted':>9} {'error':>7}  kind")
    for a in checks.anchors:
        print(f"{a.source:10} {a.pair:42} {a.published:9.3f} {a.predicted:9.3f} {a.error:+7.1%}  "
              + ("comparable LoRA" if a.comparable else "proxy workload"))
    lo, hi = checks.band
    dlo, dhi = checks.band_in_data
    print(f"band: errors {lo:+.1%} .. {hi:+.1%}; a predicted time T stands for T / {1 + hi:.3f} .. T / {1 + lo:.3f}"
          f" (time_model.yaml: {dlo:+.1%} .. {dhi:+.1%})")
    print()
    print("(3) the scaled model (a recipe without a profile of its own, built from the reference profiles) against "
          "each committed single-GPU eager LoRA H200 run's steady median")
    print(f"{'run':58} {'host':12} {'recipe':30} {'steady':>7} {'scaled':>7} {'error':>7}")
    for r in checks.scaled:
        print(f"{r.run:58} {r.host or '-':12} {r.recipe:30} {r.steady_s:7.3f} {r.scaled_s:7.3f} {r.error:+7.1%}"
              + ("" if r.counted else "  (not counted: not the recipes' 4 workers, or group_by_length)"))
    counted = [r.error for r in checks.scaled if r.counted]
    slo, shi = checks.scaled_band
    dlo, dhi = checks.scaled_band_in_data
    if counted:
        print(f"scaled model on the H200: {len(counted)} runs, errors {min(counted):+.1%} .. {max(counted):+.1%}; "
              f"with the cross-GPU band: {slo:+.1%} .. {shi:+.1%} (time_model.yaml scaled.band: {dlo:+.1%} .. "
              f"{dhi:+.1%})")
    _print_memory_check(results)
    _print_measured_check(checks)
    _print_reproductions(checks)
    _print_family_bands(checks)


def _print_family_bands(checks) -> None:
    """The band per architecture family (checks 2 and 6), derived now beside time_model.yaml's family_band."""
    print()
    print("the band per GPU family: the published checks that involve a class of the family (2 and 6; a figure that "
          "is no check of this workload left out), never narrower than the cross-GPU band")
    from experiments.base import hardware

    shown = {transfer.family(k) for k in hardware.shown()}
    for fam in sorted({*checks.family_bands, *checks.family_bands_in_data, *shown}):
        got, data = checks.family_bands.get(fam), checks.family_bands_in_data.get(fam)
        now = f"{got[0]:+.1%} .. {got[1]:+.1%}" if got else "no published check"
        yaml_text = f"{data[0]:+.1%} .. {data[1]:+.1%}" if data else "none (the cross-GPU band assumed)"
        print(f"{fam:8} checks: {now:22} time_model.yaml family_band: {yaml_text}")


def _print_reproductions(checks) -> None:
    """(6) The published workloads run here (time_checks.reproductions): the reproduction's own difference."""
    runs = checks.reproduced
    print()
    print("(6) published LoRA workloads reproduced with their own software (torchtune 0.6.1's recipe, dummy weights, "
          "stand-in tokenizer, local alpaca rows): steady tokens/s (median of the steady steps, their range) beside "
          "the anchor's figure for the same GPU")
    print(f"{'workload':34} {'hw':6} {'steps':>5} {'tokens/s':>9} {'range':>13} {'published':>9} {'diff':>7}  basis")
    for a in runs:
        pub = f"{a.published:9.0f}" if a.published is not None else f"{'-':>9}"
        diff = f"{a.vs_published:+7.1%}" if a.vs_published is not None else f"{'-':>7}"
        print(f"{a.workload:34} {a.hw or '-':6} {a.n_steady:5d} {a.tokens_per_s_padded:9.0f} "
              f"{a.tokens_per_s_padded_min:6.0f}-{a.tokens_per_s_padded_max:<6.0f} {pub} {diff}  "
              f"incl. padding ({a.tokens_per_s_real:.0f} real); {a.label}")
    if not runs:
        print("none under results/anchors/")
        return
    _print_carried(checks.carried)


def _print_carried(carried) -> None:
    """(6) Each anchor run's profile carried to the anchor's other GPUs (time_checks.carried)."""
    print("the model from each anchor run to the anchor's other GPUs: its profiled kernels x the spec-sheet ratio of "
          "their kind from the run's own class, host time kept, tokens per step unchanged; checked on the ratio to "
          "the run's class where the anchor publishes that class, else on tokens/s. 'needs': the share of the GPU's "
          "dense bf16 peak the published figure takes at the run's FLOPs per token (above 100 %: not this workload, "
          "no check); 'band err': the error as the band counts it (the faster class's throughput over the slower's, "
          "model against published)")
    print(f"{'run':58} {'GPU':10} {'model tok/s':>11} {'published':>9} {'needs':>6} {'model ratio':>11} "
          f"{'published':>9} {'error':>7} {'band err':>8}  basis")
    for c in carried:
        if c.missing:
            print(f"{c.run:58} {c.missing}")
            continue
        for p in c.predictions:
            pub = f"{p.published:9.0f}" if p.published is not None else f"{'-':>9}"
            pub_ratio = f"{p.published_ratio:9.3f}" if p.published_ratio is not None else f"{'-':>9}"
            err = f"{p.error:+7.1%}" if p.error is not None else f"{'-':>7}"
            band_err = f"{p.band_error:+8.1%}" if p.band_error is not None else f"{'-':>8}"
            basis = {"ratio": f"ratio to {p.src}", "absolute": "tokens/s", None: "no figure"}[p.basis]
            if not p.feasible:
                basis = (f"NOT A CHECK: the figure needs {p.published_use:.0%} of the card's dense bf16 peak at "
                         f"{(p.flops_per_token or 0) / 1e9:.1f} GFLOPs/token (another configuration ran)")
            needs = f"{p.published_use:6.0%}" if p.published_use is not None else f"{'-':>6}"
            print(f"{p.run:58} {p.dst:10} {p.tokens_per_s:11.0f} {pub} {needs} {p.ratio:11.3f} {pub_ratio} {err} "
                  f"{band_err}  "
                  f"{basis}" + (f"; {p.note}" if p.note else ""))


def _print_measured_check(checks) -> None:
    """(5) The model against a recipe's own runs on a class it predicts (time_checks.measured_checks)."""
    print()
    print("(5) this project's recipes measured on a class the model predicts: the model's step carried from the "
          "recipe's profiled H200 run beside the run's steady median, and the class's measured epoch beside the "
          "modelled one (a ratio across hosts: the model keeps the profiled run's host time)")
    print(f"{'run':46} {'steady':>7} {'model':>7} {'error':>7} {'epoch':>7} {'modelled (band)':>22} {'error':>7}")
    for m in checks.measured:
        ep = f"{m.epoch_s:7.1f}" if m.epoch_s is not None else f"{'-':>7}"
        mod = (f"{m.predicted_epoch_s:.1f} ({m.predicted_low_s:.1f}-{m.predicted_high_s:.1f})"
               if m.predicted_epoch_s is not None and m.predicted_low_s is not None and m.predicted_high_s is not None
               else "-")
        err = f"{m.epoch_error:+7.1%}" if m.epoch_error is not None else f"{'-':>7}"
        band = {True: "  in band", False: "  OUTSIDE the band", None: ""}[m.within_band]
        print(f"{m.run:46} {m.steady_s:7.3f} {m.predicted_step_s:7.3f} {m.step_error:+7.1%} {ep} {mod:>22} {err}"
              + band)
    if not checks.measured:
        print("none: no recipe with a profiled H200 run has a run on another class")
        return
    steps = [m.step_error for m in checks.measured]
    epochs = [m.epoch_error for m in checks.measured if m.epoch_error is not None]
    print(f"{len(steps)} runs: step errors {min(steps):+.1%} .. {max(steps):+.1%}"
          + (f"; epoch errors {min(epochs):+.1%} .. {max(epochs):+.1%}" if epochs else "")
          + "; the band the answer prints: " + "; ".join(
              f"{hw} {lo:+.1%} .. {hi:+.1%}" for hw, (lo, hi) in
              sorted({hw: transfer.band("profiled", hw) for hw in {m.run.split("/")[0] for m in checks.measured}}
                     .items())))


def _print_memory_check(results: str) -> None:
    """(4) The memory model against every committed run's logged peak, at the micro-batch each run met."""
    from analysis.estimate.validate import estimates_vs_measurements

    df = estimates_vs_measurements(results)
    rows = [r for r in df.to_dict("records") if isinstance(r.get("seen_ratio"), float) and r["seen_ratio"] == r[
        "seen_ratio"]]
    print()
    print("(4) memory: every committed run's logged peak (GiB) beside the estimate at the micro-batch it met "
          "(under an allocator cap, at most the cap)")
    print(f"{'run':58} {'flags':30} {'tokens':>7} {'cap':>4} {'logged':>7} {'estimate':>8} {'error':>7}")
    for r in rows:
        flags = [n for n, on in (("padding-free", r["padding_free"]), ("Liger", r["liger"])) if on]
        flags.append("GC on" if r["gradient_checkpointing"] else "GC off")
        cap = f"{r['cap_gib']:4.0f}" if r["cap_gib"] == r["cap_gib"] and r["cap_gib"] is not None else f"{'-':>4}"
        label = f"{r['per_device_batch']:.0f}x{r['grad_accum']:.0f} " + ", ".join(flags)
        print(f"{r['hw'] + '/' + r['experiment'] + '/' + r['run']:58} {label:30} {r['seen_tokens']:7.0f} {cap} "
              f"{r['measured_peak_gib']:7.2f} {r['seen_estimate_gib']:8.2f} {r['seen_ratio'] - 1:+7.1%}"
              + ("" if r["within_20pct"] else "  MISS"))
    misses = [r for r in rows if not r["within_20pct"]]
    print(f"{len(rows) - len(misses)} of {len(rows)} runs within 20 %; misses: "
          + (", ".join(f"{r['experiment']}/{r['run']}" for r in misses) or "none"))
