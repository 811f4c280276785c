"""Offline data in place of the recipe's hub datasets.

The recipe trains on ``AI-ModelScope/alpaca-gpt4-data-zh#500``, ``AI-ModelScope/alpaca-gpt4-data-en#500``
and ``swift/self-cognition#500``. Without ModelScope / Hugging Face, the public samples in
``../shared/data`` stand in for them (``experiments/offline/localdata.yaml`` maps hub id -> file). They are
copied into a run's ignored folder, with the processing that ms-swift applies only to the registered
hub datasets done here, because ms-swift does not apply it to a plain local file:

* alpaca-gpt4-data-zh: the ``输入：`` prefix of ``input`` is dropped (ms-swift's AlpacaZhPreprocessor);
* self-cognition: ``{{NAME}}`` / ``{{AUTHOR}}`` are filled from ``--model_name`` / ``--model_author``
  (ms-swift's SelfCognitionPreprocessor, configured by ``init_self_cognition_preprocessor``).

ms-swift 4.6.0 parses ``path#N`` for local files like ``hub_id#N`` (``DatasetSyntax.parse`` splits the
last ``#`` when the whole string is not an existing path), and samples N rows the same way, repeating
rows when N exceeds the file (self-cognition: 134 rows here, 108 on the hub).
"""
from __future__ import annotations

import json
import os
import random
import shlex
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from experiments.base.datafiles import read_yaml
from experiments.base.errors import InputError

LOCALDATA_YAML = Path(__file__).resolve().parent / "localdata.yaml"


def _load_spec(path: Path = LOCALDATA_YAML) -> dict[str, dict[str, Any]]:
    data = read_yaml(path) or {}
    datasets = data.get("datasets")
    if not isinstance(datasets, dict) or not datasets:
        raise InputError(path, "expected a non-empty `datasets:` mapping")
    for hub_id, spec in datasets.items():
        if not isinstance(spec, dict) or not spec.get("file") or spec.get("kind") not in ("alpaca", "self-cognition"):
            raise InputError(path, f"{hub_id}: needs `file` and `kind` (alpaca | self-cognition)")
    return datasets


DATASET_SPECS: dict[str, dict[str, Any]] = _load_spec()
# hub id -> file name in the shared data folder.
HUB_TO_LOCAL: dict[str, str] = {hub_id: spec["file"] for hub_id, spec in DATASET_SPECS.items()}


# ---------------------------------------------------------------------------------------------
# reading / writing
# ---------------------------------------------------------------------------------------------
def _read_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSON list (.json) or JSON lines (.jsonl) file; InputError names file and line."""
    if not path.is_file():
        raise InputError(path, "data file is missing")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(path, f"cannot read: {e}") from None
    rows: list[Any]
    if path.suffix == ".jsonl":
        rows = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise InputError(path, f"not JSON: {e.msg}", line=lineno) from None
    else:
        try:
            rows = json.loads(text)
        except json.JSONDecodeError as e:
            raise InputError(path, f"not JSON: {e.msg}", line=e.lineno) from None
        if not isinstance(rows, list):
            raise InputError(path, "expected a JSON list of rows")
    for i, row in enumerate(rows, 1):
        if not isinstance(row, dict):
            raise InputError(path, f"row {i} is not an object", line=i if path.suffix == ".jsonl" else None)
    if not rows:
        raise InputError(path, "no rows")
    return rows


def _write_rows(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """Write atomically, in the format the file name says (.jsonl lines, else a JSON list)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    rows = list(rows)
    with open(tmp, "w", encoding="utf-8") as f:
        if path.suffix == ".jsonl":
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        else:
            json.dump(rows, f, ensure_ascii=False, indent=1)
            f.write("\n")
    os.replace(tmp, path)


# ---------------------------------------------------------------------------------------------
# conversions (what ms-swift does to the registered hub datasets)
# ---------------------------------------------------------------------------------------------
def _alpaca_rows(rows: list[dict[str, Any]], spec: Mapping[str, Any], path: Path) -> list[dict[str, Any]]:
    prefix = spec.get("strip_input_prefix")
    out = []
    for i, row in enumerate(rows, 1):
        if "output" not in row or not ("instruction" in row or "input" in row):
            raise InputError(path, f"row {i}: not an alpaca row (instruction/input/output)")
        row = dict(row)
        inp = row.get("input")
        # swift/dataset/dataset/llm.py AlpacaZhPreprocessor.concat_inst_input:
        #     if input_ and input_.startswith('输入：'): input_ = input_[3:]
        if prefix and isinstance(inp, str) and inp.startswith(prefix):
            row["input"] = inp[len(prefix):]
        out.append(row)
    return out


