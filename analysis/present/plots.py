"""The report's figures (seaborn on matplotlib's Agg backend), one function per figure.

Every function takes a tidy DataFrame that the report's sections (analysis.present.report) build, plus a title
and the labels of the numbers it shows (dummy weights, offline data samples, cut run, forced hardware label,
ms-swift version, published); the labels are drawn into the figure itself, under the axes, so a PNG copied
out of the report still says how its numbers were obtained. `save` writes the PNG and closes the figure.

Stays whole: every figure shares setup, the labels drawn under the axes and save, and each figure is a short function of
its own.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

MEASURED_COLOR = "#1f77b4"
PUBLISHED_COLOR = "#bbbbbb"
DPI = 110


def setup() -> None:
    sns.set_theme(style="whitegrid", context="notebook", font_scale=0.9)


def labels_text(items: list[tuple[str, list[str]]]) -> str:
    """'Labels: a; b. Only <name>: c.' from (name, labels) pairs: labels shared by all first, then the rest."""
    items = [(n, list(ls)) for n, ls in items]
    if not items:
        return "Labels: none (no data)."
    common = [lab for lab in items[0][1] if all(lab in ls for _, ls in items[1:])]
    parts = ["Labels: " + ("; ".join(common) if common else "none shared by all") + "."]
    for name, ls in items:
        extra = [lab for lab in ls if lab not in common]
        if extra:
            parts.append(f"{name}: {'; '.join(extra)}.")
    return " ".join(parts)


def _finish(fig, title: str, labels: str) -> plt.Figure:
    fig.suptitle(title, fontsize=12, fontweight="bold")
    width_chars = int(fig.get_figwidth() * 14)
    fig.text(0.01, -0.01, textwrap.fill(labels, width_chars), ha="left", va="top", fontsize=8.5,
             color="#333333")
    return fig


def save(fig, path: str | Path) -> Path:
    """Write FIG as PNG (the caption under the axes included) and close it."""
    path = Path(path)
    fig.savefig(path, dpi=DPI, bbox_inches="tight", facecolor="white")
    plt.close(fig)
    return path


def _plain_log_ticks(axis) -> None:
    fmt = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:,.0f}")
    axis.set_major_formatter(fmt)
    axis.set_minor_formatter(matplotlib.ticker.FuncFormatter(
        lambda v, _: f"{v:,.0f}" if f"{v:.0e}"[0] in "25" else ""))


def _empty(title: str, labels: str, message: str) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(8, 2), layout="constrained")
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center")
    return _finish(fig, title, labels)


# ------------------------------------------------------------------------------------------- speed


def _hbars(ax, df: pd.DataFrame, value: str, low: str, high: str, fmt: str, annotate: str | None = None,
           invert: bool = True, colors: list[str] | None = None, annotate_fmt: str = "  (x{:.2f})"):
    """Horizontal bars of VALUE per df["name"] with LOW-HIGH whiskers and the value written beside each bar (plus
    ANNOTATE's value in ANNOTATE_FMT); colour by df["source"] (measured / published) unless COLORS is given."""
    y = np.arange(len(df))
    if colors is None:
        colors = [PUBLISHED_COLOR if s == "published" else MEASURED_COLOR for s in df["source"]]
    vals = df[value].astype(float).to_numpy()
    ax.barh(y, np.nan_to_num(vals), color=colors, hatch=None, edgecolor="white")
    for yi, (v, lo, hi) in enumerate(zip(vals, df[low], df[high])):
        if np.isfinite(lo if lo is not None else np.nan) and np.isfinite(hi if hi is not None else np.nan):
            ax.plot([lo, hi], [yi, yi], color="black", lw=1.6)
            ax.plot([lo, lo], [yi - 0.18, yi + 0.18], color="black", lw=1.2)
            ax.plot([hi, hi], [yi - 0.18, yi + 0.18], color="black", lw=1.2)
        if np.isfinite(v):
            x = max(v, hi) if hi is not None and np.isfinite(hi) else v
            text = fmt.format(v)
            if annotate is not None:
                a = df[annotate].iloc[yi]
                if a is not None and np.isfinite(a):
                    text += annotate_fmt.format(a)
            ax.text(x, yi, "  " + text, va="center", ha="left", fontsize=8)
        else:
            ax.text(0, yi, "  not legible / not measured", va="center", ha="left", fontsize=8, color="#666")
    ax.set_yticks(y, df["name"])
    if invert:
        ax.invert_yaxis()
    finite = vals[np.isfinite(vals)]
    highs = pd.to_numeric(df[high], errors="coerce").to_numpy(float)
    top = np.nanmax(np.concatenate([finite, highs[np.isfinite(highs)], [1.0]]))
    ax.set_xlim(0, top * 1.45)


PREDICTED_COLOR = "#f4a259"
SOURCE_COLORS = {"measured": MEASURED_COLOR, "predicted": PREDICTED_COLOR, "published": PUBLISHED_COLOR}


def answer_figure(df: pd.DataFrame, title: str, labels: str) -> plt.Figure:
    """ms per sample of one recipe per GPU class, a dot per measured, predicted and published row (log scale): the
    one unit all three sources share.

    df columns: gpu, source (measured | predicted | published), host, ms_per_sample."""
    d = df[df["ms_per_sample"].notna()].copy()
    if d.empty:
        return _empty(title, labels, "no time per sample")
    gpus = list(dict.fromkeys(d["gpu"]))
    fig, ax = plt.subplots(figsize=(5.4, max(2.6, 0.42 * len(gpus) + 1.3)), layout="constrained")
    offsets = {"measured": -0.2, "predicted": 0.0, "published": 0.2}
    for source, color in SOURCE_COLORS.items():
        part = d[d["source"] == source]
        y = [gpus.index(g) + offsets[source] for g in part["gpu"]]
        ax.scatter(part["ms_per_sample"].astype(float), y, s=46, color=color, label=source, zorder=3,
                   marker={"measured": "o", "predicted": "D", "published": "s"}[source], edgecolor="#333", lw=0.5)
    ax.set_yticks(range(len(gpus)), gpus)
    ax.invert_yaxis()
    ax.set_xscale("log")
    lo, hi = float(d["ms_per_sample"].min()), float(d["ms_per_sample"].max())
    ax.set_xlim(lo / 1.5, hi * 1.5)
    _plain_log_ticks(ax.xaxis)
    ax.set_xlabel("ms per sample (log; lower is faster)")
    ax.legend(fontsize=8, loc="lower right", framealpha=0.95)
    fig.suptitle(title, fontsize=10, fontweight="bold")
    fig.text(0.01, -0.01, textwrap.fill(labels, 80), ha="left", va="top", fontsize=7.5, color="#333333")
    return fig


def speed_bars(df: pd.DataFrame, title: str, labels: str, baseline_note: str) -> plt.Figure:
    """ms per sample and tokens/s per row (measured and published), with 95 % intervals: one unit on each axis (the
    article's "step" is one sample, so published and measured bars are both per sample).

    df columns: name, source (measured | published), ms, ms_lo, ms_hi, tok, tok_lo, tok_hi, speedup.
    """
    if df.empty:
        return _empty(title, labels, "no runs with a step time")
    h = max(2.5, 0.42 * len(df) + 1.4)
    fig, axes = plt.subplots(1, 2, figsize=(13, h), layout="constrained", sharey=True)
    _hbars(axes[0], df, "ms", "ms_lo", "ms_hi", "{:,.0f} ms", annotate="speedup")
    axes[0].set(xlabel="ms per sample (median step / samples; bar: 95 % CI)", ylabel="")
    _hbars(axes[1], df, "tok", "tok_lo", "tok_hi", "{:,.0f}", invert=False)  # the y axis is shared
    axes[1].set(xlabel="tokens per second (trained tokens; bar: 95 % CI)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=MEASURED_COLOR), plt.Rectangle((0, 0), 1, 1, color=PUBLISHED_COLOR)]
    axes[0].legend(handles, ["measured here", "published (article), not measured here"], loc="lower right",
                   fontsize=8, framealpha=0.95)
    return _finish(fig, title, labels + " " + baseline_note)


def scaling_bars(df: pd.DataFrame, title: str, labels: str) -> plt.Figure:
    """Scaling efficiency per N-GPU run with its 95 % range, and seed 000's thresholds (85 %: an interconnect
    bottleneck; 95 %: its 8-GPU claim) as lines.

    df columns: name, efficiency, efficiency_low, efficiency_high (fractions)."""
    if df.empty:
        return _empty(title, labels, "no N-GPU run with a 1-GPU run on the same host")
    d = df.copy()
    d["source"] = "measured"
    fig, ax = plt.subplots(figsize=(9, max(2.2, 0.5 * len(d) + 1.3)), layout="constrained")
    _hbars(ax, d, "efficiency", "efficiency_low", "efficiency_high", "{:.0%}")
    for x, text, ls in ((0.85, "85 %: below it seed 000 calls the interconnect a bottleneck", "--"),
                        (0.95, "95 %: seed 000's claim for its 8-GPU clusters", ":")):
        ax.axvline(x, color="#b23a48", lw=1.2, ls=ls, label=text)
    ax.legend(fontsize=7.5, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2, frameon=False)
    ax.set_xlim(0, max(1.6, float(pd.to_numeric(d["efficiency_high"], errors="coerce").max() or 1) * 1.15))
    ax.xaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0))
    ax.set_xlabel("scaling efficiency = tokens/s at N GPUs / (N x tokens/s at 1 GPU), same host (bar: 95 % range)")
    return _finish(fig, title, labels)


