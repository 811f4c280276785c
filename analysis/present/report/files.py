"""Files section: every CSV and PNG the report wrote beside its page."""
from __future__ import annotations

from analysis.present.report import html as H
from analysis.present.report.context import Context


def files_section(ctx: Context) -> str:
    links = "".join(f'<li><a href="{H.e(f)}">{H.e(f)}</a></li>' for f in ctx.files)
    return H.join([H.p(f"Written into <code>{H.e(ctx.out)}</code> beside this page:"), f"<ul>{links}</ul>"])
