"""HTML of the report page: paragraphs, folds, figures, escaping, file links and the page's CSS; its tables are
analysis.present.view_render's.

The styles live in report.css beside this module (package data, read when the page is made).
"""
from __future__ import annotations

import html
from importlib import resources

import pandas as pd
from PIL import Image

from analysis.judge.answer import published as P
from analysis.present import view_render

CSS_FILE = "report.css"
LINE_BREAK = P.LINE_BREAK  # marks a line break of a seed's extracted text, where characters may have been lost


def missing(v) -> bool:
    """None, NaN or pandas' NA (not an empty list or string)."""
    return view_render.missing(v)


def fmt(v, spec) -> str:
    """V with SPEC (a format string or a function); an en dash when missing."""
    return view_render.frame_cell(v, spec)


def e(text) -> str:
    """Escaped for HTML."""
    return html.escape(str(text))


def p(text: str) -> str:
    return f"<p>{text}</p>"


def note(text: str) -> str:
    return f'<p class="sb-note">{text}</p>'


def items(texts: list[str]) -> str:
    """An unordered list of escaped TEXTS."""
    return "<ul>" + "".join(f"<li>{e(t)}</li>" for t in texts) + "</ul>"


def join(parts: list[str]) -> str:
    return "\n".join(x for x in parts if x)


def breaks(text) -> str | None:
    """A seed's extracted text on one line, its line breaks shown as ⏎."""
    return None if missing(text) else str(text).replace("\n", LINE_BREAK)


def html_table(df: pd.DataFrame, formats: dict | None = None, columns: list[str] | None = None) -> str:
    """A frame as an HTML table (analysis.present.view_render.frame_html: numbers formatted per column, missing
    values as an en dash, long text kept wide enough to read)."""
    return view_render.frame_html(df, formats, columns)


def css() -> str:
    """The page's styles (report.css, package data)."""
    return resources.files(__package__).joinpath(CSS_FILE).read_text(encoding="utf-8")


def style() -> str:
    return f"<style>{css()}</style>"


def csv(ctx, df: pd.DataFrame, name: str) -> str:
    """Write DF as OUT/NAME (through the context, which lists the file) and link it."""
    ctx.write_csv(df, name)
    return f'<p class="sb-files">Table as CSV: <a href="{e(name)}">{e(name)}</a></p>'


TALL_PX = 900  # a figure taller than one screen is folded, shown whole when opened (never cut or scrolled in a box)


def figure(ctx, fig, name: str, caption: str, folded: str | None = None) -> str:
    """Write FIG as OUT/NAME (through the context) and show it with CAPTION; FOLDED: under that one-line summary,
    closed (a detail figure: the page stays short, the figure keeps its size when opened). A figure taller than
    TALL_PX is folded too, under its caption."""
    path = ctx.write_figure(fig, name)
    if not folded:
        with Image.open(path) as img:
            height = img.size[1]
        if height > TALL_PX:
            folded = f"{e(caption)} <small>(a tall figure, {height:,} px: open to see it whole)</small>"
    if folded:
        return fold(folded, figure_html(name, caption))
    return figure_html(name, caption)


def figure_html(name: str, caption: str) -> str:
    """The figure element of OUT/NAME with CAPTION: at its natural size, never wider than the page."""
    return (f'<figure class="sb-figure"><img src="{e(name)}" alt="{e(caption)}">'
            f"<figcaption>{e(caption)} (<a href=\"{e(name)}\">{e(name)}</a>)</figcaption></figure>")


def fold(summary: str, body: str, open_: bool = False) -> str:
    """BODY folded under a one-line SUMMARY (HTML): long tables stay one click away, the page stays short."""
    return f"<details{' open' if open_ else ''}><summary>{summary}</summary>{body}</details>" if body else ""


def clip(text, width: int) -> str:
    """TEXT on one line, cut at WIDTH characters with '…' (the whole text stays in the CSV and the folded table)."""
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[:width - 1].rstrip() + "…"
