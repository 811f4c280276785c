"""`swiftbench claims`: the claims table of a results tree, and `claims resolve` for `combine` experiments.

    swiftbench claims [RESULTS] [--hw HW] [--json] [--plan]
        the seed articles' claims, then the project's own findings under a heading of their own: one line per claim,
        `[verdict] id: claim text — key number`, at most 160 characters (the text shortened to fit, marked `…`);
        --json: the table's rows (origin, text, verdict, key number, whole detail, numbers) as a JSON list;
        --plan: then the GPU plan of the claims experiments (device calls, chains, estimates)
    swiftbench claims resolve (NAME | --all) --hw HW [RESULTS | --results DIR] [--force]
        write the resolved recipe of `combine` experiment NAME (every one with --all) that the runner reads
        (RESULTS/resolved/<hw>/<name>.yaml); a different one already there is kept (exit code 1) unless --force
    swiftbench claims swift-facts
        rewrite data/swift_sft.json (the installed ms-swift's flags, which the tooling claims read) from the installed
        ms-swift (analysis.judge.audit.swift_info)
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from experiments.base import hardware
from experiments.base.argparsing import OneLineParser
from experiments.base.errors import InputError

DEFAULT_RESULTS = "results"
LINE_WIDTH = 160  # one claim per line of a terminal or a review comment
KEY_WIDTH = 70    # the key number's share of a line; the claim's text gets the rest
USAGE = ("%(prog)s [RESULTS] [--hw HW] [--json] [--plan]\n"
         "       %(prog)s resolve (NAME | --all) --hw HW [RESULTS | --results DIR] [--force]\n"
         "       %(prog)s swift-facts")


def register(sub) -> None:
    p = sub.add_parser("claims", help="the claims audit: a verdict per claim from the results (or `claims resolve`)",
                       description=__doc__.split("\n\n")[0], usage=USAGE, epilog=__doc__.split("\n\n", 1)[1],
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    # the table's options may come first; everything from the first word on is parsed by run() (table or resolve)
    p.add_argument("--hw", default=None, help="hardware class (the table's default: the one with the most claims "
                                              "runs; resolve needs it)")
    p.add_argument("--json", action="store_true", help="print the table as a JSON list of rows")
    p.add_argument("--plan", action="store_true", help="then print the GPU plan of the claims experiments")
    p.add_argument("words", nargs=argparse.REMAINDER, metavar="RESULTS | resolve ...",
                   help=f"the results folder (default {DEFAULT_RESULTS}), or `resolve` and its arguments")
    p.set_defaults(func=run, _prog=p.prog)


def _table_parser(prog: str) -> OneLineParser:
    t = OneLineParser(prog=prog, description="the claims table: one line per claim, `[verdict] id: text — key`")
    t.add_argument("results", nargs="?", default=None, help=f"results folder (default {DEFAULT_RESULTS})")
    t.add_argument("--hw", default=None, help="hardware class (default: the one with the most claims runs)")
    t.add_argument("--json", action="store_true", help="print the table as a JSON list of rows")
    t.add_argument("--plan", action="store_true", help="then print the GPU plan of the claims experiments")
    return t


def _resolve_parser(prog: str) -> OneLineParser:
    r = OneLineParser(prog=f"{prog} resolve",
                      usage="%(prog)s (NAME | --all) --hw HW [RESULTS | --results DIR] [--force]",
                description="write the resolved recipe of a `combine` experiment, which the runner reads")
    r.add_argument("words", nargs="*", metavar="NAME | RESULTS",
                   help="the combine experiment (none with --all), then optionally the results folder")
    r.add_argument("--all", action="store_true", help="every `combine` experiment")
    r.add_argument("--hw", default=None, help="hardware class of the runs (required)")
    r.add_argument("--results", default=None, metavar="DIR", help=f"results folder (default {DEFAULT_RESULTS})")
    r.add_argument("--force", action="store_true", help="replace a resolved recipe that says something else")
    return r


def run(args) -> int:
    words = list(args.words or [])
    if words and words[0] == "swift-facts":
        if len(words) > 1 or args.json or args.plan or args.hw:
            raise InputError(None, "claims swift-facts takes no arguments")
        from analysis.judge.audit import swift_info

        return swift_info.main()
    if words and words[0] == "resolve":
        r = _resolve_parser(args._prog)
        a = r.parse_intermixed_args(words[1:], argparse.Namespace(hw=args.hw))
        if args.json or args.plan:
            r.error("--json and --plan belong to the claims table")
        return _resolve(r, a)
    t = _table_parser(args._prog)
    a = t.parse_intermixed_args(words, argparse.Namespace(hw=args.hw, json=args.json, plan=args.plan))
    return _table(a.results or DEFAULT_RESULTS, a.hw, a.json, a.plan)


def _table(results: str, hw: str | None, as_json: bool, plan: bool = False) -> int:
    from analysis.judge.audit.verdicts import claims_table

    if not Path(results).is_dir():
        raise InputError(results, "no such results folder")
    df = claims_table(results, hw=hardware.user_key(hw) if hw else None)
    if as_json:
        rows = df.astype(object).to_dict(orient="records")
        out: object = {"claims": rows, "plan": _plan_lines()} if plan else rows
        print(json.dumps(out, indent=1, default=str, allow_nan=False))
        return 0
    print("\n".join(table_lines(df.to_dict(orient="records"))))
    if plan:
        print("\nThe GPU plan of the claims experiments (experiments/recipes/claims/plan.yaml):")
        print("\n".join(_plan_lines()))
    return 0


def _plan_lines() -> list[str]:
    from experiments.recipes.plan import summary_lines

    return summary_lines()


def table_lines(rows: list[dict], width: int = LINE_WIDTH) -> list[str]:
    """The table in words: per origin (article claims first) a heading with its verdict counts and one claim_line per
    claim, then a line that says where the rest is."""
    from analysis.judge.audit.config import ORIGINS

    out: list[str] = []
    for origin, heading in ORIGINS.items():
        mine = [r for r in rows if r["origin"] == origin]
        if not mine:
            continue
        counts: dict[str, int] = {}
        for r in mine:
            counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
        out += [""] if out else []
        out.append(f"{heading}: {len(mine)} ({', '.join(f'{n} {v}' for v, n in counts.items())})")
        out += [claim_line(r, width) for r in mine]
    return out + ["", one_line(f"{len(rows)} claims; each one's whole detail, numbers and run folders: swiftbench "
                               "claims --json; the GPU plan of the claims experiments: --plan", width)]


def claim_line(row: dict, width: int = LINE_WIDTH) -> str:
    """`[verdict] id: claim text — key number: reason` in WIDTH characters: the key number (else the detail's first
    clause) kept whole up to KEY_WIDTH and the verdict's reason after it, the claim's text shortened to the room
    left."""
    given = row.get("key")
    key = one_line(given if isinstance(given, str) else first_clause(row.get("detail") or ""), KEY_WIDTH)
    if row.get("reason") and row["verdict"] != "holds":  # the number alone could read as the other verdict
        key += f": {row['reason']}"
    head = f"[{row['verdict']}] {row['id']}: "
    room = width - len(head) - len(" — ") - len(key)
    return head + one_line(row["claim"], max(room, 20)) + " — " + key


def first_clause(text: str) -> str:
    """TEXT up to its first '; ' (a verdict's detail leads with its finding)."""
    return " ".join(str(text).split()).split("; ", 1)[0]


def one_line(text: str, width: int = LINE_WIDTH) -> str:
    """TEXT on one line of at most WIDTH characters: cut at the last clause ('; ', ', ') that fits, else at a space,
    and marked with '…'."""
    text = " ".join(str(text).split())
    if len(text) <= width:
        return text
    room = text[:width - 2]
    for sep in ("; ", ", ", " "):
        cut = room.rfind(sep)
        if cut > width // 2:
            return room[:cut].rstrip(" ;,:") + " …"
    return room + " …"


def _resolve(r: OneLineParser, a) -> int:
    from analysis.judge.audit.combo import combine_experiments, write_resolved

    if not a.hw:
        r.error("--hw HW is required")
    a.hw = hardware.user_key(a.hw)
    names = combine_experiments()
    words = list(a.words)
    if a.all:
        todo, rest = names, words  # with --all a word is the results folder
    elif not words:
        r.error(f"NAME or --all is required (combine experiments: {', '.join(names) or 'none'})")
    else:
        todo, rest = words[:1], words[1:]
    if len(rest) > 1:
        r.error(f"unexpected arguments: {' '.join(rest[1:])}")
    results = rest[0] if rest else None
    if results is not None and a.results is not None and results != a.results:
        r.error(f"two results folders: {results} and --results {a.results}")
    results = results or a.results or DEFAULT_RESULTS
    if not Path(results).is_dir():
        raise InputError(results, "no such results folder")
    kept = 0
    for name in todo:
        out = write_resolved(name, results, a.hw, force=a.force)
        print(out.message)
        kept += out.action == "kept"
    return 1 if kept else 0
