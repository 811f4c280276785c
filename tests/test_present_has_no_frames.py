"""Issue 46's bar: no DataFrame construction and no column label in analysis/present/ outside the renderer
(analysis/present/view_render.py). A table's rows are typed views (frozen dataclasses whose fields carry label, unit
and format: analysis.core.viewfield.col) built where the numbers are made (analysis/measure, analysis/judge), and
present/ turns them into frames, Markdown, HTML and JSON only through view_render.

The scan (ast) flags, in every module of present/ but the renderer:
- a frame built: pd.DataFrame(...), DataFrame(...), pd.concat(...), DataFrame.from_records / from_dict;
- a column's words written out: .rename(columns=...), .assign(name=...), a `columns=` keyword given a literal list,
  tuple or dict of strings, a *COLUMNS name bound to a literal list or tuple of strings, a frame indexed by a literal
  list of strings (df[["a", "b"]]).

LEFT is what is still there, per module (issue 46's remaining work): the test fails on a finding not in it and on an
entry of it that is no longer found, so the list only shrinks.
"""
from __future__ import annotations

import ast
import dataclasses
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRESENT = ROOT / "analysis" / "present"
RENDERERS = {"analysis/present/view_render.py"}

FRAME_CALLS = {"DataFrame", "concat", "from_records", "from_dict"}

LEFT: dict[str, Counter] = {  # module -> kinds of finding still there (issue 46: to move into typed views)
}


def _strs(node: ast.AST) -> bool:
    """A literal list/tuple/set of strings, or a dict whose keys are all strings."""
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return bool(node.elts) and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts)
    if isinstance(node, ast.Dict):
        return bool(node.keys) and all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in node.keys)
    return False


def _name(func: ast.expr) -> str | None:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def findings(source: str) -> list[tuple[int, str]]:
    """(line, kind) of each frame built or column worded in SOURCE."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            name = _name(node.func)
            if name in FRAME_CALLS:
                out.append((node.lineno, "frame"))
            if name == "rename" and any(k.arg == "columns" for k in node.keywords):
                out.append((node.lineno, "rename"))
            if name == "assign" and node.keywords:
                out.append((node.lineno, "assign"))
            if name != "rename" and any(k.arg == "columns" and _strs(k.value) for k in node.keywords):
                out.append((node.lineno, "columns literal"))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is not None and _strs(node.value) and not isinstance(node.value, ast.Dict) and any(
                    isinstance(t, ast.Name) and t.id.endswith("COLUMNS") for t in targets):
                out.append((node.lineno, "COLUMNS literal"))
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.List) and _strs(node.slice):
            out.append((node.lineno, "list subscript"))
    return sorted(out)


def scan() -> dict[str, Counter]:
    found: dict[str, Counter] = {}
    for path in sorted(PRESENT.rglob("*.py")):
        name = str(path.relative_to(ROOT))
        if name in RENDERERS:
            continue
        kinds = Counter(kind for _, kind in findings(path.read_text(encoding="utf-8")))
        if kinds:
            found[name] = kinds
    return found


def test_the_scan_sees_what_it_looks_for():
    src = '''
import pandas as pd
FOO_COLUMNS = ["a", "b"]
def f(rows, df):
    x = pd.DataFrame(rows)
    y = pd.concat([x, x]).rename(columns={"a": "A"}).assign(c=1)
    z = df[["a", "b"]]
    return pd.DataFrame.from_records(rows, columns=["a", "b"])
'''
    kinds = Counter(k for _, k in findings(src))
    assert kinds == Counter({"frame": 3, "COLUMNS literal": 1, "rename": 1, "assign": 1, "list subscript": 1,
                             "columns literal": 1})
    assert findings("from analysis.present import view_render\n"
                    "def f(rows, cls):\n    return view_render.to_frame(rows, cls)\n") == []


def test_present_builds_no_frame_and_words_no_column_outside_the_renderer():
    """Nothing beyond LEFT (the moved tables stay moved), and LEFT holds only what is still there."""
    found = scan()
    new = {m: dict(k - LEFT.get(m, Counter())) for m, k in found.items() if k - LEFT.get(m, Counter())}
    assert not new, ("frames or column words in present/ outside view_render.py: build a typed view "
                     f"(analysis.core.viewfield.col) where the numbers are made and render it: {new}")
    gone = {m: dict(k - found.get(m, Counter())) for m, k in LEFT.items() if k - found.get(m, Counter())}
    assert not gone, f"moved: take these out of LEFT: {gone}"


def _views():
    """Every typed view: the dataclasses whose fields all carry a label (analysis.core.viewfield.col)."""
    import importlib

    out = []
    for mod in ("analysis.judge.answer.view", "analysis.judge.answer.seed_table", "analysis.judge.answer.run_tables",
                "analysis.judge.answer.published",
                "analysis.measure.repeats", "analysis.measure.run_views", "analysis.measure.utilisation_view",
                "analysis.estimate.estimate_views", "analysis.judge.audit.claim_views", "analysis.judge.audit.frames"):
        m = importlib.import_module(mod)
        for obj in vars(m).values():
            if isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == mod:
                fs = dataclasses.fields(obj)
                if fs and all("label" in f.metadata for f in fs):
                    out.append(obj)
    return out


def test_every_view_has_one_label_per_quantity():
    """Within a view, each field its own label (one label per quantity), a unit and a format that format a value."""
    views = _views()
    assert {v.__name__ for v in views} >= {"ClassRow", "RecipeRow", "OrderRow", "RecommendedRow", "RepeatRow",
                                            "HarnessRow", "SeedRow", "SpeedRow", "ScalingRow", "ConvergenceRow",
                                            "YourRunRow", "RunRow", "SpreadRow", "IntervalRow", "RepeatPoint",
                                            "LossPoint", "MemoryRow", "StepPoint"}
    for v in views:
        heads = [(f.metadata["label"], f.metadata["unit"]) for f in dataclasses.fields(v)]
        assert len(heads) == len(set(heads)), v.__name__
        for f in dataclasses.fields(v):
            band = f.metadata.get("band")
            assert band is None or all(n in {g.name for g in dataclasses.fields(v)} for n in band), (v, f.name)


def test_the_utilisation_view_is_the_utilisation_table():
    """The view's fields are run_utilisation's keys in order (the report's frame of it is the table), and a scaled
    share renders as the table always showed it ("31 %")."""
    from analysis.measure import utilisation as U
    from analysis.measure.utilisation_view import UtilisationView
    from analysis.present import view_render

    assert [f.name for f in dataclasses.fields(UtilisationView)] == U.COLUMNS
    fmt = view_render.formats(UtilisationView)
    assert fmt["power_fraction"](0.314) == "31 %" and fmt["mfu"](0.0456) == "4.6 %"
    assert view_render.cell(UtilisationView(mfu=0.0456), dataclasses.fields(UtilisationView)[24]) == "4.6 %"
