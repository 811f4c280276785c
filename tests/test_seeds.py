"""The seed articles' numbers as reviewed data: no guessed digit, arithmetic that recomputes, schema enforced."""
from __future__ import annotations

import ast
import math
import operator
from pathlib import Path

import pytest
import yaml

from analysis.core.seeds import (
    DEFAULT_SEEDS_DIR,
    RECIPE_SEED,
    load_seed,
    published_figures,
    published_recipe,
)
from experiments.base.errors import InputError

REPO = Path(__file__).resolve().parents[1]
SEED_FILES = sorted(DEFAULT_SEEDS_DIR.glob("*.yaml"))
SOURCE_DIRS = [REPO / "shared" / "seeds", REPO.parent / "shared" / "seeds"]
CHINESE_DIGITS = str.maketrans("一二三四五六七八九十", "123456789X")

EXPECTED_FLAGS = {
    "model": "Qwen/Qwen2.5-7B-Instruct",
    "train_type": "lora",
    "dataset": [
        "AI-ModelScope/alpaca-gpt4-data-zh#500",
        "AI-ModelScope/alpaca-gpt4-data-en#500",
        "swift/self-cognition#500",
    ],
    "torch_dtype": "bfloat16",
    "num_train_epochs": 1,
    "per_device_train_batch_size": 1,
    "per_device_eval_batch_size": 1,
    "learning_rate": 1e-4,
    "lora_rank": 8,
    "lora_alpha": 32,
    "target_modules": "all-linear",
    "gradient_accumulation_steps": 16,
    "eval_steps": 50,
    "save_steps": 50,
    "save_total_limit": 2,
    "logging_steps": 5,
    "max_length": 2048,
    "output_dir": "output-hw-test",
    "system": "You are a helpful assistant.",
    "warmup_ratio": 0.05,
    "dataloader_num_workers": 4,
    "model_author": "swift",
    "model_name": "swift-robot",
}

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.Pow: operator.pow, ast.USub: operator.neg, ast.UAdd: operator.pos}
_FUNCS = {"ceil": math.ceil, "floor": math.floor}


def evaluate(formula) -> float:
    """Arithmetic only (numbers, + - * / **, ceil, floor): the YAML's formulas are data, never code."""
    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.operand))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS
                and len(node.args) == 1 and not node.keywords):
            return _FUNCS[node.func.id](ev(node.args[0]))
        raise ValueError(f"not plain arithmetic: {ast.dump(node)}")
    return ev(ast.parse(str(formula), mode="eval"))


def is_subsequence(fragment: str, printed: str) -> bool:
    chars = iter(printed)
    return all(c in chars for c in fragment)


def all_checks():
    for path in SEED_FILES:
        for claim in load_seed(path)["claims"]:
            for check in claim.get("internal_checks", []):
                yield pytest.param(claim, check, id=f"{path.stem}:{claim['id']}:{check['id']}")


ARTICLE_CLASSES = {"a10", "rtx4090", "a100", "h100"}  # the classes the seed article measured


@pytest.fixture(scope="module")
def hw_seed() -> dict:
    return load_seed(DEFAULT_SEEDS_DIR / RECIPE_SEED)


@pytest.fixture(scope="module")
def figures():
    return published_figures()


def test_three_seed_files_present():
    names = {p.name for p in SEED_FILES}
    assert {"ms_swift_hw_test.yaml", "hardware_rental.yaml", "platform_speed.yaml"} <= names


@pytest.mark.parametrize("path", SEED_FILES, ids=lambda p: p.stem)
def test_seed_loads_and_names_its_source(path):
    data = load_seed(path)
    assert data["source"].endswith(".txt")
    assert data["claims"], "every seed records at least one claim"


def test_full_figures_have_numbers_whose_digits_are_in_the_text(figures):
    full = figures[figures["legible"] == "full"]
    assert len(full) > 0
    for row in full.itertuples():
        assert isinstance(row.value, float) and not math.isnan(row.value), row.id
        value = int(row.value) if float(row.value).is_integer() else row.value
        text = row.text.replace(",", "").replace("\n", "").translate(CHINESE_DIGITS)
        assert str(value) in text, f"{row.id}: {value} not legible in {row.text!r}"


def test_partial_and_illegible_figures_have_no_value(figures):
    rest = figures[figures["legible"] != "full"]
    assert len(rest) > 0
    bad = rest[rest["value"].notna()]
    assert bad.empty, list(bad["id"])