def step_time_spread(df: pd.DataFrame, title: str, labels: str) -> plt.Figure:
    """Every logged interval's seconds per optimizer step, per run: the run-to-run and within-run spread.

    df columns: name, step_time_ms, interval (kept | the reason it is excluded).
    """
    if df.empty:
        return _empty(title, labels, "no step intervals")
    h = max(2.5, 0.5 * df["name"].nunique() + 1.4)
    fig, ax = plt.subplots(figsize=(11, h), layout="constrained")
    kept = df[df["interval"] == "kept"]
    order = list(dict.fromkeys(df["name"]))
    if not kept.empty:
        sns.boxplot(data=kept, x="step_time_ms", y="name", order=order, ax=ax, color="#d9e6f2", showfliers=False,
                    width=0.5)
    sns.stripplot(data=df, x="step_time_ms", y="name", order=order, hue="interval", ax=ax, size=4, jitter=0.15,
                  palette={k: c for k, c in zip(
                      ["kept", "first interval", "warm-up", "eval/save", "profiled"],
                      [MEASURED_COLOR, "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"])})
    ax.set(xlabel="ms per optimizer step of each logged interval (log scale; box: steady-state intervals)",
           ylabel="")
    ax.set_xscale("log")
    _plain_log_ticks(ax.xaxis)
    ax.legend(title="interval", fontsize=8, title_fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _finish(fig, title, labels)


def repeats_strip(df: pd.DataFrame, title: str, labels: str) -> plt.Figure:
    """Each run's epoch as a point per recipe and harness (left), coloured by host, marked by its round; the host
    probe before and after each run beside it (right): a slow run can be told from a slow recipe.

    df columns: recipe (experiment and harness), host, round, epoch_s, probe_before, probe_after.
    """
    full = df.dropna(subset=["epoch_s"])
    if full.empty:
        return _empty(title, labels, "no full-epoch runs")
    order = sorted(full["recipe"].unique())
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, max(2.6, 0.45 * len(order) + 1.6)), layout="constrained",
                                 gridspec_kw={"width_ratios": [3, 2]})
    sns.stripplot(data=full, x="epoch_s", y="recipe", order=order, hue="host", ax=ax, size=6,
                  jitter=0.12)
    for _, r in full.iterrows():  # the round beside each point
        if pd.notna(r["round"]):
            ax.annotate(str(r["round"]), (r["epoch_s"], order.index(r["recipe"])), fontsize=7,
                        xytext=(3, 3), textcoords="offset points")
    ax.set(xlabel="epoch s (train_runtime; the number: its round)", ylabel="")
    ax.legend(title="host", fontsize=8, title_fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=4)
    probes = full.melt(id_vars=["recipe", "host"], value_vars=["probe_before", "probe_after"], var_name="when",
                       value_name="ns").dropna(subset=["ns"])
    if not probes.empty:
        sns.stripplot(data=probes, x="ns", y="recipe", order=order, hue="when", ax=bx, size=5, jitter=0.12,
                      palette={"probe_before": "#1f77b4", "probe_after": "#ff7f0e"})
        bx.legend(title="host probe", fontsize=8, title_fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.22),
                  ncol=2)
    bx.set(xlabel="host probe, Python loop ns/iter (higher: slower)", ylabel="")
    bx.set_yticklabels([])
    return _finish(fig, title, labels)


