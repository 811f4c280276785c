"""experiments/record/gpm.py against a fake NVML: the metrics between two marks, the per-step lines, and no GPM on
CPU."""
import json
import types

import pynvml
import pytest

from experiments.base.errors import InputError
from experiments.record import gpm


class FakeNvml:
    """Enough of pynvml for experiments.record.gpm: real ctypes structures, scripted metric values per interval."""

    c_nvmlGpmMetricsGet_t = pynvml.c_nvmlGpmMetricsGet_t
    NVML_GPM_METRICS_GET_VERSION = pynvml.NVML_GPM_METRICS_GET_VERSION

    def __init__(self, supported=True, values=None):
        self.supported = supported
        self.values = list(values or [])
        self.samples = 0
        self.freed = 0

    def nvmlDeviceGetCount(self):
        return 1

    def nvmlDeviceGetHandleByIndex(self, i):
        return f"gpu{i}"

    def nvmlGpmQueryDeviceSupport(self, handle):
        return types.SimpleNamespace(isSupportedDevice=int(self.supported))

    def nvmlGpmSampleAlloc(self):
        return pynvml.c_nvmlGpmSample_t()

    def nvmlGpmSampleFree(self, s):
        self.freed += 1

    def nvmlGpmSampleGet(self, handle, s):
        self.samples += 1
        return s

    def nvmlGpmMetricsGet(self, mg):
        assert mg.version == pynvml.NVML_GPM_METRICS_GET_VERSION and mg.numMetrics == len(gpm.METRICS)
        vals = self.values.pop(0)
        for i in range(mg.numMetrics):
            mid = mg.metrics[i].metricId
            mg.metrics[i].value = vals.get(mid, 0.0)
            mg.metrics[i].nvmlReturn = 0 if mid in vals else 3  # NVML_ERROR_NOT_SUPPORTED for a missing one
        return mg


def test_marks_give_each_interval_its_metrics(monkeypatch):
    lib = FakeNvml(values=[{1: 12.5, 2: 10.0, 5: 3.25, 10: 7.0}, {1: 88.0, 2: 80.5}])
    g, why = gpm.Gpm.open(lib, index=0)
    assert why == "ok" and lib.samples == 1  # open takes the first sample
    first = g.mark()
    second = g.mark()
    assert first["graphics_util"] == 12.5 and first["sm_util"] == 10.0 and first["tensor_util"] == 3.25
    assert second["graphics_util"] == 88.0 and second["tensor_util"] is None  # that metric's own error -> None
    assert first["wall_s"] >= 0 and lib.samples == 3
    g.close()
    assert lib.freed == 2


def test_unsupported_gpu_and_no_driver_say_why():
    g, why = gpm.Gpm.open(FakeNvml(supported=False), index=0)
    assert g is None and "not supported" in why
    g, why = gpm.Gpm.open(types.SimpleNamespace(), index=0)
    assert g is None and "no GPM" in why


def test_callback_writes_one_line_per_step_and_survives_errors(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    lib = FakeNvml(values=[{1: 50.0, 2: 40.0, 5: 20.0, 10: 5.0}, {1: 60.0, 2: 41.0, 5: 21.0, 10: 6.0}])
    monkeypatch.setattr(gpm.Gpm, "open", classmethod(lambda cls, lib_=None, index=None: (cls(lib, "gpu0"), "ok")))
    record = {}
    out = tmp_path / gpm.GPM_FILE
    cb = gpm.make_callback(out, record)
    state = types.SimpleNamespace(global_step=0)
    cb.on_train_begin(None, state, None)
    for step in (1, 2, 3):  # the third interval has no scripted values: the fake raises, sampling stops, run goes on
        state.global_step = step
        cb.on_step_end(None, state, None)
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["step"] for x in lines] == [1, 2]
    assert [x["graphics_util"] for x in lines] == [50.0, 60.0] and lines[1]["dram_bw_util"] == 6.0
    assert record["gpm"]["status"].startswith("stopped: IndexError")