def test_ms_per_step_exactly_as_published(figures):
    ms = figures[figures["metric"] == "ms_per_step"].set_index("hw")["value"].to_dict()
    assert ms == {"a10": 1248, "rtx4090": 892, "a100": 621, "h100": 387}


def test_speed_table_complete_and_rest_partial(figures):
    speed = figures[figures["metric"].isin(["ms_per_step", "tokens_per_s", "speedup_vs_a10"])]
    assert len(speed) == 12
    assert set(speed[speed["metric"] != "ms_per_step"]["legible"]) == {"partial"}


def test_memory_table_is_not_read_as_numbers(figures):
    mem = figures[figures["metric"].isin(["peak_mem_gib", "max_per_device_batch", "lora_adapter_share_pct"])]
    assert len(mem) == 12
    assert mem["value"].isna().all()
    assert set(mem[mem["metric"] != "lora_adapter_share_pct"]["legible"]) == {"none"}


def test_final_losses_keep_their_lost_integer_part_unknown(figures):
    losses = figures[figures["metric"].isin(["final_eval_loss", "loss_after_disable_cuda_graph"])]
    assert dict(zip(losses["id"], losses["text"])) == {
        "a10.final_eval_loss": "731",
        "rtx4090.final_eval_loss": "777",
        "a100.final_eval_loss": "729",
        "h100.final_eval_loss": "712",
        "rtx4090.loss_after_disable_cuda_graph": "725",
    }
    assert set(losses["legible"]) == {"partial"} and losses["value"].isna().all()


def test_prose_numbers_recorded(figures):
    by_id = figures.set_index("id")["value"].to_dict()
    assert by_id["all.total_steps"] == 873
    assert by_id["rtx4090.faster_than_a10_pct"] == 40
    assert by_id["rtx4090.share_of_a100_speed_pct"] == 70
    assert by_id["h100.step_time_pct_of_a10"] == 31
    assert by_id["all.lora_rank4_mem_saving_pct"] == 25
    assert (by_id["all.dataloader_workers8_speedup_pct_min"],
            by_id["all.dataloader_workers8_speedup_pct_max"]) == (15, 20)
    assert by_id["a100.memory_bandwidth_claimed_tbs"] == 2
    assert (by_id["a10.memory_bandwidth_claimed_gbs"], by_id["h100.memory_bandwidth_claimed_tbs"]) == (600, 4)
    assert by_id["all.lora_7b_sufficient_gpu_mem_gb"] == 24
    assert math.isnan(by_id["all.lora_rank4_loss_increase"])


def test_published_figures_columns(figures):
    assert list(figures.columns) == ["source", "id", "hw", "metric", "value", "text", "legible", "unit", "meaning"]
    assert figures["id"].is_unique
    assert set(figures["hw"].dropna()) <= ARTICLE_CLASSES


@pytest.mark.parametrize("claim, check", list(all_checks()))
def test_internal_check_arithmetic_recomputes(claim, check):
    computed = evaluate(check["formula"])
    assert computed == pytest.approx(check["result"], rel=1e-4, abs=5e-5), check["id"]
    if "format" in check:
        assert check["format"].format(computed) == check["printed"]
        assert check["consistent"] == is_subsequence(check["fragment"].replace("\n", ""), check["printed"])
    elif check.get("consistent") is not None:
        relation = check.get("relation", "==")
        if relation == ">=":
            expected = computed >= check["published"]
        elif relation == "<=":
            expected = computed <= check["published"]
        else:
            expected = abs(computed - check["published"]) <= check["tolerance"]
        assert check["consistent"] == expected, check["id"]


def test_fragment_checks_use_the_published_step_times_and_fragments(hw_seed, figures):
    by_id = figures.set_index("id")
    claims = {c["id"]: c for c in hw_seed["claims"]}
    tokens = [c for c in claims["speed.tokens_per_s_derivation"]["internal_checks"] if "hw" in c]
    speedups = claims["speed.table_speedups"]["internal_checks"]
    assert {c["hw"] for c in tokens} == {c["hw"] for c in speedups} == ARTICLE_CLASSES
    for check in tokens:
        ms = int(by_id.loc[f"{check['hw']}.ms_per_step", "value"])
        assert check["formula"] == f"2048 * 1000 / {ms}"
        assert check["fragment"] == by_id.loc[f"{check['hw']}.tokens_per_s", "text"]
        assert check["consistent"] is True
    for check in speedups:
        ms = int(by_id.loc[f"{check['hw']}.ms_per_step", "value"])
        assert check["formula"] == f"1248 / {ms}"
        assert check["fragment"] == by_id.loc[f"{check['hw']}.speedup_vs_a10", "text"]


