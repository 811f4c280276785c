"""Files section: every CSV and PNG the report wrote beside its page (named relative to it), folded."""
from __future__ import annotations

from analysis.present.report import html as H
from analysis.present.report.context import Context


def files_section(ctx: Context) -> str:
    links = "".join(f'<li><a href="{H.e(f)}">{H.e(f)}</a></li>' for f in ctx.files)
    return H.fold(f"{len(ctx.files)} files written beside this page (every table as CSV, every figure as PNG)",
                  f"<ul>{links}</ul>")