def published_vs_measured(df: pd.DataFrame, title: str, labels: str) -> plt.Figure:
    """Published step times beside ours per micro-step and per optimizer step (log scale).

    df columns: name, ms, kind.
    """
    if df.empty:
        return _empty(title, labels, "nothing to compare")
    h = max(2.5, 0.4 * len(df) + 1.4)
    fig, ax = plt.subplots(figsize=(11, h), layout="constrained")
    palette = {"published step": PUBLISHED_COLOR, "our micro-step": "#6baed6", "our optimizer step": MEASURED_COLOR}
    sns.barplot(data=df, x="ms", y="name", hue="kind", dodge=False, ax=ax, palette=palette, orient="h")
    for i, v in enumerate(df["ms"]):
        ax.text(v, i, f"  {v:,.0f} ms", va="center", fontsize=8)
    ax.set_xscale("log")
    ax.set_xlim(df["ms"].min() / 2, df["ms"].max() * 4)
    _plain_log_ticks(ax.xaxis)
    ax.set(xlabel="milliseconds (log scale)", ylabel="")
    ax.legend(fontsize=8, loc="upper right")
    return _finish(fig, title, labels)


# ------------------------------------------------------------------------------------------ memory


def memory_bars(df: pd.DataFrame, capacities: list[tuple[float, str]], title: str, labels: str) -> plt.Figure:
    """Peak reserved GiB per run with a vertical line at each GPU class's capacity.

    df columns: name, peak_gib; capacities: (GiB, 'A10 / RTX 4090 24 GB') pairs.
    """
    if df.empty or df["peak_gib"].notna().sum() == 0:
        return _empty(title, labels, "no run logged its memory")
    h = max(2.5, 0.45 * len(df) + 1.6)
    fig, ax = plt.subplots(figsize=(11, h), layout="constrained")
    y = np.arange(len(df))
    ax.barh(y, df["peak_gib"].fillna(0), color=MEASURED_COLOR)
    for yi, v in enumerate(df["peak_gib"]):
        if pd.notna(v):
            ax.text(v, yi, f" {v:.2f} GiB", va="center", fontsize=8)
    ax.set_yticks(y, df["name"])
    ax.invert_yaxis()
    colors = sns.color_palette("dark", len(capacities))
    for (cap, name), c in zip(capacities, colors):
        ax.axvline(cap, color=c, ls="--", lw=1.4, label=name)
    ax.legend(title="capacity", loc="lower right", fontsize=8, title_fontsize=8, framealpha=0.95)
    ax.set_xlim(0, max([c for c, _ in capacities] + [float(df["peak_gib"].max())]) * 1.08)
    ax.set(xlabel="peak GPU memory reserved by torch (GiB, ms-swift's memory(GiB))", ylabel="")
    return _finish(fig, title, labels)


