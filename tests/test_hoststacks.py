"""The host stack sampler (experiments/launch/hoststacks.py): it attributes a busy thread's time to the frames it runs
and counts a waiting thread idle."""
import json
import threading
import time
from pathlib import Path
from types import SimpleNamespace as NS

import pytest

from experiments.launch import options as launch_options
from experiments.launch import profiler as launch_profiler
from experiments.launch.hoststacks import (
    StackSampler,
    classify,
    cpu_between,
    package,
    short_path,
)


def _spin_in_named_function(stop: threading.Event) -> None:
    x = 0
    while not stop.is_set():
        for _ in range(200_000):  # the frame is this function's, not Event.is_set's, nearly always
            x += 1


def test_short_path_and_package():
    assert short_path("/opt/v/lib/python3.12/site-packages/torch/nn/modules/linear.py") == "torch/nn/modules/linear.py"
    assert short_path("/tmp/torchinductor_root/ab/cabc123.py") == "<inductor>/cabc123.py"
    roots = ["/usr/lib/python3.12/", "/tmp/site/", "/work/main/"]  # sys.path: the stdlib, a pip --target install
    assert short_path("/work/main/experiments/launch/launcher.py", roots) == "experiments/launch/launcher.py"
    assert short_path("/tmp/site/peft/tuners/lora/layer.py", roots) == "peft/tuners/lora/layer.py"
    assert short_path("/usr/lib/python3.12/concurrent/futures/thread.py", roots) == "concurrent/futures/thread.py"
    assert short_path("/elsewhere/a/b/c.py", roots) == "b/c.py"
    assert classify(NS(f_code=NS(co_filename="/usr/lib/python3.12/concurrent/futures/thread.py", co_name="_worker"),
                       f_back=None), roots)[2] is True  # a pool worker waiting in the C queue's get
    assert package("torch/nn/modules/linear.py") == "torch"
    assert package("<inductor>/cabc123.py") == "inductor code"
    assert package("peft/tuners/lora/layer.py") == "peft"


def test_a_spinning_thread_is_busy_in_its_function_and_a_waiting_one_idle():
    stop, never = threading.Event(), threading.Event()
    busy = threading.Thread(target=_spin_in_named_function, args=(stop,), name="spinner", daemon=True)
    waiter = threading.Thread(target=never.wait, name="waiter", daemon=True)
    busy.start()
    waiter.start()
    sampler = StackSampler(interval_s=0.002).start()
    time.sleep(0.4)
    out = sampler.stop()
    stop.set()
    never.set()
    assert out["rounds"] > 20 and out["rate_hz"] > 50
    by_name = {t["thread"]: t for t in out["threads"]}
    assert "waiter" not in by_name  # only idle samples: not listed
    spin = by_name["spinner"]
    assert spin["leaf"][0]["frame"].endswith("test_hoststacks.py:_spin_in_named_function")
    # the spinner holds the GIL between samples, so nearly every round finds it busy
    assert spin["busy_share"] > 0.8
    assert spin["busy_share"] + spin["idle_share"] == pytest.approx(1.0, abs=0.05)
    # the OS's view: the spinner used CPU (10 ms clock ticks; how much depends on the machine's load: 0.1-0.5 of
    # the window on a busy 2-core machine), the waiter none
    cpu = {r["python_thread"]: r for r in out["cpu"]}
    assert cpu["spinner"]["cpu_s"] > 0
    assert "waiter" not in cpu
    assert spin["cpu_share"] == cpu["spinner"]["cpu_share"]  # each Python thread's entry carries its CPU share


def test_owner_is_the_innermost_frame_outside_torch():
    inner = NS(f_code=NS(co_filename="/x/site-packages/torch/nn/functional.py", co_name="linear"), f_back=None)
    outer = NS(f_code=NS(co_filename="/x/site-packages/peft/tuners/lora/layer.py", co_name="forward"), f_back=None)
    inner.f_back = outer
    assert classify(inner) == ("torch/nn/functional.py:linear", "peft/tuners/lora/layer.py:forward", False)
    idle = NS(f_code=NS(co_filename="/usr/lib/python3.12/threading.py", co_name="wait"), f_back=None)
    assert classify(idle)[2] is True


def test_profiler_callback_stores_host_stacks_for_measured_steps_only(tmp_path):
    out = tmp_path / "profile.json"
    cb = launch_profiler.make_profiler_callback(2, 2, out, {}, "cuda", warmup=1, host_stacks=True)
    state = NS(global_step=0)
    cb.on_train_begin(None, state, None)
    for g in range(1, 6):
        t = time.perf_counter()
        while time.perf_counter() - t < 0.05:
            pass
        state.global_step = g
        cb.on_step_end(None, state, None)
    cb.on_train_end(None, state, None)
    data = json.loads(out.read_text())
    assert data["host_stacks"] is True
    steps = {s["step"]: s for s in data["steps"]}
    assert sorted(steps) == [2, 3, 4]
    assert "host_stacks" not in steps[2]  # the warm-up window
    for k in (3, 4):
        assert set(steps[k]["gc"]["collections"]) == {"0", "1", "2"}
        # (how many samples land in the spin depends on the machine's load; that some do, and where, does not)
        main = [t for t in steps[k]["host_stacks"]["threads"] if t["thread"] == "main"]
        assert main and main[0]["busy_share"] > 0
        assert any("test_profiler_callback_stores_host_stacks" in f["frame"] for f in main[0]["leaf"])