def test_key_inconsistencies_recorded(hw_seed):
    checks = {c["id"]: c for claim in hw_seed["claims"] for c in claim.get("internal_checks", [])}
    assert checks["optimizer_steps_per_epoch"]["result"] == 94
    assert checks["optimizer_steps_per_epoch"]["consistent"] is False
    assert checks["a100_40gb_bandwidth"]["consistent"] is False
    assert checks["h100_sxm_bandwidth"]["consistent"] is False
    assert checks["a10_over_rtx4090"]["consistent"] is True
    assert checks["h100_over_a10"]["consistent"] is True


def test_recipe_flags_as_published(hw_seed):
    assert published_recipe() == EXPECTED_FLAGS
    detail = published_recipe(detail=True)
    assert detail["warmup_ratio"]["legible"] == "partial" and detail["warmup_ratio"]["text"] == "05"
    assert detail["model"]["legible"] == "partial" and "7B" in detail["model"]["basis"]
    assert hw_seed["recipe"]["env"] == {"CUDA_VISIBLE_DEVICES": "0"}


def test_hardware_and_environment(hw_seed):
    assert set(hw_seed["hardware"]) - {"note"} == ARTICLE_CLASSES
    mem = {k: v["memory"]["value_gb"] for k, v in hw_seed["hardware"].items() if k in ARTICLE_CLASSES}
    assert mem == {"a10": 24, "rtx4090": 24, "a100": 40, "h100": 80}
    assert {"os", "cuda", "pytorch", "ms_swift", "python"} <= set(hw_seed["environment"])
    assert all(isinstance(item["legible"], bool) for item in hw_seed["environment"].values())


def test_nonexistent_flags(hw_seed):
    assert {f["flag"] for f in hw_seed["nonexistent_flags"]} == {"--disable_cuda_graph", "--disable_flash_attn"}


def test_platform_speed_has_no_usable_numbers():
    data = load_seed(DEFAULT_SEEDS_DIR / "platform_speed.yaml")
    assert data["usable_numbers"] is False
    assert not data.get("figures")


def _source_text(name: str) -> str:
    for folder in SOURCE_DIRS:
        if (folder / name).is_file():
            return (folder / name).read_text(encoding="utf-8")
    pytest.skip(f"seed source {name} not available here")


