"""Hardware and environment sections: per GPU class, what was and was not measured, its runs, the recipe and the
environment, and the article's figures for it (the long tables folded).

A run's command comes from what the runner recorded in its folder: run.json's `command` (argv) and `notes`, else
command.sh; without either the section says "no command recorded".
"""
from __future__ import annotations

import shlex
from pathlib import Path

import pandas as pd

from analysis.core.seeds import published_recipe
from analysis.judge.answer import published as P
from analysis.measure import run_views
from analysis.measure import utilisation as U
from analysis.parse.record import RunRecord
from analysis.parse.results import matrix_experiments
from analysis.present import view_render
from analysis.present.report import html as H
from analysis.present.report.context import Context
from experiments.base import hardware, paths, runfiles, userfiles
from experiments.base.errors import InputError
from experiments.base.runfolder import Env, Run

COMMAND_FILE = runfiles.COMMAND_SH
NO_COMMAND = "no command recorded"


# ------------------------------------------------------------------------------------------- commands


def argv_flags(argv: list[str]) -> dict[str, str]:
    """`swift sft --a 1 --b x y` -> {"a": "1", "b": "x y"}."""
    out: dict[str, list[str]] = {}
    key = None
    for tok in argv[2:] if argv[:2] == ["swift", "sft"] else argv:
        if tok.startswith("--"):
            key = tok[2:]
            out[key] = []
        elif key is not None:
            out[key].append(tok)
    return {k: " ".join(v) for k, v in out.items()}


def shell_argv(shell: str) -> list[str] | None:
    """The `swift sft ...` argv of a command.sh (comments and `export` lines skipped), None when it has none."""
    lines = [ln for ln in shell.replace("\\\n", " ").splitlines()
             if ln.strip() and not ln.lstrip().startswith(("#", "export "))]
    for ln in lines:
        try:
            argv = shlex.split(ln)
        except ValueError:  # unbalanced quotes: not a command line we can read
            continue
        for i in range(len(argv) - 1):
            if argv[i:i + 2] == ["swift", "sft"]:
                return argv[i:]
    return None


def shell_notes(shell: str) -> list[str]:
    """The comment lines of a command.sh after its first ("Rendered by ..."): the recipe's adaptations."""
    comments = [ln.lstrip()[1:].strip() for ln in shell.splitlines() if ln.lstrip().startswith("#")
                and not ln.startswith("#!")]
    return comments[1:]


def run_command(rec: RunRecord) -> tuple[dict | None, list[str], str | None, str]:
    """(flags, notes, shell text, where they come from) of one run, from run.json and command.sh only."""
    cmd_file = Path(rec.path) / COMMAND_FILE
    try:
        shell = userfiles.read_text(cmd_file, runfiles.max_bytes(cmd_file)) if userfiles.present(cmd_file) else None
    except InputError:  # a command.sh that cannot be read shows no command; run.json's stands
        shell = None
    command = rec.run_status.get(Run.COMMAND)
    if isinstance(command, list):
        return argv_flags(command), list(rec.run_status.get(Run.NOTES) or []), shell, "run.json / command.sh"
    argv = shell_argv(shell) if shell else None
    if argv is not None and shell:  # a parsed argv: there was a shell line
        return argv_flags(argv), shell_notes(shell), shell, COMMAND_FILE
    return None, [f"{rec.name}: {NO_COMMAND} (no command in run.json, no readable {COMMAND_FILE})"], shell, "none"


def flag_str(v) -> str:
    if isinstance(v, (list, tuple)):
        return " ".join(str(x) for x in v)
    if isinstance(v, bool):
        return str(v).lower()
    return str(v)


def same(a: str | None, b: str | None) -> bool:
    if a == b:
        return True
    if a is None or b is None:
        return False
    try:
        return float(a) == float(b)
    except ValueError:
        return a.lower() == b.lower()


def short_flag(key: str, value: str | None) -> str | None:
    """Run-specific paths shortened: the folder of a run, the file names of local datasets."""
    if value is None:
        return None
    if key == "output_dir":
        return "(the run folder)" if "/" in value else value
    if key in ("model", "dataset"):
        return " ".join(Path(v).name if v.startswith("/") else v for v in value.split(" "))
    return value


