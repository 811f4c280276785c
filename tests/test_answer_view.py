"""The answer's one typed view (issue 46): analysis.judge.answer.view's rows rendered by analysis.present.view_render
as Markdown, HTML and JSON show the same numbers under the same labels, JSON is the view's own round trip, and no
other module of present/ words the answer's columns."""
from __future__ import annotations

import ast
import dataclasses
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from committed import committed_results
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.judge.answer import view
from analysis.judge.answer.view import ClassRow, RecipeRow
from analysis.present import view_render

ROOT = Path(__file__).resolve().parents[1]
PRESENT = ROOT / "analysis" / "present"


class _Table(HTMLParser):
    """The heads and cells of the one table in an HTML text."""

    def __init__(self) -> None:
        super().__init__()
        self.heads: list[str] = []
        self.rows: list[list[str]] = []
        self._text: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        if tag in ("th", "td"):
            self._text = []

    def handle_data(self, data):
        if self._text is not None:
            self._text.append(data)

    def handle_endtag(self, tag):
        if tag in ("th", "td") and self._text is not None:
            text = "".join(self._text)
            (self.heads if tag == "th" else self.rows[-1]).append(text)
            self._text = None


def _html(text: str) -> tuple[list[str], list[list[str]]]:
    p = _Table()
    p.feed(text)
    return p.heads, [r for r in p.rows if r]


def _markdown(text: str) -> tuple[list[str], list[list[str]]]:
    lines = [line.strip().strip("|").split("|") for line in text.splitlines()]
    heads, body = lines[0], lines[2:]
    return [h.strip() for h in heads], [[c.strip() for c in r] for r in body]


def _labels(cls: type) -> list[str]:
    return [view_render.head(f) for f in view_render.shown(cls)]


def _check_three_ways(rows, cls: type) -> None:
    md_heads, md_cells = _markdown(view_render.to_markdown(rows, cls))
    html_heads, html_cells = _html(view_render.to_html(rows, cls))
    assert md_heads == html_heads == _labels(cls)
    assert md_cells == [[c.strip() for c in r] for r in html_cells]  # the same text in every cell
    records = json.loads(view_render.to_json(rows))
    fields = view_render.shown(cls)
    for row, rec, md_row in zip(rows, records, md_cells):
        for f, text in zip(fields, md_row):
            v = rec[f.name]
            assert v == getattr(row, f.name)
            # each number JSON holds is the cell's, in the field's format (a band or note may follow it)
            assert text.startswith(view_render.value_text(v, f.metadata["fmt"]).strip()), (f.name, text, v)
    assert view_render.from_json(view_render.to_json(rows), cls) == tuple(rows)


@pytest.fixture(scope="module")
def answer():
    from analysis.judge.answer.classes import answer as answer_of
    from analysis.parse.results import collect

    return answer_of(collect(committed_results()))


def test_the_committed_answer_renders_the_same_three_ways(answer):
    classes, recipes = view.class_rows(answer.classes), view.recipe_rows(answer.recommendation)
    assert classes and recipes
    _check_three_ways(classes, ClassRow)
    _check_three_ways(recipes, RecipeRow)
    a10 = next(c for c in classes if c.hw == "a10")
    assert a10.epoch_s is not None and a10.job_s == pytest.approx(a10.epoch_s + (a10.startup_s or 0.0))
    row = _html(view_render.to_html(classes, ClassRow))[1][classes.index(a10)]
    assert row[_labels(ClassRow).index("epoch s")].startswith(f"{a10.epoch_s:.1f} (")  # modelled: with its band


def test_the_view_names_the_three_durations_apart():
    """epoch_s (one epoch's train_runtime), startup_s, job_s (start-up + epoch): one name each, one label each."""
    names = {f.name for f in dataclasses.fields(ClassRow)}
    assert {"epoch_s", "startup_s", "job_s"} <= names and "runtime_s" not in names and "load_s" not in names
    labels = [f.metadata["label"] for f in dataclasses.fields(ClassRow)]
    assert len(labels) == len(set(labels))
    assert len({f.metadata["label"] for f in dataclasses.fields(RecipeRow)}) == len(dataclasses.fields(RecipeRow))


