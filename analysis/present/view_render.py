"""The answer's typed view (analysis.judge.answer.view: ClassRow, RecipeRow) rendered three ways: Markdown (`tables
--answer`, README's block), HTML (the report) and JSON (`tables --format json`, the view's own round trip). Each
column's head and each cell's format are the field's metadata (label, unit, fmt, band, note, mark): this module holds
no column's words and computes no number, and no other module of present/ words the answer's columns.
"""
from __future__ import annotations

import dataclasses
import functools
import html
import json
import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import pandas as pd
from tabulate import tabulate

from analysis.judge.answer.view import ClassRow, RecipeRow

Row = TypeVar("Row", ClassRow, RecipeRow)
MISSING = "–"


def shown(cls: type) -> list[dataclasses.Field]:
    """The fields the answer's table shows, in field order."""
    return [f for f in dataclasses.fields(cls) if f.metadata.get("show")]


def head(f: dataclasses.Field) -> str:
    """The column's head: its label, then its unit ('epoch s')."""
    unit = f.metadata.get("unit")
    return f"{f.metadata['label']} {unit}" if unit else str(f.metadata["label"])


def value_text(v: Any, fmt: str, scale: float | None = None) -> str:
    """V (times SCALE, where given) with FMT; an en dash where there is none."""
    if v is None:
        return MISSING
    try:
        return fmt.format(v * scale if scale is not None else v)
    except (ValueError, TypeError):
        return str(v)


def cell(row: Any, f: dataclasses.Field) -> str:
    """One cell: the value in its format, its band '(low-high)' where the two differ, its note, its mark."""
    m = f.metadata
    v = getattr(row, f.name)
    text = value_text(v, m["fmt"], m.get("scale"))
    if v is not None and m.get("band"):
        lo, hi = (value_text(getattr(row, n), m["fmt"], m.get("scale")) for n in m["band"])
        if MISSING not in (lo, hi) and lo != hi:
            text += f" ({lo}-{hi})"
    if v is not None and m.get("note") and getattr(row, m["note"]):
        text += f" ({getattr(row, m['note'])})"
    if m.get("mark") and getattr(row, m["mark"][0]):
        text += f" {m['mark'][1]}"
    return text


def chosen(cls: type, columns: Sequence[str] | None = None) -> list[dataclasses.Field]:
    """The fields named by COLUMNS (field names, in that order), else the shown ones."""
    if columns is None:
        return shown(cls)
    by_name = {f.name: f for f in dataclasses.fields(cls)}
    return [by_name[c] for c in columns]


def cells(rows: Sequence[Any], cls: type, columns: Sequence[str] | None = None) -> tuple[list[str], list[list[str]]]:
    """(heads, cells) of the shown columns (or COLUMNS)."""
    fs = chosen(cls, columns)
    return [head(f) for f in fs], [[cell(r, f) for f in fs] for r in rows]


def to_markdown(rows: Sequence[Any], cls: type) -> str:
    """A Markdown (pipe) table of ROWS, CLS's shown columns."""
    heads, body = cells(rows, cls)
    align = ["left" if f.metadata["fmt"] == "{}" else "right" for f in shown(cls)]  # numbers to the right
    return tabulate(body, headers=heads, tablefmt="pipe", disable_numparse=True, colalign=align)


def to_html(rows: Sequence[Any], cls: type, table_id: str | None = None, css: str = "sb-table",
            columns: Sequence[str] | None = None, title: Sequence[str] = ()) -> str:
    """An HTML table of ROWS, CLS's shown columns (or COLUMNS, field names: a narrower table); each cell names its
    field (data-col); TITLE: fields whose text is the row's tooltip (how a figure was obtained)."""
    fs = chosen(cls, columns)
    heads, body = cells(rows, cls, columns)
    ident = f' id="{html.escape(table_id)}"' if table_id else ""
    th = "".join(f'<th data-col="{f.name}">{html.escape(h)}</th>' for f, h in zip(fs, heads))

    def tip(row: Any) -> str:
        text = "; ".join(str(getattr(row, n)) for n in title if getattr(row, n) is not None)
        return f' title="{html.escape(text)}"' if text else ""

    trs = "".join(f"<tr{tip(r)}>" + "".join(f'<td data-col="{f.name}">{html.escape(c)}</td>'
                                            for f, c in zip(fs, line)) + "</tr>" for r, line in zip(rows, body))
    return f'<table class="{html.escape(css)}"{ident}><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>'


def to_records(rows: Sequence[Any]) -> list[dict[str, Any]]:
    """Every field of every row, by field name (JSON's keys; what --format json prints)."""
    return [dataclasses.asdict(r) for r in rows]


def to_json(rows: Sequence[Any]) -> str:
    return json.dumps(to_records(rows), indent=2)


def from_json(text: str, cls: type[Row]) -> tuple[Row, ...]:
    """The rows to_json wrote (from_json(to_json(rows), cls) == rows)."""
    return tuple(cls(**d) for d in json.loads(text))