def name_pair(value: "str | Sequence[str] | None") -> tuple[str, str] | None:
    """(zh, en) pair from a ``--model_name`` / ``--model_author`` value, as ms-swift makes it.

    A string is split like the shell splits the flag's value on swift's command line
    (``"小黄 'Xiao Huang'"`` -> zh ``小黄``, en ``Xiao Huang``); a sequence is taken as the argv list.
    Then, as in ms-swift 4.6.0 ``swift/dataset/loader.py:init_self_cognition_preprocessor``:
    one value is used for both languages; ``None`` means "leave the placeholder".
    """
    if value is None:
        return None
    vals = shlex.split(value) if isinstance(value, str) else list(value)
    if not vals or vals[0] is None:
        return None
    if len(vals) == 1 or vals[1] is None:
        return (vals[0], vals[0])
    return (vals[0], vals[1])


def fill_self_cognition(
    rows: list[dict[str, Any]],
    model_name: "str | Sequence[str] | None",
    model_author: "str | Sequence[str] | None",
    path: Path | None = None,
) -> list[dict[str, Any]]:
    """Fill ``{{NAME}}`` / ``{{AUTHOR}}`` the way ms-swift does for ``swift/self-cognition``.

    Replicates ms-swift 4.6.0 ``swift/dataset/dataset/llm.py:SelfCognitionPreprocessor.preprocess``
    (default subset: no query suffix, no response prefix): for each of name and author, take the zh
    value when the row's ``tag`` is ``"zh"``, else the en value, and replace the placeholder in
    ``query`` and ``response``. A None value leaves its placeholder, as ms-swift does.
    """
    pairs = {"name": name_pair(model_name), "author": name_pair(model_author)}
    out = []
    for i, row in enumerate(rows, 1):
        if not isinstance(row.get("query"), str) or not isinstance(row.get("response"), str):
            raise InputError(path, f"row {i}: not a self-cognition row (query/response/tag)")
        row = dict(row)
        for key in ("name", "author"):
            val: tuple[str, str] | str | None = pairs[key]
            if val is None:
                continue
            val = val[0] if row.get("tag") == "zh" else val[1]
            if val is None:
                continue
            placeholder = "{{" + key.upper() + "}}"
            row["query"] = row["query"].replace(placeholder, val)
            row["response"] = row["response"].replace(placeholder, val)
        out.append(row)
    return out


def check_data_dir(data_dir: str | Path) -> None:
    """DATA_DIR holds a readable, non-empty file of rows for every local stand-in: what run-all checks before
    anything starts (an empty folder is one line, exit 2, not a failed run folder)."""
    src_dir = Path(data_dir)
    if not src_dir.is_dir():
        raise InputError(src_dir, "data folder is missing")
    missing = [spec["file"] for spec in DATASET_SPECS.values() if not (src_dir / spec["file"]).is_file()]
    if missing:
        raise InputError(src_dir, f"data folder lacks {', '.join(missing)} (the local stand-ins of "
                                  f"{', '.join(DATASET_SPECS)})")
    for spec in DATASET_SPECS.values():
        _read_rows(src_dir / spec["file"])


def prepare_local_data(
    data_dir: str | Path,
    dest_dir: str | Path,
    model_name: "str | Sequence[str] | None",
    model_author: "str | Sequence[str] | None",
) -> dict[str, str]:
    """Copy the offline samples into ``dest_dir`` (an ignored folder of the run), converted.

    Returns ``{hub_id: absolute local path}`` for :func:`dataset_args`. A missing or malformed file
    raises :class:`experiments.base.errors.InputError` naming it.
    """
    src_dir = Path(data_dir)
    dest = Path(dest_dir).absolute()
    if not src_dir.is_dir():
        raise InputError(src_dir, "data folder is missing")
    result: dict[str, str] = {}
    for hub_id, spec in DATASET_SPECS.items():
        src = src_dir / spec["file"]
        rows = _read_rows(src)
        if spec["kind"] == "alpaca":
            rows = _alpaca_rows(rows, spec, src)
        else:
            rows = fill_self_cognition(rows, model_name, model_author, src)
        target = dest / spec["file"]
        _write_rows(target, rows)
        result[hub_id] = str(target)
    return result


