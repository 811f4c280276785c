"""experiments/probes/sdpa_shapes.py: what a new packed-row length costs an attention call's host time (the reason for
the plugin's sdpa_no_cudnn, tests/test_plugin.py)."""
import json
import random

import pytest

from experiments.probes import sdpa_shapes


def test_packed_causal_mask_by_hand():
    m = sdpa_shapes.packed_causal_mask([2, 3])[0, 0].int().tolist()
    assert m == [[1, 0, 0, 0, 0],
                 [1, 1, 0, 0, 0],
                 [0, 0, 1, 0, 0],
                 [0, 0, 1, 1, 0],
                 [0, 0, 1, 1, 1]]


def test_doc_lengths_cut_the_row_into_non_empty_samples():
    rng = random.Random(3)
    for total, docs in ((16, 16), (1700, 16), (50, 2)):
        lengths = sdpa_shapes.doc_lengths(total, docs, rng)
        assert sum(lengths) == total and len(lengths) == docs and min(lengths) >= 1


def test_cpu_run_reports_new_and_repeated_lengths(tmp_path, capsys):
    out = tmp_path / "sdpa.json"
    rc = sdpa_shapes.main(["--configs", "default,no-cudnn", "--new", "3", "--repeat", "2", "--heads", "4",
                           "--kv-heads", "2", "--head-dim", "8", "--min-tokens", "40", "--max-tokens", "60",
                           "--docs", "4", "--out", str(out)])
    assert rc == 0
    data = json.loads(out.read_text())
    assert [d["config"] for d in data] == ["default", "no-cudnn"]
    d = data[0]
    assert d["device"] == "cpu" and d["disabled_backends"] == [] and data[1]["disabled_backends"] == ["cudnn"]
    calls = d["calls"]
    assert [c["repeat"] for c in calls] == [False] * 3 + [True] * 2
    assert len({c["tokens"] for c in calls[:3]}) == 3 and all(40 <= c["tokens"] < 60 for c in calls)
    assert calls[3]["tokens"] == calls[4]["tokens"] == calls[0]["tokens"]  # repeats reuse a length already seen
    assert d["new_lengths"]["fwd_host_ms"] > 0 and d["repeated_length"]["total_ms"] > 0
    assert "new lengths fwd" in capsys.readouterr().out


def test_bad_arguments_are_refused():
    with pytest.raises(SystemExit):
        sdpa_shapes.main(["--configs", "nope"])
    for bad in (["--heads", "6", "--kv-heads", "4"], ["--kv-heads", "0"], ["--new", "0"], ["--docs", "0"],
                ["--repeat", "-1"]):
        with pytest.raises(SystemExit) as exc:
            sdpa_shapes.main(bad)
        assert exc.value.code == 2, bad