# ------------------------------------------------------------------------------------- convergence


LINE_STYLES = ["-", (0, (5, 2)), (0, (1, 1.5)), (0, (6, 2, 1, 2)), (0, (3, 1, 1, 1, 1, 1))]
EVAL_MARKERS = ["o", "s", "^", "D", "v", "P"]


def loss_curves(df: pd.DataFrame, title: str, labels: str, same_as: dict[str, str] | None = None,
                cut: set[str] | None = None) -> plt.Figure:
    """Train loss as a line and eval loss as markers only, one panel (a row) per experiment, one colour per run.
    Runs of one
    recipe that logged the same losses would hide each other: each later one is drawn thinner and dashed over the
    earlier, its eval markers smaller, and the legend says which it coincides with. A cut run ends in a bar at its
    last step.

    df columns: experiment, name, split (train | eval), step, loss; same_as: name -> the run whose losses it repeats;
    cut: names of cut runs."""
    if df.empty:
        return _empty(title, labels, "no loss logged")
    same_as, cut = same_as or {}, cut or set()
    exps = list(dict.fromkeys(df["experiment"]))
    # one panel a row, its legend beside it (a page-wide figure, shown near its natural size); each panel as tall
    # as its legend: a legend below a narrow panel collapsed the constrained layout (a UserWarning on the page)
    entries = max(df[df["experiment"] == e]["name"].nunique() for e in exps) + 2
    panel_h = max(3.6, 0.16 * entries + 0.8)
    fig, axes = plt.subplots(len(exps), 1, figsize=(12.4, panel_h * len(exps)), layout="constrained",
                             squeeze=False)
    for ax, exp in zip(axes.flat, exps):
        part = df[df["experiment"] == exp]
        names = list(dict.fromkeys(part["name"]))
        colors = sns.color_palette("tab10", max(len(names), 3))
        one_hw = part["hw"].nunique() == 1 if "hw" in part else False
        short = {n: (part.loc[part["name"] == n, "run"].iloc[0] if one_hw and "run" in part else n) for n in names}
        for i, name in enumerate(names):
            run = part[part["name"] == name]
            tr = run[run["split"] == "train"].sort_values("step")
            ev = run[run["split"] == "eval"].sort_values("step")
            color, width = colors[i % len(colors)], max(1.0, 3.0 - 0.7 * i)
            label = short[name] + (f" (coincides with {short.get(same_as[name], same_as[name])})"
                                   if name in same_as else "") + (" (cut)" if name in cut else "")
            if not tr.empty:
                ax.plot(tr["step"], tr["loss"], ls=LINE_STYLES[i % len(LINE_STYLES)], lw=width, color=color,
                        label=label, alpha=0.9)
            if not ev.empty:
                ax.scatter(ev["step"], ev["loss"], marker=EVAL_MARKERS[i % len(EVAL_MARKERS)], s=max(14, 60 - 14 * i),
                           facecolor="none", edgecolor=color, linewidths=1.4, zorder=3,
                           label=None if not tr.empty else label)
            if name in cut and not tr.empty:
                last = tr.iloc[-1]
                ax.plot([last["step"]], [last["loss"]], marker="|", ms=16, mew=2.2, color=color, zorder=4)
                ax.annotate(f"cut: {int(last['step'])}", (last["step"], last["loss"]), textcoords="offset points",
                            xytext=(3, 6 + 9 * (i % 3)), fontsize=7, color=color)
        handles, texts = ax.get_legend_handles_labels()
        handles += [plt.Line2D([], [], ls="none", marker="o", mfc="none", color="#333"),
                    plt.Line2D([], [], ls="none", marker="|", ms=12, mew=2, color="#333")]
        texts += ["eval loss (markers only)", "a cut run stops here"]
        ax.legend(handles, texts, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), ncol=1,
                  framealpha=0.95)
        hws = ", ".join(sorted(part["hw"].dropna().unique())) if "hw" in part else ""
        ax.set(title=f"experiment {exp}" + (f" ({hws})" if hws else ""), xlabel="optimizer step",
               ylabel="loss (line: train)")
    return _finish(fig, title, labels)


