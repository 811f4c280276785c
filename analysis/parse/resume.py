"""Resume checks beside the runs: results/<hw>/<experiment>/<run>/resume_check.json (experiments/run/resume_check.py).

A run that was killed during training and resumed from its checkpoint by the next run-all holds, besides its own
files, what the check recorded: the signal, what was left running or in results/, the runner's resume record (its
`first_step_s`: seconds from the restarted process's start to its first resumed step's log line), ms-swift's own
clock for that step (`first_step_since_train_begin_s`: from the trainer's start, after the model and the checkpoint
are loaded) and the losses of the steps both attempts logged. An unreadable file is skipped with a warning.
"""
from __future__ import annotations

import warnings
from pathlib import Path

from analysis.parse.logs import to_float
from analysis.parse.runfile_rows import ResumeCheck
from experiments.base import runfiles, userfiles
from experiments.base.errors import InputError
from experiments.base.runfolder import Resume
from experiments.base.runfolder import ResumeCheck as Check

FILE = runfiles.RESUME_CHECK


def resume_checks(results_dir: str | Path, hw: str | None = None) -> list[ResumeCheck]:
    """Every resume check under RESULTS_DIR (of HW only, when given), oldest first: {path, hw, experiment, run,
    host_id, signal, killed_after_step, from_step, restart_to_first_step_s, trainer_to_first_step_s, left_behind,
    weights_in_results, finished, repeated: [(step, loss before the kill, loss after the resume)]}."""
    out: list[ResumeCheck] = []
    for f in sorted(Path(results_dir).glob(f"{hw or '*'}/*/*/{FILE}"), key=lambda p: p.parent.name):
        folder = f.parent
        try:
            data = userfiles.read_json(f, runfiles.max_bytes(f))
            resume = data.get(Check.RESUME) or {}
            repeated = [(int(r[Check.STEP]), to_float(r[Check.LOSS_BEFORE_KILL]), to_float(r[Check.LOSS_AFTER_RESUME]))
                        for r in data.get(Check.REPEATED_STEPS) or []]
        except (InputError, ValueError, TypeError, KeyError, AttributeError) as exc:
            why = exc.message if isinstance(exc, InputError) else type(exc).__name__
            warnings.warn(f"{f}: skipped, not a resume check ({why})", stacklevel=2)
            continue
        out.append(ResumeCheck(
            path=folder, hw=folder.parent.parent.name, experiment=folder.parent.name, run=folder.name,
            host_id=runfiles.host_id(runfiles.read_env_raw(folder)),
            signal=data.get(Check.SIGNAL), killed_after_step=data.get(Check.KILLED_AFTER_STEP),
            from_step=resume.get(Resume.FROM_STEP),
            restart_to_first_step_s=to_float(resume.get("first_step_s")),
            trainer_to_first_step_s=to_float(data.get(Check.FIRST_STEP_SINCE_TRAIN_BEGIN_S)),
            left_behind=len(data.get(Check.LEFT_BEHIND) or []),
            weights_in_results=len(data.get(Check.WEIGHTS_IN_RESULTS) or []),
            finished=data.get(Check.STATUS) == "ok" and data.get(Check.SECOND_EXIT) == 0,
            repeated=repeated))
    return out