def _strings(node, keys=("text", "quote", "row_text", "fragment")):
    """Every quoted or extracted string in a seed, wherever it sits."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in keys and isinstance(value, str):
                yield key, value
            else:
                yield from _strings(value, keys)
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item, keys)


@pytest.mark.parametrize("path", SEED_FILES, ids=lambda p: p.stem)
def test_quotes_and_texts_are_verbatim(path):
    data = load_seed(path)
    source = _source_text(data["source"])
    for section in ("figures", "claims", "environment", "hardware", "nonexistent_flags"):
        for key, value in _strings(data.get(section)):
            assert value in source, f"{section} {key} not verbatim: {value!r}"
    if "recipe" in data:
        assert data["recipe"]["quote"] in source
        for name, item in data["recipe"]["flags"].items():
            if isinstance(item, dict):
                assert item["text"] in data["recipe"]["quote"], name
    if "setup" in data:
        assert data["setup"]["quote"] in source


# ---- a broken seed must be refused, naming the file and the figure ----------------------------------------

def _broken_copy(tmp_path: Path, mutate) -> Path:
    data = yaml.safe_load((DEFAULT_SEEDS_DIR / RECIPE_SEED).read_text(encoding="utf-8"))
    mutate(data)
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return path


def _figure(data, fid):
    return next(f for f in data["figures"] if f["id"] == fid)


@pytest.mark.parametrize("mutate, needle", [
    (lambda d: _figure(d, "a10.tokens_per_s").update(value=1641), "a10.tokens_per_s"),
    (lambda d: _figure(d, "h100.ms_per_step").update(value=None), "h100.ms_per_step"),
    (lambda d: _figure(d, "a100.final_eval_loss").update(legible="mostly"), "a100.final_eval_loss"),
    (lambda d: _figure(d, "a10.ms_per_step").update(hw="a800"), "a10.ms_per_step"),
    (lambda d: _figure(d, "a10.ms_per_step").pop("text"), "a10.ms_per_step"),
    (lambda d: d["claims"][0].update(kind="vibes"), "speed.rtx4090_vs_a10_and_a100"),
    (lambda d: d.pop("summary"), "summary"),
])
def test_broken_seed_raises_input_error(tmp_path, mutate, needle):
    path = _broken_copy(tmp_path, mutate)
    with pytest.raises(InputError) as err:
        load_seed(path)
    assert err.value.path == str(path)
    assert "broken.yaml" in str(err.value) and needle in str(err.value)


def test_broken_yaml_syntax_raises_with_line(tmp_path):
    path = tmp_path / "garbled.yaml"
    path.write_text("source: x.txt\ntitle: t\nsummary: s\nclaims: [\n  {id: a,\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_seed(path)
    assert "garbled.yaml" in str(err.value) and err.value.line is not None


def test_broken_seed_in_a_directory_stops_published_figures(tmp_path):
    _broken_copy(tmp_path, lambda d: _figure(d, "a10.speedup_vs_a10").update(value=1.0))
    with pytest.raises(InputError, match="a10.speedup_vs_a10"):
        published_figures(tmp_path)


# ----------------------------------------------------------------- analysis.judge: seed checks, published


def test_seed_checks_frame_recomputes_every_formula():
    from analysis.judge.audit.seed_checks import checks_frame, load_seeds, safe_eval

    seeds = load_seeds(DEFAULT_SEEDS_DIR)
    assert set(seeds) == {p.name for p in SEED_FILES}
    df = checks_frame(seeds)
    n_checks = sum(len(c.get("internal_checks") or []) for data in seeds.values() for c in data["claims"])
    assert len(df) == n_checks > 20 and df["result_ok"].all()
    for row in df.itertuples():  # the frame's recomputation is this module's plain-arithmetic evaluator
        assert row.recomputed == pytest.approx(evaluate(row.formula)), row.check
    row = df[(df.claim == "convergence.total_steps") & (df.check == "optimizer_steps_per_epoch")].iloc[0]
    assert row.recomputed == 94 and row.published == 873 and row.consistent == False  # noqa: E712
    a10 = df[(df.claim == "speed.tokens_per_s_derivation") & (df.check == "a10")].iloc[0]
    assert a10.published == "1,641" and a10.fragment == "1,\n6"  # printed number and extracted fragment as stored
    assert safe_eval("ceil(1500 / (1 * 16))") == 94 and safe_eval("__import__('os')") is None


def test_published_comparisons_are_computed_from_the_figures(figures):
    from analysis.judge.answer import published as P

    assert P.hardware_with(figures, "ms_per_step") == ["a10", "rtx4090", "a100", "h100"]
    assert P.hardware_with(figures, "lora_adapter_share_pct") == []  # only last digits survive
    assert P.hardware_with(figures, "lora_adapter_share_pct", legible=False) == ["a10", "rtx4090", "a100", "h100"]
    assert P.value(figures, "a10", "ms_per_step") == 1248 and P.value(figures, "a10", "tokens_per_s") is None
    assert P.value(figures, None, "total_steps") == 873 and P.text(figures, None, "dataset_samples") == "1500"
    assert P.text(figures, None, "lora_adapter_share_range_pct") == "5%-\n2%"
    assert P.article_tokens_per_step() == EXPECTED_FLAGS["max_length"] == 2048
    assert P.epoch(figures) == P.ArticleEpoch(samples=1500, batch=16, samples_per_batch=93.75, steps=94,
                                              published_steps=873)
    assert P.nearest("a100", figures) == ("a100", "same hardware")
    ref, relation = P.nearest("h200", figures)  # the same dense BF16 peak as the H100, 989 TFLOPS
    assert ref == "h100" and relation.startswith("cross-hardware: H200 measured vs H100 SXM5 80GB published (same")
    facts = P.speed_facts([], [], figures)
    assert [(x.hw, round(x.tokens_per_s)) for x in facts.published] == [
        ("a10", 1641), ("rtx4090", 2296), ("a100", 3298), ("h100", 5292)]  # the article's printed column
    assert facts.epoch is not None and facts.epoch.steps == 94 and facts.tokens_per_sample is None
    assert facts.steps == []
