"""experiments/offline/localdata.py: offline stand-ins for the recipe's hub datasets."""
from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest
import yaml

from experiments.base.errors import InputError
from experiments.offline import localdata
from experiments.offline.localdata import (
    HUB_TO_LOCAL,
    dataset_args,
    fill_self_cognition,
    make_tiny_local_data,
    name_pair,
    prepare_local_data,
)

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("SWIFTBENCH_SHARED_DATA", REPO.parent / "shared" / "data"))
RECIPE = ["AI-ModelScope/alpaca-gpt4-data-zh#500", "AI-ModelScope/alpaca-gpt4-data-en#500", "swift/self-cognition#500"]


def _rows(path: str | Path) -> list[dict]:
    path = Path(path)
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture
def shared_data() -> Path:
    if not all((SHARED_DATA / f).is_file() for f in HUB_TO_LOCAL.values()):
        pytest.skip(f"offline data samples not present in {SHARED_DATA}")
    return SHARED_DATA


def test_mapping_comes_from_yaml():
    data = yaml.safe_load((REPO / "experiments" / "offline" / "localdata.yaml").read_text(encoding="utf-8"))
    assert {k: v["file"] for k, v in data["datasets"].items()} == HUB_TO_LOCAL
    assert HUB_TO_LOCAL == {
        "AI-ModelScope/alpaca-gpt4-data-zh": "alpaca-gpt4-zh.json",
        "AI-ModelScope/alpaca-gpt4-data-en": "alpaca-gpt4-en.json",
        "swift/self-cognition": "self-cognition.jsonl",
    }


# --- name / author pairs, as ms-swift's init_self_cognition_preprocessor makes them -------------
def test_name_pair():
    assert name_pair("swift-robot") == ("swift-robot", "swift-robot")
    assert name_pair(["swift-robot"]) == ("swift-robot", "swift-robot")
    assert name_pair(["小黄", "Xiao Huang"]) == ("小黄", "Xiao Huang")
    assert name_pair("小黄 'Xiao Huang'") == ("小黄", "Xiao Huang")
    assert name_pair(None) is None


def test_fill_uses_zh_value_for_zh_rows_else_en():
    rows = [{"query": "你是{{NAME}}吗", "response": "我是{{NAME}}，由{{AUTHOR}}训练", "tag": "zh"},
            {"query": "Who made you?", "response": "{{AUTHOR}} made {{NAME}}.", "tag": "en"}]
    out = fill_self_cognition(rows, ["小黄", "Xiao Huang"], ["魔搭", "ModelScope"])
    assert out[0] == {"query": "你是小黄吗", "response": "我是小黄，由魔搭训练", "tag": "zh"}
    assert out[1]["response"] == "ModelScope made Xiao Huang."
    assert rows[0]["query"] == "你是{{NAME}}吗"  # input untouched
    # None leaves the placeholder, as ms-swift does
    assert fill_self_cognition(rows, None, "swift")[0]["response"] == "我是{{NAME}}，由swift训练"


# --- synthetic data (no ../shared needed) ---------------------------------------------------
def test_tiny_data_prepared_like_the_real_files(tmp_path):
    src = make_tiny_local_data(tmp_path / "src", n=12)
    assert set(src) == set(HUB_TO_LOCAL)
    assert all(Path(p).name == HUB_TO_LOCAL[h] for h, p in src.items())
    raw_sc = _rows(src["swift/self-cognition"])
    assert len(raw_sc) == 12 and any("{{NAME}}" in r["response"] for r in raw_sc)
    assert {r["tag"] for r in raw_sc} == {"zh", "en"}
    raw_zh = _rows(src["AI-ModelScope/alpaca-gpt4-data-zh"])
    assert any(r["input"].startswith("输入：") for r in raw_zh)
    assert all(set(r) == {"instruction", "input", "output"} for r in raw_zh)

    local = prepare_local_data(tmp_path / "src", tmp_path / "run" / "data", "swift-robot", "swift")
    assert set(local) == set(HUB_TO_LOCAL)
    for path in local.values():
        assert Path(path).is_absolute() and Path(path).parent == (tmp_path / "run" / "data")
        assert "{{" not in Path(path).read_text(encoding="utf-8")
    sc = _rows(local["swift/self-cognition"])
    assert any("swift-robot" in r["response"] for r in sc)
    zh = _rows(local["AI-ModelScope/alpaca-gpt4-data-zh"])
    assert not any(r["input"].startswith("输入：") for r in zh)
    assert len(zh) == len(raw_zh)


def test_tiny_data_is_deterministic(tmp_path):
    a = make_tiny_local_data(tmp_path / "a", n=5, seed=3)
    b = make_tiny_local_data(tmp_path / "b", n=5, seed=3)
    for hub_id in HUB_TO_LOCAL:
        assert Path(a[hub_id]).read_bytes() == Path(b[hub_id]).read_bytes()