def test_no_nvml_means_no_callback(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    monkeypatch.setattr("experiments.record.nvml.nvml", lambda: None)
    record = {}
    assert gpm.make_callback(tmp_path / gpm.GPM_FILE, record) is None
    assert record["gpm"]["status"] == "no NVML (no NVIDIA driver)"


# ---------------------------------------------------------------------------------------- analysis side, real runs

from pathlib import Path  # noqa: E402

from analysis.measure.profile import steady_share, step_share  # noqa: E402
from analysis.parse import sidefiles  # noqa: E402
from analysis.parse.results import read_run  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "results/h200/seed/20261202-000920-176aa18e9a00"   # call 33, host 176aa18e9a00, 20 steps
BS16 = ROOT / "results/h200/bs16/20261202-001358-176aa18e9a00"


def test_steady_share_by_hand_on_the_seed_run():
    """The seed run's one steady interval is steps 15-20 (its log lines every 5 steps): GPM lines 16-20 by hand."""
    lines = {16: (7.567662, 11.39), 17: (7.107258, 11.709), 18: (8.278677, 10.756), 19: (9.239187, 9.868),
             20: (7.697541, 11.148)}
    busy = sum(w * u / 100 for w, u in lines.values()) / 5
    wall = sum(w for w, _ in lines.values()) / 5
    g = steady_share(read_run(SEED))
    assert g.gpm_steps == 5
    assert g.gpm_busy_ms == pytest.approx(busy * 1000, rel=1e-9)   # 870.9 ms
    assert g.gpm_host_ms == pytest.approx((wall - busy) * 1000, rel=1e-9)
    assert g.gpm_step_ms == pytest.approx(wall * 1000)
    assert g.gpm_busy_frac == pytest.approx(busy / wall) and g.gpm_bound == "host"
    # the profiled steps 11 and 12: GPM's busy time (wall x util) over the profiler's kernel union, median of two
    ratios = [13.436302 * 7.086 / 100 / 0.695649, 14.206314 * 6.322 / 100 / 0.643644]
    assert g.gpm_over_profiler == pytest.approx(sum(ratios) / 2, rel=1e-6)


def test_issue_12_bar_on_the_seed_and_bs16_runs_of_one_host():
    """GPU-busy + host time of the profiled steps within 10 % of the steady step, for both runs of call 33; GPM's
    split of the unprofiled steady steps sums to their mean wall, which is the log's steady step within 1 %."""
    for run, expect in ((SEED, 1.032), (BS16, 1.082)):
        rec = read_run(run)
        s = step_share(rec)
        assert (s.gpu_busy_ms + s.host_ms) == pytest.approx(s.profiled_ms)
        assert s.profiled_over_steady == pytest.approx(expect, abs=0.001)
        g = steady_share(rec)
        assert g.gpm_busy_ms + g.gpm_host_ms == pytest.approx(g.gpm_step_ms)
        from analysis.measure.steps import step_time
        assert g.gpm_step_ms / (step_time(rec).median * 1000) == pytest.approx(1.0, abs=0.01)


def test_read_gpm_skips_broken_lines_and_keeps_the_later_repeat(tmp_path):
    (tmp_path / sidefiles.GPM_FILE).write_text(
        '{"step": 1, "wall_s": 2.0, "graphics_util": 50.0, "sm_util": 40.0}\n'
        '{"step": 2, "wall_s": -1, "graphics_util": 50.0}\n'          # impossible wall
        '{"step": 3, "wall_s": 1.0, "graphics_util": 150.0}\n'        # impossible utilisation
        'not json\n'
        '{"step": 1, "wall_s": 3.0, "graphics_util": 10.0, "tensor_util": null}\n'  # a resumed run's repeat
        '{"step": 4, "wall_s": 1.0, "graphics_util": 20.0, "sm_util": 1')             # torn last line
    got = sidefiles.read_gpm(tmp_path, resumed=True)
    assert got == {1: {"wall_s": 3.0, "graphics_util": 10.0, "sm_util": None, "tensor_util": None,
                       "dram_bw_util": None}}
    assert sidefiles.read_gpm(tmp_path / "missing") is None
    with pytest.raises(InputError, match="step 1 recorded twice with different values, and run.json records no"):
        sidefiles.read_gpm(tmp_path)  # a repeat no resume explains


def test_gpm_casts_the_utilisation_vote_where_measured():
    """bs16's 20-step run of call 33: NVML's once-a-second readings have a median of 4 % (they flip between 0 and
    100 %), GPM measured 67 % busy over the steady steps; with GPM the utilisation vote says GPU-bound."""
    from analysis.measure import utilisation

    u = utilisation.run_utilisation(read_run(BS16))
    assert u["util_median_pct"] == pytest.approx(4.0)
    assert u["gpm_busy_pct"] == pytest.approx(100 * steady_share(read_run(BS16)).gpm_busy_frac)
    assert 66 < u["gpm_busy_pct"] < 67.5
    assert u["verdict"] == "GPU-bound" and "GPM counters" in u["evidence"]
    word, why = utilisation.verdict(4.0, 0.43, 0.049)  # the NVML median alone: 2 of 3 say host-bound
    assert word == "host-bound"
    word, why = utilisation.verdict(4.0, 0.43, 0.049, gpm_busy_pct=66.7)
    assert word == "GPU-bound" and "GPU busy 67 % of the steady steps" in why


def test_gpm_step_rows_and_their_figure(tmp_path):
    """Per-step rows of the seed run by hand (step 17 steady, 11 profiled), and the report's figure draws them."""
    from analysis.measure.profile import gpm_step_rows
    from analysis.present import plots

    rows = {r.step: r for r in gpm_step_rows(read_run(SEED))}
    assert sorted(rows) == list(range(1, 21))
    assert rows[17].busy_s == pytest.approx(7.107258 * 11.709 / 100)
    assert rows[17].host_s == pytest.approx(7.107258 * (1 - 11.709 / 100))
    assert rows[17].steady and not rows[17].profiled
    assert rows[11].profiled and not rows[11].steady and not rows[1].steady
    import pandas as pd

    frac = steady_share(read_run(SEED)).gpm_busy_frac
    df = pd.DataFrame(list(rows.values())).assign(name="seed", steady_busy_frac=frac)
    fig = plots.gpm_step_bars(df, "t", "dummy weights")
    ax = fig.axes[0]
    assert len(ax.patches) == 2 * 20  # a busy and a host bar per step
    assert any("GPU active 11%" in t.get_text() for t in ax.texts)
    four = pd.concat([df.assign(name=f"run {i}") for i in range(4)], ignore_index=True)
    fig = plots.gpm_step_bars(four, "t", "dummy weights")  # three panels a row: two rows, two hidden axes
    assert sum(a.get_visible() for a in fig.axes) == 4 and len(fig.axes) == 6


def test_the_profiler_window_gets_its_own_gpm_reading(tmp_path, monkeypatch):
    """The launcher's profiled window carries GPM's counters over exactly that window (profile.json `gpm`), not the
    step's gpm.jsonl window that also holds the profiler's stop and summary: the fake's marks are scripted."""
    pytest.importorskip("transformers")
    import torch

    from experiments.launch import profiler as launch_profiler

    marks = iter([{"wall_s": 0.5, "graphics_util": 40.0}, {"wall_s": 9.0, "graphics_util": 1.0},
                  {"wall_s": 0.25, "graphics_util": 80.0}])

    class FakeGpm:
        def mark(self):
            return next(marks)

    class FakeProf:
        def __init__(self, **kw):
            pass

        def start(self):
            pass

        def stop(self):
            pass

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    monkeypatch.setattr(torch.profiler, "profile", FakeProf)
    monkeypatch.setattr(gpm.Gpm, "open", classmethod(lambda cls, lib=None, index=None: (FakeGpm(), "ok")))
    monkeypatch.setattr(launch_profiler, "_device_intervals", lambda prof: ([(0, 100_000_000)], 3, [], {}))
    out = tmp_path / "profile.json"
    cb = launch_profiler.make_profiler_callback(2, 1, out, {}, which="cuda")
    state = types.SimpleNamespace(global_step=1)
    cb.on_step_end(None, state, None)   # step 1 ends: the window of step 2 opens (GPM opened: its first mark)
    state.global_step = 2
    cb.on_step_end(None, state, None)   # step 2 ends: its reading; step 3's window opens (a mark, discarded)
    state.global_step = 3
    cb.on_step_end(None, state, None)
    steps = json.loads(out.read_text())["steps"]
    assert [s["step"] for s in steps] == [2, 3]
    assert steps[0]["gpm"] == {"wall_s": 0.5, "graphics_util": 40.0}   # the window, not the 9-s stretch after it
    assert steps[1]["gpm"] == {"wall_s": 0.25, "graphics_util": 80.0}
    assert steps[0]["gpu_busy_s"] == pytest.approx(0.1)
