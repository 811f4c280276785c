"""Memory claims at a card's capacity in GiB (analysis/judge/audit/card.py): a 24 GB card holds 22.35 GiB, so only a run
capped there (the cap its launch.json recorded) settles "24 GB is enough for 7B LoRA"; runs under larger caps count
for a card only through a reserved peak below its capacity."""
import json
import shutil

import pytest

from analysis.judge.audit import card, config, rulespec
from analysis.judge.audit.rules import RULES
from analysis.parse import sidefiles
from experiments.base import hardware
from experiments.base.errors import InputError
from experiments.base.paths import relative
from experiments.recipes import catalog
from tests.test_judge import _runs, _synthetic, _table, _write_run, launch_record


def test_card_capacity_and_the_planned_run():
    assert [round(card.card_gib(gb), 2) for gb in (24, 40, 48, 80)] == [22.35, 37.25, 44.7, 74.51]
    for key in ("a10", "rtx4090", "l4"):  # hardware.yaml's 24 GB classes
        assert card.card_gib(hardware.require(key).memory_gb) == card.card_gib(24)
    e = catalog.experiment("cap22-seed-bs1")
    assert e["recipe"] == "seed" and not (e.get("overrides") or {}).get("per_device_train_batch_size")
    assert e["launcher"] == {"mem_cap_gib": 22.35, "longest_first": True, "pad_to": 2048}
    assert e["max_steps"] == 3 and e["est_gpu_s"] > 0
    # the bytes the launcher caps an H200 at for it are within the card
    assert launch_record(22.35)["cap_bytes"] / card.GIB <= card.card_gib(24) < launch_record(24)["cap_bytes"] / card.GIB
    assert config.claim("lora-7b-24gb").rule == rulespec.CappedFit("cap22-seed-bs1", 24, ("cap24", "cap40", "cap80"))


def _seed_bs1(root, *, peak=17.1, oom=False, cap="defined"):
    if oom:
        return _write_run(root, "cap22-seed-bs1", lines=None, args=None, status="failed",
                          reason="OOM: CUDA out of memory", cap=cap)
    lines, args = _synthetic(3, 6.0, peak, 12.0, bs=1, ga=16)
    return _write_run(root, "cap22-seed-bs1", lines=lines, args=args, cap=cap)


def test_the_24gb_claim_flips_with_a_run_capped_at_the_cards_capacity(tmp_path):
    root = tmp_path / "results"
    lines, args = _synthetic(2, 1.0, 23.62, 11.0, bs=8)
    _write_run(root, "cap24-bs8", lines=lines, args=args)  # a 24 GiB cap is a bigger card than 24 GB
    row = _table(root).loc["lora-7b-24gb"]
    assert row.verdict == "inconclusive" and row.runs == []
    assert row.detail.startswith("no run capped at <= 22.35 GiB exists yet (cap22-seed-bs1 not run)")
    run = _seed_bs1(root)
    row = _table(root).loc["lora-7b-24gb"]
    assert row.verdict == "holds" and row.runs == [relative(run)]
    assert (row.numbers["cap_gib"], row.numbers["peak_gib"], row.numbers["batch"]) == (22.35, 17.1, 1)
    assert row.key == "bs 1 under a 22.35 GiB cap, peak 17.1 GiB"
    assert "trained under a 22.35 GiB cap (cap22-seed-bs1 20261201-000000)" in row.detail
    # the cap is the one launch.json recorded: above the card's capacity, or none, the run is refused
    (run / "launch.json").write_text(json.dumps({"mem_cap": launch_record(24)}))
    row = _table(root).loc["lora-7b-24gb"]
    assert row.verdict == "inconclusive" and row.numbers["cap_gib"] == 24 and "was capped at 24 GiB" in row.detail
    (run / "launch.json").unlink()
    row = _table(root).loc["lora-7b-24gb"]
    assert row.verdict == "inconclusive" and "records no applied allocator cap" in row.detail
    shutil.rmtree(run)
    run = _seed_bs1(root, oom=True)
    row = _table(root).loc["lora-7b-24gb"]
    assert row.verdict == "does not hold" and row.runs == [relative(run)]
    assert row.detail.startswith("cap22-seed-bs1 (longest samples first, rows padded to 2048) OOMed under a 22.35 "
                                 "GiB cap (cap22-seed-bs1 20261201-000000): OOM: CUDA out of memory")