# ------------------------------------------------------------------------------------- utilisation


def utilisation_timeline(df: pd.DataFrame, windows: dict[str, float | None], board_power: dict[str, float | None],
                         title: str, labels: str) -> plt.Figure:
    """GPU utilisation, power and SM clock over time, one column per run; the training window shaded.

    df columns: name, t_rel_s (seconds since training started), util_gpu_pct, power_w, sm_clock_mhz;
    windows: name -> training seconds; board_power: name -> board limit in W.
    """
    if df.empty:
        return _empty(title, labels, "no NVML samples")
    names = list(dict.fromkeys(df["name"]))
    # one row per run, one column per metric: a page-wide figure however many runs (a column per run made an
    # 8,000-pixel-wide strip shown at a tenth of its size)
    fig, axes = plt.subplots(len(names), 3, figsize=(12, 1.7 * len(names) + 1.3), layout="constrained",
                             squeeze=False, sharey="col")
    metrics = [("util_gpu_pct", "GPU utilisation %"), ("power_w", "power W"), ("sm_clock_mhz", "SM clock MHz")]
    for j, name in enumerate(names):
        part = df[df["name"] == name]
        for i, (col, ylab) in enumerate(metrics):
            ax = axes[j][i]
            ax.plot(part["t_rel_s"], part[col], lw=0.9, color=MEASURED_COLOR)
            if col == "util_gpu_pct":
                ax.set_ylim(-3, 105)
            if windows.get(name):
                ax.axvspan(0, windows[name], color="#2ca02c", alpha=0.12, lw=0)
            if col == "power_w" and board_power.get(name):
                ax.axhline(board_power[name], color="#d62728", ls="--", lw=1)
                ax.text(part["t_rel_s"].min(), board_power[name], " board limit", va="bottom", fontsize=7,
                        color="#d62728")
            if j == 0:
                ax.set_title(ylab, fontsize=10)
            if i == 0:
                ax.set_ylabel(name, fontsize=8, rotation=0, ha="right", va="center")
            if j == len(names) - 1:
                ax.set_xlabel("seconds since training started (green: training)")
    return _finish(fig, title, labels)


