"""Quick runs: just enough of a run's steps, inside a time budget, for analysis.estimate.quick to predict the full run.

`swiftbench run-all --quick` (`make run-all QUICK=1`) or `--budget SECONDS` makes every run of the call a quick run:
the experiment's own recipe and launcher options (profiler included, so its first steps are the full run's first
steps), with

- `logging_steps 1`: one log line per optimizer step, so the step-time model is fitted on steps, not 5-step sums;
- no `stop_after`: a quick run is a prefix of the full schedule, ended by the budget;
- the launcher's quick stop (`--quick-budget-s`, `--quick-max-steps`): after the step at which the launcher process
  (its start, imports and model load included) would run out of BUDGET_S with one more step and RESERVE_S left, or
  at step MAX_STEPS (about 25 steady steps to fit on; more cost GPU time for little), it evaluates and saves
  there and trains one step more, evaluating and saving again, then stops. The two evaluations and saves are what the
  estimate charges the full run's evaluations and saves with: the first evaluation of a run costs more than the later
  ones (allocations, kernel compilation for the eval shapes), so one of each is measured. The learning-rate schedule
  stays the full run's. The full schedule's token counts come with every launcher run (schedule.jsonl).
"""
from __future__ import annotations

import time

from experiments.base.runfolder import Args, Launch, Launcher, Quick

BUDGET_S = 180.0   # the 3 GPU-minutes: the launcher process, model load included
MAX_STEPS = 40     # warm-up (10), the profiled steps (11-12) and ~25 steps to fit on
# what stopping costs after the deciding step: two evaluations and saves, the exit (committed H200 runs: an evaluation
# 0.6-2.3 s, the end of training 0.3-0.8 s)
RESERVE_S = 12.0


def budget_of(quick: bool, budget: str | float | None) -> float | None:
    """Seconds per quick run from run-all's --quick / --budget (180, 180s or 3m); None for ordinary runs."""
    from experiments.base.errors import InputError

    if budget is None or budget == "":
        return BUDGET_S if quick else None
    text = str(budget).strip().lower()
    scale = 60.0 if text.endswith("m") else 1.0
    try:
        value = float(text.rstrip("sm")) * scale
    except ValueError:
        raise InputError(None, f"--budget wants seconds like 180 or 180s (or 3m), got {budget!r}") from None
    if value <= 0:
        raise InputError(None, f"--budget must be > 0, got {budget!r}")
    return value


def launcher_options(launcher: dict | None, budget_s: float, max_steps: int = MAX_STEPS) -> dict:
    """The launcher options of a quick run of an experiment whose own options are LAUNCHER."""
    out = {k: v for k, v in (launcher or {}).items() if k != Launcher.STOP_AFTER}
    out[Launcher.QUICK] = {Quick.BUDGET_S: float(budget_s), Quick.MAX_STEPS: int(max_steps)}
    return out


def apply(spec) -> None:
    """Make runner.RunSpec SPEC a quick run when it has a budget (its launcher options and its one-line logging)."""
    if not getattr(spec, "budget_s", None):
        return
    spec.launcher = launcher_options(spec.launcher, spec.budget_s)
    spec.overrides = {Args.LOGGING_STEPS: 1, **(spec.overrides or {})}


def process_start() -> float:
    """When this process started (time.time() scale): the budget counts imports and model load too."""
    try:
        import psutil

        return float(psutil.Process().create_time())
    except Exception:  # noqa: BLE001 - no psutil: from the launcher's start, a few seconds late
        return time.time()


def agreed(flag: bool) -> bool:
    """FLAG as rank 0 sees it, on every rank of a torchrun job: ranks that stopped at different steps would hang."""
    try:
        import torch
        import torch.distributed as dist
    except ImportError:
        return flag
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return flag
    device = torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")
    value = torch.tensor([int(flag)], device=device)
    dist.broadcast(value, src=0)
    return bool(value.item())


def make_callback(budget_s: float, max_steps: int, record: dict, reserve_s: float = RESERVE_S,
                  started: float | None = None):
    """A transformers TrainerCallback for the quick stop (module docstring); what it did goes to RECORD["quick"]."""
    from transformers import TrainerCallback
    from transformers.trainer_utils import IntervalStrategy

    started = process_start() if started is None else started
    info = record.setdefault(Launch.QUICK, {})
    info.update({Quick.BUDGET_S: budget_s, Quick.MAX_STEPS: max_steps, Quick.RESERVE_S: reserve_s,
                 Quick.STOPPED: False})

    class QuickStop(TrainerCallback):
        def __init__(self):
            self.last_end = None
            self.stop_at = None

        def _events_here(self, args, control):
            control.should_log = True
            if args.eval_strategy == IntervalStrategy.STEPS:
                control.should_evaluate = True
            control.should_save = True

        def on_step_end(self, args, state, control, **kwargs):
            now = time.time()
            step = state.global_step
            step_s = now - self.last_end if self.last_end is not None else 0.0
            self.last_end = now
            if self.stop_at is not None:
                if step >= self.stop_at and not control.should_training_stop:
                    control.should_training_stop = True
                    self._events_here(args, control)
                    info.update({Quick.STOPPED: True, Quick.AT_STEP: step,
                                 Quick.MAX_STEPS_OF_SCHEDULE: state.max_steps,
                                 Quick.ELAPSED_S: round(now - started, 1)})
                return control
            if step + 1 >= state.max_steps:  # the run ends by itself now
                return control
            elapsed = now - started
            if agreed(step + 1 >= max_steps or elapsed + step_s + reserve_s >= budget_s):
                self._events_here(args, control)
                self.stop_at = step + 1
                info.update({Quick.DECIDED_AT: step, Quick.EVENT_STEPS: [step, step + 1],
                             Quick.ELAPSED_AT_DECISION_S: round(elapsed, 1),
                             Quick.WHY: "max steps" if step + 1 >= max_steps else "budget"})
            return control

    return QuickStop()