def recipe_html(ctx: Context, runs: list[RunRecord]) -> str:
    """One table for all runs of a class: every flag where some run differs from the article's command."""
    article = {k: flag_str(v) for k, v in published_recipe(ctx.seeds_dir).items()}
    cols, notes, sources, shells = {}, [], set(), []
    for r in runs:
        flags, run_notes, shell, source = run_command(r)
        cols[f"{r.experiment} · {r.run}"] = flags or {}
        notes += [n for n in run_notes if n not in notes]
        sources.add(source)
        if shell:
            # paths inside the checkout shown relative to it, as everywhere on the page
            shells.append(f"<p>{H.e(r.name)}</p><pre class=\"sb-cmd\">"
                          f"{H.e(shell.replace(str(paths.ROOT) + '/', ''))}</pre>")
    keys = list(article) + [k for f in cols.values() for k in f if k not in article]
    differ = [k for k in dict.fromkeys(keys)
              if not all(same(article.get(k), f.get(k)) for f in cols.values() if f)]
    grid = {"article": {f"--{k}": article.get(k) for k in differ},
            **{c: {f"--{k}": short_flag(k, f.get(k)) if f else NO_COMMAND for k in differ} for c, f in cols.items()}}
    parts = [H.p("Flags where a run differs from the article's command (" + H.e("; ".join(sorted(sources)))
                 + "); every other flag is the article's. Local paths are shortened to file names."),
             H.html_table(view_render.grid_frame(grid, "flag"))]
    if notes:
        parts.append('<ul class="sb-note">' + "".join(f"<li>{H.e(n)}</li>" for n in notes) + "</ul>")
    if shells:
        parts.append(f"<details><summary>full commands ({len(shells)})</summary>{''.join(shells)}</details>")
    return "\n".join(parts)


# ------------------------------------------------------------------------------------------ the class


def env_frame(runs: list[RunRecord]) -> pd.DataFrame:
    """Each run's environment (analysis.measure.run_views.environment) as a column, one column where all agree."""
    return view_render.grid_frame({r.run: run_views.environment(r) for r in runs}, "environment (env.json)",
                                  together=True)


def measured_list(ctx: Context, hw: str, runs: list[RunRecord]) -> str:
    exps = sorted({r.experiment for r in runs if r.experiment is not None})
    ok = [r for r in runs if r.ok]
    with_nvml = [r for r in runs if (Path(r.path) / U.NVML_NAME).is_file()]
    measured = [f"step time, tokens/s, samples/s and MFU: {len(ok)} successful run(s) of {', '.join(exps)}",
                "peak memory reserved (ms-swift memory(GiB)) and loss curves of the same runs",
                f"GPU utilisation, power, SM clock and energy (nvml.csv): {len(with_nvml)} of {len(runs)} runs"]
    failed = [r for r in runs if not r.ok]
    if failed:
        measured.append("failed: " + "; ".join(f"{r.run} ({r.failure})" for r in failed))
    not_measured = []
    missing = sorted(e for e in matrix_experiments() if e not in exps)
    if missing:
        not_measured.append(f"experiments of the matrix not run here: {', '.join(missing)}")
    if any(r.dummy_weights for r in runs):
        not_measured.append("the real model's loss and accuracy (dummy weights: loss values are "
                            "meaningless for quality)")
    for e in exps:
        runs_e = [r for r in ok if r.experiment == e]
        if runs_e and all(r.is_cut_run for r in runs_e):
            not_measured.append(f"a full epoch of {e} (only cut runs)")
    for r in ok:
        if not r.complete:
            not_measured.append(f"the end of run {r.experiment} · {r.run}: its log has no end-of-training "
                                "line (killed, or still running when copied)")
    if any(lab.startswith("forced") for r in runs for lab in r.labels):
        not_measured.append("this hardware class itself for the forced runs (the GPU did not match)")
    if hw not in ctx.published_hw:
        tested = [P.short(h) for h in P.hardware_with(ctx.pub, "ms_per_step")]
        not_measured.append(f"nothing published for {P.short(hw)}: the article tested {', '.join(tested)} "
                            "(see Published vs measured for the nearest class)")
    return "<p><b>Measured here</b></p>" + H.items(measured) + "<p><b>Not measured here</b></p>" + H.items(not_measured)