def recipe_bars(df: pd.DataFrame, seed_tps: float | None, factor: float, title: str, labels: str) -> plt.Figure:
    """Measured tokens/s per throughput recipe with its 95 % range; colour: does its eval loss stay in the seed band.

    df columns: recipe, tokens_per_s, low, high, steady_x_seed, loss_counts."""
    if df.empty:
        return _empty(title, labels, "no throughput recipe runs")
    df = df.sort_values("tokens_per_s", ascending=False, ignore_index=True)
    df["name"] = df["label"] if "label" in df else df["recipe"]
    fig, ax = plt.subplots(figsize=(11, max(2.8, 0.45 * len(df) + 1.6)), layout="constrained")
    palette = {True: "#2b8a3e", False: "#c92a2a", None: "#868e96"}
    colors = [palette[None if c is None or (isinstance(c, float) and np.isnan(c)) else bool(c)]
              for c in df["loss_counts"]]
    _hbars(ax, df, "tokens_per_s", "low", "high", "{:,.0f}", annotate="steady_x_seed", colors=colors,
           annotate_fmt="  ({:.1f}x seed)")
    if seed_tps:
        ax.axvline(seed_tps, color="#495057", ls=":", lw=1.2)
        ax.axvline(seed_tps * factor, color="#1c7ed6", ls="--", lw=1.2)
        ax.text(seed_tps * factor, -0.6, f" {factor:g}x the seed recipe", color="#1c7ed6", fontsize=8)
        ax.text(seed_tps, -0.6, " seed recipe", color="#495057", fontsize=8)
    ax.set_xlabel("measured tokens per second (real tokens of the steady steps / their time; bar: 95 % bootstrap)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=palette[k]) for k in (True, False, None)]
    ax.legend(handles, ["eval loss inside the seed band", "eval loss OUTSIDE the seed band", "no band at its step"],
              loc="lower right", fontsize=8, framealpha=0.95)
    return _finish(fig, title, labels)


def capacity_points(df: pd.DataFrame, title: str, labels: str) -> plt.Figure:
    """Per capacity search (a cap, and any other setting such as QLoRA or padded rows): probed per-device batches,
    trained (filled) or OOM (cross), with the peak reserved memory.

    df columns: cap_gib, batch, outcome, peak_gib; setting (the row's label; default: the cap)."""
    if df.empty:
        return _empty(title, labels, "no capacity probes")
    df = df.copy()
    if "setting" not in df:
        df["setting"] = [f"{c:g} GiB cap" for c in df["cap_gib"]]
    settings = (df.sort_values(["cap_gib", "setting"], ascending=[False, False])
                .drop_duplicates("setting")["setting"].tolist())
    fig, ax = plt.subplots(figsize=(10, 1.0 + 0.75 * len(settings)), layout="constrained")
    for i, setting in enumerate(settings):
        sub = df[df["setting"] == setting].sort_values("batch")
        ok, oom = sub[sub["outcome"] == "trained"], sub[sub["outcome"] == "OOM"]
        ax.scatter(ok["batch"], [i] * len(ok), s=80, color="#2b8a3e", zorder=3)
        ax.scatter(oom["batch"], [i] * len(oom), s=80, marker="x", color="#c92a2a", zorder=3)
        for j, (_, r) in enumerate(ok.iterrows()):  # neighbours alternate above / below so their labels stay apart
            ax.annotate(f"{r['peak_gib']:.1f} GiB", (r["batch"], i), textcoords="offset points",
                        xytext=(0, 9 if j % 2 == 0 else -15), ha="center", fontsize=7)
    ax.set_yticks(range(len(settings)), settings)
    ax.set_xscale("log", base=2)
    _plain_log_ticks(ax.xaxis)
    ax.set_xlabel("per-device batch (longest samples first; green: trained, red x: CUDA out of memory)")
    ax.set_ylim(-0.6, len(settings) - 0.4)
    return _finish(fig, title, labels)


def host_time_bars(df: pd.DataFrame, title: str, labels: str) -> plt.Figure:
    """Per profiled run: the main thread's milliseconds per step by group (stacked), the profiled step's wall time
    (the bar's end) and the GPU-busy milliseconds (a black tick): how much of the step the host holds up, and in what.

    df columns: run, group, ms, wall_ms, gpu_busy_ms (analysis.judge.audit.frames.host_time_frame)."""
    if df.empty:
        return _empty(title, labels, "no run profiled with host stacks")
    runs = list(dict.fromkeys(df["run"]))
    groups = [g for g in dict.fromkeys(df["group"]) if df.loc[df["group"] == g, "ms"].sum() > 0]
    colors = dict(zip(groups, sns.color_palette("tab10", len(groups))))
    fig, ax = plt.subplots(figsize=(11, 1.8 + 0.7 * len(runs)), layout="constrained")
    for i, run in enumerate(runs):
        sub = df[df["run"] == run].set_index("group")
        left = 0.0
        for g in groups:
            ms = float(sub["ms"].get(g, 0.0) or 0.0)
            if ms <= 0:
                continue
            ax.barh(i, ms, left=left, color=colors[g], edgecolor="white", height=0.6)
            if ms / float(sub["wall_ms"].iloc[0]) >= 0.08:
                ax.text(left + ms / 2, i, f"{ms:.0f}", ha="center", va="center", fontsize=8, color="white")
            left += ms
        busy = sub["gpu_busy_ms"].iloc[0]
        if busy is not None and not (isinstance(busy, float) and np.isnan(busy)):
            ax.plot([busy, busy], [i - 0.38, i + 0.38], color="black", lw=2.5)
            ax.text(busy, i + 0.42, f"GPU busy {busy:.0f} ms", ha="center", va="top", fontsize=8)
        ax.text(float(sub["wall_ms"].iloc[0]), i, f"  {float(sub['wall_ms'].iloc[0]):.0f} ms step", va="center",
                fontsize=8)
    ax.set_yticks(range(len(runs)), runs)
    ax.invert_yaxis()
    ax.set_xlabel("milliseconds of a profiled optimizer step (main thread, by the library frame it was in; "
                  "stack samples)")
    ax.set_xlim(0, float(df["wall_ms"].max()) * 1.2)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[g]) for g in groups]
    ax.legend(handles, groups, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, framealpha=0.95)
    return _finish(fig, title, labels)


