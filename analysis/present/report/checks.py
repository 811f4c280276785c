"""Consistency section: the seed articles' own arithmetic, each internal check recomputed
(analysis.judge.audit.seed_checks)."""
from __future__ import annotations

from analysis.judge.audit.seed_checks import checks_frame
from analysis.present.report import html as H
from analysis.present.report.context import Context


def checks_section(ctx: Context) -> str:
    df = checks_frame(ctx.seeds)
    if df.empty:
        return H.note("The seed files hold no internal checks.")
    df["fragment"] = df["fragment"].map(H.breaks)
    n_true = int((df["consistent"] == True).sum())  # noqa: E712
    n_false = int((df["consistent"] == False).sum())  # noqa: E712
    n_none = len(df) - n_true - n_false
    bad = df[~df["result_ok"]]
    return H.join([
        H.p(f"Arithmetic checks of the articles' own numbers against each other (seeds/*.yaml, "
            f"<code>internal_checks</code>): <b>{n_true} consistent, {n_false} inconsistent, {n_none} without a "
            f"published number to compare</b>. Each formula is recomputed here (<i>recomputed</i>); "
            + (f"<b>{len(bad)} stored results disagree with their formula</b>." if len(bad)
               else "every stored result agrees with its formula.")),
        H.fold(f"every check ({len(df)})", H.html_table(df, {"result": "{:g}", "recomputed": "{:g}",
                                                                "tolerance": "{:g}"})),
        H.csv(ctx, df, "internal_checks.csv"),
    ])