@pytest.mark.parametrize("cap, peak, oom, fits", [
    (22.35, 21.9, False, True),    # capped at the card: trained is enough
    (24, 21.9, False, True),       # a larger cap, reserved peak below the card
    (24, 22.35, False, None),      # a peak at the card's capacity (rounded): the cap may have acted
    (24, 23.6, False, None),
    (None, 35.0, False, None),     # uncapped, above the card
    (None, 17.0, False, True),
    (24, None, True, False),       # OOM with more memory than the card
    (16, None, True, None),        # OOM with less: says nothing
])
def test_what_one_run_says_about_a_24gb_card(tmp_path, cap, peak, oom, fits):
    root = tmp_path / "results"
    if oom:
        _write_run(root, "best24-a", lines=None, args=None, status="failed", reason="OOM: CUDA out of memory", cap=cap)
    else:
        lines, args = _synthetic(3, 1.0, peak, 11.0)
        _write_run(root, "best24-a", lines=lines, args=args, cap=cap)
    rec = _runs(root).get("best24-a")[0]
    assert card.at_capacity(rec, card.card_gib(24)).fits is fits


def test_class_best_needs_a_candidate_shown_to_fit_the_card(tmp_path):
    """best24-a trained under its 24 GiB cap at 22.6 GiB reserved: above a 24 GB card's 22.35 GiB, so it says
    nothing (it held 'holds' when the cap itself was the class); best24-b OOMed under 24 GiB: it does not fit."""
    root = tmp_path / "results"
    lines, args = _synthetic(3, 1.0, 22.6, 11.0)
    _write_run(root, "best24-a", lines=lines, args=args)
    _write_run(root, "best24-b", lines=None, args=None, status="failed", reason="OOM: CUDA out of memory")
    res = RULES["class_best"](config.claim("best-per-class-24"), _runs(root))
    assert res.verdict == "inconclusive"
    assert res.detail.startswith("no candidate shown to fit the 24 GB card (22.35 GiB): best24-a trained under a "
                                    "24 GiB cap, reserved peak 22.6 GiB >= the card's 22.35 GiB: says nothing")
    shutil.rmtree(root / "h200" / "best24-a")
    _write_run(root, "best24-a", lines=None, args=None, status="failed", reason="OOM: CUDA out of memory")
    assert RULES["class_best"](config.claim("best-per-class-24"), _runs(root)).verdict == "does not hold"


@pytest.mark.parametrize("record, expected", [
    ({"requested_gib": 24.0, "applied": True, "cap_bytes": 25769803776},
     {"requested_gib": 24.0, "applied": True, "cap_bytes": 25769803776}),
    ({"requested_gib": 24, "applied": False, "reason": "no CUDA device in this process"},
     {"requested_gib": 24.0, "applied": False}),
    ({"requested_gib": "24", "applied": True, "cap_bytes": 1}, None),
    ({"requested_gib": 24, "applied": "yes"}, None),
    ({"requested_gib": 24, "applied": True}, None),                      # applied without its bytes
    ({"requested_gib": 24, "applied": True, "cap_bytes": -5}, None),
    ({"requested_gib": True, "applied": True, "cap_bytes": 5}, None),
    ([24], None),
])
def test_launch_json_cap_record(tmp_path, record, expected):
    (tmp_path / "launch.json").write_text(json.dumps({"mem_cap": record}))
    assert sidefiles.read_mem_cap(tmp_path) == expected
    (tmp_path / "launch.json").write_text("{not json")  # a broken launch.json is bad input, as for the quick record
    with pytest.raises(InputError, match="not valid JSON"):
        sidefiles.read_mem_cap(tmp_path)
    (tmp_path / "launch.json").unlink()
    assert sidefiles.read_mem_cap(tmp_path) is None
