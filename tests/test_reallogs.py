"""The parser over real logs of other people's runs (ms-swift 1.x to 4.x), read from ../shared/reallogs.

Expectations come from ../shared/reallogs/INDEX.md: step count, completeness (summary line present) and peak
memory (None where the log has no memory key, e.g. Ascend NPU runs).
"""
import shutil

import pytest
from conftest import SHARED

from analysis.measure import steps
from analysis.parse.results import records_under

REALLOGS = SHARED / "reallogs"
EXPECTED = {  # file stem: (global steps, complete, peak GiB, log format)
    "01_lgc-FINANCE_DeepClima-R1_root": (438, True, 16.56, "v3"),
    "02_TangBinghao_swift_root-109d153": (14776, True, None, "v3"),
    "03_TangBinghao_swift_root-133a414": (11710, False, None, "v3"),
    "04_modelscope_ms-swift_baichuan2-7b-chat-v3": (20, False, None, "v3"),
    "05_cho104_AI-Chellenge-Ovis2_5_output_dft_loss-v0-20250828-230749": (2733, True, 77.33, "v3"),
    "06_yanghlll_msswift_ov2_smoke-v1-20260714-130839": (1, False, 74.58, "v4"),
    "07_hsushuai_ms-swift-scripts_agent_32b_v10": (3, False, 43.96, "v3"),
}

pytestmark = pytest.mark.skipif(not REALLOGS.is_dir(), reason="../shared/reallogs is not present")


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_real_log(tmp_path, stem):
    run = tmp_path / stem
    run.mkdir()
    shutil.copy(REALLOGS / f"{stem}.jsonl", run / "logging.jsonl")
    if (REALLOGS / f"{stem}.args.json").is_file():
        shutil.copy(REALLOGS / f"{stem}.args.json", run / "args.json")
    rec = records_under(run)[0]
    n_steps, complete, peak, fmt = EXPECTED[stem]
    assert (rec.global_steps, rec.complete, rec.peak_mem_gib, rec.log_format) == (n_steps, complete, peak, fmt)


def test_two_node_duplicates_are_dropped(tmp_path):
    run = tmp_path / "r"
    run.mkdir()
    shutil.copy(REALLOGS / "02_TangBinghao_swift_root-109d153.jsonl", run / "logging.jsonl")
    rec = records_under(run)[0]
    assert rec.duplicate_lines_dropped > 2900  # INDEX: every line written twice by two node masters
    logged = [s for s, _ in rec.train_loss]
    assert len(logged) == len(set(logged))


def test_day_unit_and_huge_summary(tmp_path):
    run = tmp_path / "r"
    run.mkdir()
    stem = "05_cho104_AI-Chellenge-Ovis2_5_output_dft_loss-v0-20250828-230749"
    shutil.copy(REALLOGS / f"{stem}.jsonl", run / "logging.jsonl")
    shutil.copy(REALLOGS / f"{stem}.args.json", run / "args.json")
    rec = records_under(run)[0]
    assert rec.trainable_params == 174_587_900 and rec.per_device_batch == 8 and rec.grad_accum == 2
    assert steps.step_time(rec).n_intervals > 2000