# --- dataset_args ----------------------------------------------------------------------------
def test_dataset_args_keeps_sample_suffix(tmp_path):
    local = {h: str(tmp_path / f) for h, f in HUB_TO_LOCAL.items()}
    args = dataset_args(RECIPE, local)
    assert args == [f"{tmp_path / 'alpaca-gpt4-zh.json'}#500", f"{tmp_path / 'alpaca-gpt4-en.json'}#500",
                    f"{tmp_path / 'self-cognition.jsonl'}#500"]
    assert dataset_args(["swift/self-cognition"], local) == [str(tmp_path / "self-cognition.jsonl")]
    assert dataset_args(["ms::swift/self-cognition#7"], local) == [f"{tmp_path / 'self-cognition.jsonl'}#7"]
    assert dataset_args(RECIPE, None) == RECIPE


def test_dataset_args_unknown_dataset_is_input_error(tmp_path):
    with pytest.raises(InputError):
        dataset_args(["AI-ModelScope/other#10"], {h: str(tmp_path / f) for h, f in HUB_TO_LOCAL.items()})


# --- errors ----------------------------------------------------------------------------------
def test_missing_file_is_input_error(tmp_path):
    src = tmp_path / "src"
    make_tiny_local_data(src, n=3)
    (src / "self-cognition.jsonl").unlink()
    with pytest.raises(InputError) as e:
        prepare_local_data(src, tmp_path / "dest", "swift-robot", "swift")
    assert e.value.path == str(src / "self-cognition.jsonl")


def test_missing_folder_is_input_error(tmp_path):
    with pytest.raises(InputError):
        prepare_local_data(tmp_path / "nope", tmp_path / "dest", "a", "b")


def test_bad_json_line_is_input_error(tmp_path):
    src = tmp_path / "src"
    make_tiny_local_data(src, n=3)
    with open(src / "self-cognition.jsonl", "a", encoding="utf-8") as f:
        f.write("{broken\n")
    with pytest.raises(InputError) as e:
        prepare_local_data(src, tmp_path / "dest", "a", "b")
    assert e.value.line == 4


# --- the shared offline samples (skipped where ../shared/data is absent) -----------------------
def test_shared_data_prepared(shared_data, tmp_path):
    local = prepare_local_data(shared_data, tmp_path, "swift-robot", "swift")
    counts = {h: len(_rows(p)) for h, p in local.items()}
    assert counts == {"AI-ModelScope/alpaca-gpt4-data-zh": 1000, "AI-ModelScope/alpaca-gpt4-data-en": 999,
                      "swift/self-cognition": 134}
    for path in local.values():
        assert "{{" not in Path(path).read_text(encoding="utf-8")
    zh = _rows(local["AI-ModelScope/alpaca-gpt4-data-zh"])
    assert not any(r["input"].startswith("输入：") for r in zh)
    assert [a.rsplit("#", 1)[1] for a in dataset_args(RECIPE, local)] == ["500", "500", "500"]


# --- faithfulness to ms-swift itself (skipped where ms-swift is not installed) -----------------
@pytest.fixture(scope="module")
def swift_dataset():
    if importlib.util.find_spec("swift") is None:
        pytest.skip("ms-swift not installed")
    from swift.dataset.dataset.llm import (
        AlpacaZhPreprocessor,
        SelfCognitionPreprocessor,
    )
    from swift.dataset.dataset_syntax import DatasetSyntax
    return SelfCognitionPreprocessor, AlpacaZhPreprocessor, DatasetSyntax


def test_matches_swift_self_cognition_preprocessor(swift_dataset, tmp_path):
    SelfCognitionPreprocessor, _, _ = swift_dataset
    src = SHARED_DATA / "self-cognition.jsonl"
    rows = _rows(src) if src.is_file() else _rows(make_tiny_local_data(tmp_path, 8)["swift/self-cognition"])
    for name, author in [(["小黄", "Xiao Huang"], ["魔搭", "ModelScope"]), ("swift-robot", "swift")]:
        pre = SelfCognitionPreprocessor()
        pre.set_name_author(name=name_pair(name), author=name_pair(author))
        ours = fill_self_cognition(rows, name, author)
        for row, mine in zip(rows, ours):
            msgs = pre.preprocess(dict(row))["messages"]
            assert (msgs[0]["content"], msgs[1]["content"]) == (mine["query"], mine["response"])


def test_swift_parses_local_path_with_sample_suffix(swift_dataset, tmp_path):
    _, _, DatasetSyntax = swift_dataset
    local = make_tiny_local_data(tmp_path / "d", 3)
    for arg in dataset_args(RECIPE, local):
        syntax = DatasetSyntax.parse(arg)
        assert syntax.dataset_type == "path" and syntax.dataset_sample == 500
        assert syntax.dataset == arg.rsplit("#", 1)[0]


def test_matches_swift_alpaca_zh_prefix_rule(swift_dataset):
    _, AlpacaZhPreprocessor, _ = swift_dataset
    prefix = localdata.DATASET_SPECS["AI-ModelScope/alpaca-gpt4-data-zh"]["strip_input_prefix"]
    assert AlpacaZhPreprocessor.concat_inst_input("做", prefix + "这个") == "做\n这个"