def to_frame(rows: Sequence[Any], cls: type, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Every field as a column, by field name (or COLUMNS, field names): the CSV files, the full Markdown tables and
    the figures' data."""
    names = list(columns) if columns is not None else [f.name for f in dataclasses.fields(cls)]
    return pd.DataFrame(to_records(rows), columns=names)


# the report's HTML tables: these fields' text is kept wide enough to read (a narrow column of long text is a tower)
WIDE = frozenset({"labels", "what", "english", "meaning", "evidence", "comparison", "quantity", "why"})


def missing(v: Any) -> bool:
    """None, NaN or pandas' NA (not an empty list or string)."""
    if v is None:
        return True
    if isinstance(v, float) and math.isnan(v):
        return True
    try:
        return bool(pd.isna(v)) if not isinstance(v, (list, tuple, dict, str)) else False
    except (TypeError, ValueError):
        return False


def frame_cell(v: Any, spec: str | Callable[[Any], str] | None) -> str:
    """V with SPEC (a format string or a function; none: as text); an en dash when missing."""
    if missing(v):
        return MISSING
    if spec is None:
        return str(v)
    if callable(spec):
        return spec(v)
    try:
        return spec.format(v)
    except (ValueError, TypeError):
        return str(v)


def frame_html(df: pd.DataFrame, formats: dict | None = None, columns: Sequence[str] | None = None,
               heads: dict[str, str] | None = None) -> str:
    """A frame as the report's HTML table: its COLUMNS (default all) formatted per column (FORMATS), missing values
    as an en dash, the WIDE fields' long text kept readable; HEADS: column -> its head (default the column's name)."""
    d = df[list(columns)].copy() if columns else df.copy()
    for c in d.columns:
        spec, wide = (formats or {}).get(c), str(c) in WIDE
        d[c] = d[c].map(lambda v, s=spec, w=wide: _wide(frame_cell(v, s), w))
    d.columns = [html.escape(str((heads or {}).get(c, c))) for c in d.columns]
    return ('<div class="sb-scroll">' + d.to_html(index=False, escape=False, border=0, classes="sb-table")
            + "</div>")


def _wide(text: str, wide: bool) -> str:
    return f'<div class="sb-wide">{html.escape(text)}</div>' if wide and len(text) > 30 else html.escape(text)


def table_html(rows: Sequence[Any], cls: type, columns: Sequence[str] | None = None) -> str:
    """ROWS as the report's HTML table, CLS's shown fields (or COLUMNS, field names), each headed by its label."""
    fs = chosen(cls, columns)
    return frame_html(to_frame(rows, cls, [f.name for f in fs]), formats(cls), heads={f.name: head(f) for f in fs})


def grid_frame(columns: dict[str, dict[str, Any]], corner: str, together: bool = False) -> pd.DataFrame:
    """A table whose columns are runs (COLUMNS: head -> item -> value; the items are the runs' own keys, as
    env.json's packages): one row per item, headed CORNER, rows empty in every column dropped; TOGETHER: where every
    column is the same, one column for all."""
    df = pd.DataFrame(columns)
    if together and df.shape[1] > 1 and all(df.iloc[:, 0].equals(df.iloc[:, i]) for i in range(1, df.shape[1])):
        df = df.iloc[:, :1].set_axis([f"all {df.shape[1]} runs"], axis=1)
    df = df.dropna(how="all")
    return df.rename_axis(corner).reset_index()


def records_frame(records: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """Rows whose keys are the runs' own (env.json's): a column per key any row has (a CSV file)."""
    return pd.DataFrame(list(records))


def frame_text(df: pd.DataFrame, fmt: str) -> str:
    """A frame as `swiftbench tables` prints it: csv, json (every digit) or md (a pipe table, missing as an en
    dash)."""
    if fmt == "csv":
        return df.to_csv(index=False)
    if fmt == "json":
        return json.dumps(json.loads(df.to_json(orient="records", double_precision=15)), indent=2)
    shown = df.astype(object).where(df.notna(), None)  # tabulate only treats None as missing, not NaN
    return shown.to_markdown(index=False, floatfmt=".4g", missingval="–")


def _scaled(v: Any, fmt: str, scale: float) -> str:
    return value_text(v, fmt, scale)


def formats(cls: type) -> dict[str, str | Callable[[Any], str]]:
    """Field name -> its format, for the fields that have one (a frame's columns, as the report's tables format
    them); a scaled field's is a function (the value times its scale, formatted)."""
    out: dict[str, str | Callable[[Any], str]] = {}
    for f in dataclasses.fields(cls):
        fmt, scale = f.metadata.get("fmt", "{}"), f.metadata.get("scale")
        if scale is not None:
            out[f.name] = functools.partial(_scaled, fmt=fmt, scale=scale)
        elif fmt != "{}":
            out[f.name] = fmt
    return out