def _panels(df: pd.DataFrame, height: float, per_row: int = 3):
    """(figure, its axes, names): one panel per df["name"] in order of appearance, PER_ROW a row, unused axes
    hidden."""
    names = list(dict.fromkeys(df["name"]))
    n = len(names)
    ncols = min(per_row, n)
    nrows = -(-n // ncols)
    fig, grid = plt.subplots(nrows, ncols, figsize=(max(6.0, 5.2 * ncols), height * nrows), layout="constrained",
                             squeeze=False)
    for ax in grid.flat[n:]:
        ax.set_visible(False)
    return fig, grid, names


def gpm_step_bars(df: pd.DataFrame, title: str, labels: str) -> plt.Figure:
    """Per run, every optimizer step's wall time split into GPU-busy (dark) and host (light) seconds from the GPM
    counters, steady steps solid and the others faded, profiled steps marked: where the step time goes, step by step.

    df columns: name, step, busy_s, host_s, steady, profiled (analysis.measure.profile.gpm_step_rows + name), and
    steady_busy_frac (steady_share's gpm_busy_frac of the run, printed in its panel). Three panels a row."""
    if df.empty:
        return _empty(title, labels, "no run has GPM counters (gpm.jsonl)")
    fig, grid, names = _panels(df, 3.6)
    busy_c, host_c = sns.color_palette("deep")[0], sns.color_palette("pastel")[0]
    for ax, name in zip(grid.flat, names):
        part = df[df["name"] == name]
        alpha = np.where(part["steady"], 1.0, 0.35)
        for x, b, h, a in zip(part["step"], part["busy_s"], part["host_s"], alpha):
            ax.bar(x, b, color=busy_c, alpha=a, width=0.8)
            ax.bar(x, h, bottom=b, color=host_c, alpha=a, width=0.8, edgecolor=busy_c, linewidth=0.3)
        for x, top in zip(part.loc[part["profiled"], "step"], (part["busy_s"] + part["host_s"])[part["profiled"]]):
            ax.text(x, top, "P", ha="center", va="bottom", fontsize=7)
        frac = part["steady_busy_frac"].iloc[0] if "steady_busy_frac" in part else None
        if frac is not None and not pd.isna(frac):
            ax.text(0.99, 0.97, f"steady steps: GPU active {frac:.0%}", transform=ax.transAxes, ha="right",
                    va="top", fontsize=8)
        ax.set_title(name, fontsize=9)
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.set_xlabel("optimizer step (faded: warm-up, eval/save or profiled; P: profiled)")
    for row in grid:
        row[0].set_ylabel("seconds (dark: GPU active, light: host)")
    return _finish(fig, title, labels)


# ------------------------------------------------------------------------------------------- quick runs


def quick_pair_steps(df: pd.DataFrame, title: str, labels: str) -> plt.Figure:
    """Per quick/full pair, the seconds of each steady interval both runs have (the same batches): the quick run
    solid, the full run made after it dashed; with GPM in both, the GPU-active part as a second pair of thinner lines.
    Where the two wall lines part while the GPU lines lie together, the host ran the same work at another speed.

    df columns: name, to_step, first_s, second_s, first_busy_s, second_busy_s (analysis.estimate.quick.same_step_rows
    + name), and ratio (same_steps' ratio of the pair, printed in its panel). Three panels a row."""
    if df.empty:
        return _empty(title, labels, "no quick run has a full run after it on its host")
    fig, grid, names = _panels(df, 3.4)
    wall_c, busy_c = sns.color_palette("deep")[0], sns.color_palette("deep")[2]
    for ax, name in zip(grid.flat, names):
        part = df[df["name"] == name].sort_values("to_step")
        ax.plot(part["to_step"], part["first_s"], color=wall_c, lw=1.6, label="quick run, wall")
        ax.plot(part["to_step"], part["second_s"], color=wall_c, lw=1.6, ls="--", label="full run, wall")
        if part["first_busy_s"].notna().all():
            ax.plot(part["to_step"], part["first_busy_s"], color=busy_c, lw=1.0, label="quick run, GPU active")
            ax.plot(part["to_step"], part["second_busy_s"], color=busy_c, lw=1.0, ls="--",
                    label="full run, GPU active")
        ratio = part["ratio"].iloc[0]
        if ratio is not None and not pd.isna(ratio):
            ax.text(0.99, 0.97, f"full / quick: {ratio:.3f}", transform=ax.transAxes, ha="right", va="top",
                    fontsize=8)
        ax.set_ylim(bottom=0)
        ax.set_title(name, fontsize=9)
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.set_xlabel("optimizer step (steady steps both runs have)")
    for row in grid:
        row[0].set_ylabel("seconds per interval")
    handles = [matplotlib.lines.Line2D([], [], color=c, lw=w, ls=ls, label=f"{who}, {what}")
               for what, c, w in (("wall", wall_c, 1.6), ("GPU active (GPM)", busy_c, 1.0))
               for who, ls in (("quick run", "-"), ("full run after it", "--"))]
    fig.legend(handles=handles, loc="outside lower center", ncols=4, fontsize=8, frameon=False)
    return _finish(fig, title, labels)