def test_launcher_option_reaches_the_command_line():
    argv = launch_options.option_argv({"profile_steps": 2, "profile_skip": 10, "profile_host_stacks": True})
    assert "--profile-host-stacks" in argv
    opts, _ = launch_options.parse([*argv, "--", "swift", "sft", "--model", "m"])
    assert opts.profile_host_stacks is True


def test_cpu_between_takes_differences_and_names_python_threads():
    before = {1: ("python", 10.0), 2: ("pt_autograd_0", 3.0)}
    after = {1: ("python", 10.4), 2: ("pt_autograd_0", 3.25), 3: ("new", 0.0)}
    rows = cpu_between(before, after, 0.5, {1: "main"})
    assert rows == [{"task": "python", "python_thread": "main", "cpu_s": 0.4, "cpu_share": 0.8},
                    {"task": "pt_autograd_0", "python_thread": None, "cpu_s": 0.25, "cpu_share": 0.5}]
    assert cpu_between(None, after, 0.5, {}) is None


def test_gc_timer_counts_collections_inside_its_window_only():
    import gc

    with launch_profiler.GcTimer() as t:
        gc.collect(0)
        gc.collect(2)
    gc.collect()  # outside: not counted
    assert t.summary()["collections"]["0"] >= 1 and t.summary()["collections"]["2"] >= 1
    assert t.summary()["seconds"] >= 0
    assert t not in gc.callbacks


# --- the analysis side: `swiftbench profile` over a committed run profiled with host stacks (call 28) ---------------

FAST_BEST = Path(__file__).resolve().parents[1] / "results/h200/fast-best/20261201-213743-dc93a79a73d2"


def test_host_breakdown_of_a_committed_run_by_hand():
    from analysis.measure.profile import (
        FrameShare,
        HostBreakdown,
        ThreadShare,
        gpu_ops_per_step,
        host_breakdown,
        step_share,
    )
    from analysis.present.parse_view import records

    rec = records(FAST_BEST)[0]
    h = host_breakdown(rec)
    assert isinstance(h, HostBreakdown)
    assert h.steps == [11, 12]  # step 10 is the warm-up window
    # profile.json: the main thread's owner accelerate backward 0.4906 (step 11) and 0.4491 (step 12)
    assert h.main_owner[0] == FrameShare("accelerate/accelerator.py:backward", round((0.4906 + 0.4491) / 2, 4))
    sdpa = next(r for r in h.main_owner if r.frame.endswith("sdpa_attention_forward"))
    assert sdpa.share == round((0.1509 + 0.1645) / 2, 4)
    assert h.threads[0] == ThreadShare("main", round((0.9976 + 1.0) / 2, 4))
    assert h.cpu is None  # recorded before the CPU view existed
    # GPU side: cuDNN's attention backward, 28 calls in each step (one per layer)
    ops = {r.op: r for r in gpu_ops_per_step(rec, 40)}
    bprop = next(r for k, r in ops.items() if "sdpa_sm90_flash_bprop" in k)
    assert bprop.calls == 28
    share = step_share(rec)
    assert share.profiled_ms == pytest.approx((0.572317 + 0.515309) / 2 * 1000)
    assert share.gpu_busy_ms == pytest.approx((0.192143 + 0.146733) / 2 * 1000)


def test_swiftbench_profile_prints_and_exports(capsys):
    from analysis import cli

    assert cli.main(["profile", str(FAST_BEST), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data) == 1 and data[0]["steps"] == [11, 12] and data[0]["host"]["main_owner"]
    assert cli.main(["profile", str(FAST_BEST)]) == 0
    out = capsys.readouterr().out
    assert "accelerate/accelerator.py:backward" in out and "47%" in out and "host-bound" in out


def test_host_groups_and_the_report_frame_by_hand():
    from analysis.judge.audit.frames import host_time_frame
    from analysis.measure.profile import host_groups
    from analysis.present.parse_view import records

    rec = records(FAST_BEST)[0]
    g = host_groups(rec)
    assert g is not None
    # attention = transformers' sdpa_attention_forward + repeat_kv: 0.1509 + 0.0165 (step 11), 0.1645 + 0.0183 (12)
    assert g.shares["attention"] == round((0.1509 + 0.0165 + 0.1645 + 0.0183) / 2, 4)
    assert g.shares["inductor's compiled code"] == 0.0  # an eager run
    # every busy sample of the main thread lands in one group: the shares add up to its busy share (0.9976, 1.0)
    assert sum(g.shares.values()) == pytest.approx((0.9976 + 1.0) / 2, abs=2e-3)
    assert g.wall_ms == pytest.approx((0.572317 + 0.515309) / 2 * 1000)
    df = host_time_frame(None, records=[rec])
    row = df[df["group"] == "attention"].iloc[0]
    assert row["ms"] == round(g.shares["attention"] * g.wall_ms, 1) and row["host"] == "dc93a79a73d2"


def test_swiftbench_profile_refuses_a_bad_top(capsys):
    from analysis import cli

    for bad in ("0", "-2", "x"):
        with pytest.raises(SystemExit) as exc:
            cli.main(["profile", str(FAST_BEST), "--top", bad])
        assert exc.value.code == 2
    assert "--top" in capsys.readouterr().err