_text = st.one_of(st.none(), st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=12))
_num = st.one_of(st.none(), st.floats(min_value=-1e6, max_value=1e6, allow_nan=False))
_count = st.one_of(st.none(), st.integers(min_value=0, max_value=10_000))


def _strategy(cls: type, required: dict):
    kinds = {"str | None": _text, "float | None": _num, "int | None": _count, "bool | None": st.one_of(
        st.none(), st.booleans()), "bool": st.booleans(), "float": st.floats(-1e6, 1e6, allow_nan=False),
        "str": st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=12)}
    return st.builds(cls, **{f.name: required.get(f.name, kinds[str(f.type)]) for f in dataclasses.fields(cls)})


@settings(max_examples=60, deadline=None)
@given(st.lists(_strategy(ClassRow, {"hw": st.sampled_from(["a10", "h100", "h200"])}), max_size=5),
       st.lists(_strategy(RecipeRow, {}), max_size=5))
def test_any_rows_render_the_same_three_ways(classes, recipes):
    pipe_free = [r for r in classes if "|" not in "".join(str(v) for v in dataclasses.astuple(r))]
    _check_three_ways(pipe_free, ClassRow)
    assert view_render.from_json(view_render.to_json(classes), ClassRow) == tuple(classes)
    assert view_render.from_json(view_render.to_json(recipes), RecipeRow) == tuple(recipes)


def _strings(tree: ast.AST) -> set[str]:
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


OTHER_TABLES = {  # other stages' tables whose own columns share an answer column's words (not the answer's)
    "analysis/present/parse_view.py": {"eval loss", "peak GiB"},  # `swiftbench parse`'s run summary
}


def test_no_module_of_present_but_the_renderer_words_the_answers_columns():
    """The answer's column heads (and their labels) live in the view's metadata; present/ renders them only through
    view_render (OTHER_TABLES: the same words heading another table's own column)."""
    words = set()
    for cls in (ClassRow, RecipeRow):
        for f in dataclasses.fields(cls):
            words |= {view_render.head(f), f.metadata["label"]}
    words = {w for w in words if " " in w or "/" in w}  # a column's words, not a bare noun ("recipe", "runs")
    assert "epoch s" in words and "start-up s" in words
    found = {}
    for path in sorted(PRESENT.rglob("*.py")):
        if path.name == "view_render.py":
            continue
        name = str(path.relative_to(ROOT))
        hits = (_strings(ast.parse(path.read_text(encoding="utf-8"))) & words) - OTHER_TABLES.get(name, set())
        if hits:
            found[name] = sorted(hits)
    assert not found, f"the answer's column labels belong to analysis/judge/answer/view.py's metadata: {found}"


def test_a_measured_class_in_the_gpu_clause_says_how_many_runs_it_rests_on():
    """The GPU clause's figures carry their basis: 'measured, 1 run' (issue 47: one run is said to be one run)."""
    from analysis.estimate.epoch import EpochEstimate
    from analysis.judge.answer.classes import Option
    from analysis.judge.answer.view import obtained_text as _how

    def option(runs: int, hosts: int, kind: str = "measured") -> Option:
        est = EpochEstimate("h100", 42.2, 42.2, 42.2, kind, "b", "r", runs, hosts, None, "")
        return Option("fast", True, 20.0, "", 42.2, 42.2, 42.2, kind == "measured", "b", "r", est)

    assert _how(option(1, 1)) == "measured, 1 run"
    assert _how(option(6, 3)) == "measured, 6 runs on 3 hosts"
    assert _how(option(3, 1)) == "measured, 3 runs, one host"
    assert _how(option(0, 0, "profiled")) == "modelled"
