"""The log reader on real and ms-swift-shaped logs: kinds, steps, formats, torn and bad input."""
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.parse.logs import (
    DatasetStats,
    parse_dataset_stats,
    parse_elapsed,
    parse_param_info,
    read_log,
)
from experiments.base.errors import InputError


@pytest.mark.parametrize("text,seconds", [("7s", 7), ("3m 7s", 187), ("1h 2m 3s", 3723), ("1d 0h 5m 2s", 86702),
                                          ("1d 3h 44m 58s", 99898), ("", None), ("soon", None), (None, None)])
def test_elapsed_strings(text, seconds):
    assert parse_elapsed(text) == seconds


def test_summary_strings():
    s = parse_dataset_stats("127.801209±104.576382, min=29.000000, max=593.000000, size=1489")
    assert s == DatasetStats(mean=127.801209, std=104.576382, min=29.0, max=593.0, size=1489)
    p = parse_param_info("PeftModelForCausalLM: 7635.8016M Params (20.1851M Trainable [0.2643%]), 0.0001M Buffers.")
    assert p is not None and p.trainable_params == 20_185_100 and p.total_params == 7_635_801_600


def test_reference_log_kinds(fixtures):
    run = read_log(fixtures / "h200-qwen2.5-7b-lora-bs16-ga1.logging.jsonl")
    assert [ln.step for ln in run.train] == [1] + list(range(5, 95, 5))
    assert [ln.step for ln in run.evals] == [50, 94]
    assert run.train_end.get("train_runtime") == pytest.approx(104.8666)
    assert run.summary.line_no == 23 and run.log_format == "v4" and not run.torn_last_line


def test_v3_format_detected(fixtures):
    run = read_log(fixtures / "v3_full")
    assert run.log_format == "v3" and run.args["swift_version"] == "3.8.1"


def test_torn_last_line_is_not_an_error(fixtures):
    run = read_log(fixtures / "v4_killed")
    assert run.torn_last_line and run.summary is None and run.train[-1].step == 35


def _write(tmp_path, text):
    p = tmp_path / "logging.jsonl"
    p.write_text(text, encoding="utf-8")
    return p


TRAIN = '{"loss": 1.0, "global_step/max_steps": "%d/10", "train_speed(s/it)": %s}\n'


@pytest.mark.parametrize("text,line,needle", [
    ("", None, "empty"),
    ("   \n\n", None, "empty"),
    (TRAIN % (1, "1.0") + "not json\n" + TRAIN % (2, "1.0"), 2, "not valid JSON"),
    (TRAIN % (1, "1.0") + "[1, 2]\n", 2, "not an object"),
    (TRAIN % (1, "1.0") + "null\n", 2, "not an object"),
    (TRAIN % (5, "1.0") + TRAIN % (3, "1.0"), 2, "backwards"),
    (TRAIN % (1, "0.0"), 1, "zero"),
    ("garbage without newline", 1, "not valid JSON"),
])
def test_bad_input_names_file_and_line(tmp_path, text, line, needle):
    p = _write(tmp_path, text)
    with pytest.raises(InputError) as err:
        read_log(p)
    assert err.value.path == str(p) and err.value.line == line and needle in err.value.message
    assert "\n" not in str(err.value)


def test_folder_without_log(tmp_path):
    with pytest.raises(InputError, match="no logging.jsonl"):
        read_log(tmp_path)


def test_invalid_line_with_newline_at_end_is_bad_input(tmp_path):
    p = _write(tmp_path, TRAIN % (1, "1.0") + '{"loss": 1.0, "glob\n')
    with pytest.raises(InputError) as err:
        read_log(p)
    assert err.value.line == 2


def test_duplicate_lines_of_two_nodes_are_dropped(tmp_path):
    a = {"loss": 1.0, "acc": 0.5, "global_step": 1, "train_speed(iter/s)": 0.11}
    b = dict(a, **{"train_speed(iter/s)": 0.26})
    p = _write(tmp_path, "\n".join(json.dumps(x) for x in (a, b)) + "\n")
    run = read_log(p)
    assert len(run.train) == 1 and run.duplicates_dropped == 1


# Lines the way ms-swift could write them, then cut anywhere: the reader returns or raises InputError, only.
line_strategy = st.fixed_dictionaries({}, optional={
    "loss": st.one_of(st.floats(allow_nan=True), st.text(max_size=5), st.none()),
    "eval_loss": st.floats(),
    "global_step/max_steps": st.one_of(st.text(max_size=6), st.from_regex(r"\A[0-9]{1,3}/[0-9]{1,3}\Z")),
    "global_step": st.one_of(st.integers(-5, 500), st.text(max_size=3)),
    "train_speed(s/it)": st.one_of(st.floats(), st.text(max_size=4)),
    "train_speed(iter/s)": st.floats(),
    "memory(GiB)": st.one_of(st.floats(), st.text(max_size=3)),
    "elapsed_time": st.text(max_size=8),
    "train_dataset": st.text(max_size=20),
    "log_history": st.lists(st.integers(), max_size=2),
    "memory": st.one_of(st.floats(), st.dictionaries(st.text(max_size=2), st.integers(), max_size=1)),
    "train_runtime": st.floats(),
})


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.one_of(line_strategy.map(json.dumps), st.text(max_size=30)), min_size=0, max_size=8),
       cut=st.integers(0, 400))
def test_reader_returns_or_raises_input_error(tmp_path_factory, lines, cut):
    from analysis.measure.summary import run_summary
    from analysis.parse.record import record_from_log

    folder = tmp_path_factory.mktemp("h")
    text = "\n".join(lines) + "\n"
    _write(folder, text[: len(text) - cut % (len(text) + 1)])
    try:
        run = read_log(folder)
    except InputError as exc:
        assert str(exc).startswith(str(folder / "logging.jsonl"))
        return
    metrics = run_summary(record_from_log(run))  # the record and every measurement of it, never an exception
    json.dumps(metrics, default=str)
