"""A typed view's field (issue 46): a dataclass field whose metadata carries its column's words and format, read by
analysis.present.view_render (the one renderer). Any stage that owns a table's numbers builds its rows with these,
so a quantity has one name, one label and one format in Markdown, HTML, JSON and the CSV files.

Metadata: LABEL and UNIT (the column's head: "epoch s"), FMT (a format string for the value), SHOW (whether the
table shows it; JSON and the frames hold every field), BAND (the low and high fields shown in the cell beside the
value, where they differ), NOTE (a field whose text, where set, follows the value in parentheses) and MARK (a boolean
field and the sign that follows the value where it is true), SCALE (a factor the value is shown multiplied by: a
0-1 share shown as "31 %").
"""
from __future__ import annotations

from dataclasses import field
from typing import Any


def col(label: str, unit: str = "", fmt: str = "{}", *, show: bool = True, band: tuple[str, str] | None = None,
        note: str | None = None, mark: tuple[str, str] | None = None, scale: float | None = None,
        default: Any = None) -> Any:
    """A view field with its column's words and format (read by analysis.present.view_render)."""
    return field(default=default, metadata={"label": label, "unit": unit, "fmt": fmt, "show": show, "band": band,
                                            "note": note, "mark": mark, "scale": scale})


def hidden(label: str, unit: str = "", fmt: str = "{}", default: Any = None) -> Any:
    """A field JSON and the frames hold and the shown table does not."""
    return col(label, unit, fmt, show=False, default=default)