def _split_sample(entry: str) -> tuple[str, str | None]:
    """``'hub/id#500'`` -> (``'hub/id'``, ``'500'``); the suffix is kept verbatim."""
    base, sep, sample = entry.rpartition("#")
    if sep and sample.strip().isdigit():
        return base, sample.strip()
    return entry, None


def dataset_args(datasets: Sequence[str], local: Mapping[str, str] | None) -> list[str]:
    """``--dataset`` values for swift from the recipe's dataset list.

    Without ``local``, the list is returned unchanged (swift downloads the hub datasets). With it,
    each hub id is replaced by its local path, keeping the ``#N`` sampling suffix
    (``AI-ModelScope/alpaca-gpt4-data-zh#500`` -> ``/run/data/alpaca-gpt4-zh.json#500``). A dataset
    without a local stand-in raises InputError: offline, swift would fail on it after retries.
    """
    if isinstance(datasets, str):
        datasets = [datasets]
    if local is None:
        return list(datasets)
    out = []
    for entry in datasets:
        base, sample = _split_sample(entry.strip())
        hub_id = base.split("::", 1)[1] if "::" in base else base  # 'ms::id' / 'hf::id' hub prefixes
        if hub_id not in local:
            raise InputError(None, f"dataset {entry!r} has no local stand-in (known: {', '.join(sorted(local))})")
        path = str(local[hub_id])
        out.append(f"{path}#{sample}" if sample is not None else path)
    return out


# ---------------------------------------------------------------------------------------------
# synthetic data for CI
# ---------------------------------------------------------------------------------------------
_EN_WORDS = (
    "the a model data train step token memory speed batch layer graph kernel cache device host "
    "quick small large simple clear short long number list write explain describe give name three "
    "ways reasons example story poem summary table value compare improve check plan build test"
).split()
_ZH_CHARS = (
    "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多"
    "定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因"
    "由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解"
    "问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少"
    "图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处理"
)


def _en_sentence(rng: random.Random, lo: int, hi: int) -> str:
    words = [rng.choice(_EN_WORDS) for _ in range(rng.randint(lo, hi))]
    return " ".join(words).capitalize() + "."


def _zh_sentence(rng: random.Random, lo: int, hi: int) -> str:
    return "".join(rng.choice(_ZH_CHARS) for _ in range(rng.randint(lo, hi))) + "。"


def make_tiny_local_data(dest_dir: str | Path, n: int = 16, seed: int = 0) -> dict[str, str]:
    """Write small synthetic files shaped like the shared samples, under the same file names.

    Alpaca files (JSON lists of instruction/input/output; some zh inputs carry the ``输入：`` prefix)
    and a self-cognition file (JSON lines of query/response/tag with ``{{NAME}}`` / ``{{AUTHOR}}``),
    ``n`` rows each, deterministic for a seed. The folder can be passed as ``data_dir`` to
    :func:`prepare_local_data`; the returned ``{hub_id: path}`` also works with :func:`dataset_args`
    directly (placeholders then unfilled). No shared (CC BY-NC) text is used.
    """
    if n < 1:
        raise ValueError("n must be >= 1")
    rng = random.Random(seed)
    dest = Path(dest_dir).absolute()
    result: dict[str, str] = {}
    for hub_id, spec in DATASET_SPECS.items():
        rows: list[dict[str, Any]] = []
        zh = hub_id.endswith("-zh")
        for i in range(n):
            if spec["kind"] == "alpaca":
                sent = _zh_sentence if zh else _en_sentence
                inp = ""
                if i % 3 == 1:
                    inp = sent(rng, 3, 12)
                    if zh and spec.get("strip_input_prefix") and i % 2:
                        inp = spec["strip_input_prefix"] + inp
                rows.append({"instruction": sent(rng, 4, 16), "input": inp,
                             "output": " ".join(sent(rng, 5, 20) for _ in range(rng.randint(1, 4)))})
            else:
                tag = "zh" if i % 2 == 0 else "en"
                if tag == "zh":
                    rows.append({"query": "你是谁？" if i % 4 == 0 else _zh_sentence(rng, 3, 8),
                                 "response": "我是{{NAME}}，由{{AUTHOR}}训练。" + _zh_sentence(rng, 5, 15),
                                 "tag": "zh"})
                else:
                    rows.append({"query": "Who are you?" if i % 4 == 1 else _en_sentence(rng, 3, 8),
                                 "response": "I am {{NAME}}, trained by {{AUTHOR}}. " + _en_sentence(rng, 5, 15),
                                 "tag": "en"})
        target = dest / spec["file"]
        _write_rows(target, rows)
        result[hub_id] = str(target)
    return result