def published_html(ctx: Context, hw: str) -> str:
    rows = P.published_rows(ctx.pub, hw)
    if not rows:
        return H.note("The article publishes nothing for this class.")
    return ('<div class="sb-pub"><p><b>Published, not measured here</b> (ms-swift hardware article, '
            f"seeds/ms_swift_hw_test.yaml; {H.LINE_BREAK} marks a line break of the extracted text where characters "
            "were lost):</p>"
            + view_render.table_html(rows, P.PublishedRow)
            + "</div>")


def runs_frame(ctx: Context, runs: list[RunRecord]) -> pd.DataFrame:
    """A class's runs: status, steps, step time and peak (analysis.measure.run_views.RunRow)."""
    return view_render.to_frame(run_views.run_rows(runs, ctx.in_tables), run_views.RunRow, run_views.CLASS_RUNS)


def env_summary(runs: list[RunRecord]) -> str:
    """'GPU NVIDIA H200, driver 580, CUDA 13.0, torch 2.11, ms-swift 4.6.0 (2 hosts)': what the environment table
    holds, in one line."""
    def values(get) -> str:
        found = sorted({str(v) for v in (get(r) for r in runs) if v not in (None, "")})
        return " / ".join(found) if found else "?"

    def package(name: str):
        return lambda r: (r.env.get(Env.PACKAGES) or {}).get(name)

    hosts = {r.host_id for r in runs if r.host_id}
    return (f"GPU {values(lambda r: r.env.get('gpu_name'))}, driver {values(lambda r: r.env.get('driver'))}, CUDA "
            f"{values(lambda r: r.env.get('cuda_torch'))}, torch {values(package('torch'))}, "
            f"ms-swift {values(package('ms-swift'))}"
            + (f", {len(hosts)} fingerprinted host{'s' if len(hosts) != 1 else ''}" if hosts else ""))


def hardware_sections(ctx: Context) -> str:
    """Per class: measured ones open with what was and was not measured, their runs, recipe and environment folded;
    classes without runs folded with the article's figures."""
    parts, env_rows = [], []
    for hw in ctx.hardware:
        runs = sorted([r for r in ctx.matrix if r.hw == hw], key=lambda r: (r.experiment, r.run))
        spec = hardware.get(hw)
        title = f"{P.short(hw)} ({hw})"
        desc = hardware.describe(hw) if spec else hw
        if not runs:
            parts.append(H.fold(f"<h3>{H.e(title)}: published, not measured here</h3>",
                                H.p(f"{H.e(desc)}. No run in the results folder; the article's numbers for this "
                                    "class:") + published_html(ctx, hw)))
            continue
        parts.append(f"<h3>{H.e(title)}: measured here ({len(runs)} run{'s' if len(runs) != 1 else ''})</h3>")
        parts.append(H.p(f"{H.e(desc)}; bandwidth {spec.bandwidth_gbs if spec else '?'} GB/s "
                         f"({H.e(spec.source) if spec else ''}). Environment: {H.e(env_summary(runs))}."))
        parts.append(measured_list(ctx, hw, runs))
        parts.append(H.fold(f"its {len(runs)} runs: status, steps, ms/step, peak",
                            H.html_table(runs_frame(ctx, runs), view_render.formats(run_views.RunRow))))
        parts.append(H.fold("<b>Recipe</b>: the flags where a run differs from the article's command (as each run "
                            "recorded it: run.json, command.sh)", recipe_html(ctx, runs)))
        parts.append(H.fold("<b>Environment</b> of each run (env.json): GPU, driver, CUDA, CPU, host probe, packages",
                            H.html_table(env_frame(runs))))
        env_rows += [run_views.environment_record(r, hw) for r in runs]
        if hw not in ctx.published_hw:
            parts.append(H.note(f"{H.e(P.short(hw))} is not in the article; the nearest published class is "
                                f"{H.e(P.nearest(hw, ctx.pub)[0] or 'none')} (see Published vs measured)."))
        else:
            parts.append(H.fold(f"the article's figures for {H.e(P.short(hw))}", published_html(ctx, hw)))
    parts.append(H.csv(ctx, view_render.records_frame(env_rows), "environment.csv"))
    parts.append(H.csv(ctx, ctx.pub, "published_figures.csv"))
    return H.join(parts)
