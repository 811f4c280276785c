"""The recommended recipe for the job: the one owner of the choice, of the ratios it rests on and of the order of the
recipes. Tables, report and README format the Recommendation it returns; the rule is in docs/recommend.md.

- Candidates: the matrix recipes (experiments/recipes/recipes.yaml) with a full-epoch run on one GPU whose final eval
  loss equals the seed recipe's within the seed band.
- One host at a time: a host-bound step moves with the host, so two recipes are ordered only by runs of one host.
  On each host a recipe's *first* full epoch decides (the run that found the host's caches cold for it: compiled
  code, Triton kernels); later full epochs of it there are its warm figure, shown beside.
- A is sooner than B where, on every host holding full epochs of both, A's first one finished sooner. The seed recipe
  may stand there with a cut run: its steady step x the epoch's steps is a lower bound of its epoch (no evaluation,
  no save), and a recipe finishing below that bound is sooner. No shared host, or hosts that disagree: the order is
  undetermined, and the pair is named with the runs that would settle it.
- The recommended recipe is sooner than every other candidate; where none is, the one with the most wins, and the
  answer says which orders are undetermined.
- epoch_x_seed: the host's seed epoch (a full one's train_runtime, else a cut run's lower bound, said so) / the
  recipe's first full epoch there; over the hosts where it was measured, a range.
- Timed runs only where there are any: once a class has full epochs made through the launcher of harness 2 (no
  profiler, no per-step sync: analysis.measure.repeats), only those count for it, so that the answer describes the
  command a user pastes, not the harness. Plain twins (the printed command alone) are the harness's check, never a
  recipe's row.
- Interleaved rounds (run-all --repeats) decide an order by their pairs (analysis.judge.answer.pairs) wherever two
  recipes share rounds; a recipe's figure on a host is then the median of its runs there, with their range and count.
"""
from __future__ import annotations

from dataclasses import dataclass

from analysis.estimate import epoch
from analysis.judge.answer import pairs as paired
from analysis.judge.answer.published import SEED_EXPERIMENT
from analysis.judge.band import loss_against, runs_by_experiment, seed_spread
from analysis.measure import jobtime, repeats, steps, throughput
from analysis.parse.record import RunRecord
from analysis.parse.results import is_matrix
from experiments.recipes import recipes

MIN_SEED_STEADY = 5  # steady steps a cut seed run needs before its step stands for the seed's epoch


@dataclass(frozen=True)
class SeedEpoch:
    """The seed recipe's epoch on one host: a full epoch's train_runtime, or a cut run's steady step x the epoch's
    steps (a lower bound: no evaluation, no save)."""

    hw: str
    host: str
    seconds: float
    full: bool
    run: str
    steps_run: int

    @property
    def basis(self) -> str:
        return "full epoch" if self.full else f"cut run ({self.steps_run} steps): steady step x epoch steps"


@dataclass(frozen=True)
class HostEpochs:
    """One matrix recipe's full epochs on one host: the first (cold for this recipe on the host) and the later ones
    (warm), its eval loss against the seed recipe's, and the host's seed epoch."""

    experiment: str
    hw: str
    host: str
    run: str
    path: str
    steps: int
    epoch_s: float
    load_s: float | None
    tokens_per_s: float | None
    peak_gib: float | None
    cap_gib: float | None
    warm_s: tuple[float, ...]
    eval_step: int | None
    eval_loss: float | None
    seed_eval_loss: float | None
    seed_range: float | None
    in_band: bool | None
    seed: SeedEpoch | None
    labels: str
    swift_version: str | None
    epochs: tuple[float, ...] = ()        # every timed full epoch of it on this host, in run order (epoch_s: median)
    steady: repeats.Spread | None = None  # its steady step (s) over those runs: median, range, count
    harness: str = repeats.LAUNCHER_V1    # how its runs were measured (analysis.measure.repeats)
    round_x_seed: tuple[float, ...] = ()  # the seed's epoch / its epoch, per round holding both (paired)

    @property
    def epoch_spread(self) -> repeats.Spread | None:
        return repeats.spread(self.epochs or (self.epoch_s,))

    @property
    def first_epoch_s(self) -> float:
        """The host's first full epoch of the recipe (cold caches): the one that ranks (docs/recommend.md)."""
        return self.epochs[0] if self.epochs else self.epoch_s

    @property
    def x_seed_spread(self) -> repeats.Spread | None:
        return repeats.spread(self.round_x_seed)

    @property
    def epoch_x_seed(self) -> float | None:
        """The seed's epoch / this recipe's epoch on this host: the median of the paired rounds' ratios where there
        are any, else the host's seed epoch / this recipe's (median) epoch."""
        if self.round_x_seed:
            return repeats.spread(self.round_x_seed).median  # type: ignore[union-attr]
        return jobtime.epoch_ratio(self.seed.seconds, self.epoch_s) if self.seed else None

    @property
    def warm_epoch_s(self) -> float | None:
        return min(self.warm_s) if self.warm_s else None


@dataclass(frozen=True)
class Order:
    """FASTER finishes the job sooner than SLOWER on HOSTS (every host holding both)."""

    faster: str
    slower: str
    hosts: tuple[str, ...]
    basis: str


@dataclass(frozen=True)
class Undetermined:
    a: str
    b: str
    why: str
    settle: str


@dataclass(frozen=True)
class Recommendation:
    """The recommended recipe on the class its runs were made on, and what it rests on (None: no candidate); each GPU
    class's recipe is analysis.judge.answer.classes' (its Answer holds both)."""

    hw: str | None
    experiment: str | None
    command: str | None
    rows: tuple[HostEpochs, ...]
    orders: tuple[Order, ...]
    undetermined: tuple[Undetermined, ...]
    runner_up: str | None
    note: str | None = None
    swift_version: str | None = None  # the ms-swift the deciding run used: the command's flags are spelled for it
    seed_elsewhere: SeedEpoch | None = None  # the class's seed epoch on another host, where the deciding host has none

    @property
    def x_seed_across_hosts(self) -> float | None:
        """The seed epoch of another host / the deciding row's epoch: a ratio across hosts (a host drifts)."""
        d = self.deciding
        return jobtime.epoch_ratio(self.seed_elsewhere.seconds, d.epoch_s) if self.seed_elsewhere and d else None

    def of(self, experiment: str | None) -> list[HostEpochs]:
        return [r for r in self.rows if r.experiment == experiment]

    @property
    def chosen(self) -> list[HostEpochs]:
        return self.of(self.experiment)

    @property
    def deciding(self) -> HostEpochs | None:
        """The chosen recipe's row on the host where it beat the most candidates (ties: the newest run)."""
        rows = self.chosen
        if not rows:
            return None
        wins = {r.host: sum(o.faster == self.experiment and r.host in o.hosts for o in self.orders) for r in rows}
        return max(rows, key=lambda r: (wins[r.host], r.seed is not None, r.run))

    def x_seed_range(self, experiment: str | None = None) -> tuple[float, float] | None:
        xs = [r.epoch_x_seed for r in self.of(experiment or self.experiment) if r.epoch_x_seed]
        return (min(xs), max(xs)) if xs else None

    def epoch_range(self, experiment: str | None = None) -> tuple[float, float] | None:
        es = [r.epoch_s for r in self.of(experiment or self.experiment)]
        return (min(es), max(es)) if es else None


# ------------------------------------------------------------------------------------------------ the runs


def _single_gpu(rec: RunRecord) -> bool:
    return (rec.world_size or 1) == 1 and is_matrix(rec) and rec.hw is not None and bool(rec.host_id)


def full_epoch_runs(records: list[RunRecord], timed_only: bool = True) -> list[RunRecord]:
    """The matrix runs on one GPU of a known host that trained their whole epoch and finished (plain twins apart)."""
    return [r for r in counted(records, timed_only) if jobtime.job_time(r).full_epoch]


def counted(records: list[RunRecord], timed_only: bool = True) -> list[RunRecord]:
    """The single-GPU matrix runs a recipe's figures rest on: per class, the timed launcher runs (harness 2) where
    the class has any full epoch of them, else every run (made before the harness was fixed, said so); never a plain
    twin or an imported log."""
    runs = [r for r in records if _single_gpu(r) and repeats.harness(r) not in (repeats.PLAIN, repeats.IMPORTED)]
    if not timed_only:
        return runs
    timed_hw = {r.hw for r in runs if repeats.harness(r) == repeats.LAUNCHER and jobtime.job_time(r).full_epoch}
    return [r for r in runs if r.hw not in timed_hw or repeats.harness(r) == repeats.LAUNCHER]


def seed_epochs(records: list[RunRecord], timed_only: bool = True) -> dict[tuple[str, str], SeedEpoch]:
    """(hw, host) -> the seed recipe's epoch there: its newest full epoch, else its cut run with the most steady
    steps (at least MIN_SEED_STEADY) as a lower bound."""
    out: dict[tuple[str, str], SeedEpoch] = {}
    seeds = [r for r in counted(records, timed_only) if r.experiment == SEED_EXPERIMENT and r.ok]
    for rec in sorted(seeds, key=lambda r: r.run):
        key = (str(rec.hw), str(rec.host_id))
        jt = jobtime.job_time(rec)
        if jt.full_epoch:
            out[key] = SeedEpoch(key[0], key[1], jt.epoch_s, True, rec.run, int(jt.steps or 0))
            continue
        if key in out and out[key].full:
            continue
        n = len(steps.steady_steps(rec))
        bound = steps.epoch_time(rec).seconds
        if n >= MIN_SEED_STEADY and bound and (key not in out or n >= out[key].steps_run):
            out[key] = SeedEpoch(key[0], key[1], float(bound), False, rec.run, int(rec.global_steps or 0))
    return out


def host_epochs(records: list[RunRecord], timed_only: bool = True) -> list[HostEpochs]:
    """One row per (hw, matrix recipe, host) with full epochs, the first one deciding, fastest first per host.
    TIMED_ONLY: the runs counted() keeps (else every run, made before the harness fix or not)."""
    full = full_epoch_runs(records, timed_only)
    seeds = seed_epochs(records, timed_only)
    kept = counted(records)  # once: round_pairs below runs per group
    groups: dict[tuple[str, str, str], list[RunRecord]] = {}
    for r in full:
        groups.setdefault((str(r.hw), str(r.experiment), str(r.host_id)), []).append(r)
    # the eval-loss reference: any full seed epoch (a loss does not depend on how the run was timed)
    loss_refs = [r for r in records if _single_gpu(r) and r.experiment == SEED_EXPERIMENT
                 and jobtime.job_time(r).full_epoch]
    refs = {hw: max((r for r in loss_refs if r.hw == hw), key=lambda r: r.run,
                    default=None) for hw in {k[0] for k in groups}}
    spread = seed_spread()
    band_runs = {hw: runs_by_experiment(None, hw, records) for hw in refs}
    rows = []
    for (hw, exp, host), runs in groups.items():
        runs = sorted(runs, key=lambda r: r.run)
        first = runs[0]
        jt = jobtime.job_time(first)
        seed = seeds.get((hw, host))
        same_host_ref = [r for r in loss_refs if r.hw == hw and r.host_id == host]
        ref = max(same_host_ref, key=lambda r: r.run) if same_host_ref else refs.get(hw)
        lc = loss_against(first, ref, spread, band_runs[hw]) if ref is not None else None
        epochs = tuple(jobtime.job_time(r).epoch_s for r in runs)
        rows.append(HostEpochs(
            experiment=exp, hw=hw, host=host, run=first.run, path=str(first.path), steps=int(jt.steps or 0),
            epoch_s=repeats.spread(epochs).median,  # type: ignore[union-attr]  # epochs is never empty
            load_s=(lambda sp: sp.median if sp else None)(repeats.spread(jobtime.job_time(r).load_s for r in runs)),
            tokens_per_s=throughput.throughput(first).tokens_per_s, peak_gib=first.peak_mem_gib,
            cap_gib=epoch.cap_gib(first), warm_s=tuple(jobtime.job_time(r).epoch_s for r in runs[1:]),
            eval_step=lc.eval_step if lc else None, eval_loss=lc.eval_loss if lc else None,
            seed_eval_loss=lc.ref_eval_loss if lc else None, seed_range=lc.seed_range if lc else None,
            in_band=lc.counts if lc else None, seed=seed,
            labels="; ".join(first.labels), swift_version=first.swift_version, epochs=epochs,
            steady=repeats.spread(steps.step_time(r).median for r in runs), harness=repeats.harness(first),
            round_x_seed=tuple(p.ratio for p in round_pairs(records, exp, SEED_EXPERIMENT, hw, kept)
                               if p.host == host)))
    return sorted(rows, key=lambda r: (r.hw, r.host, r.epoch_s))


def _round_epochs(kept: list[RunRecord], exp: str, hw: str) -> dict[tuple[str, int, str], tuple[float, bool]]:
    """(set, round, host) -> EXP's epoch in that round among KEPT (counted()'s runs): a full epoch's train_runtime,
    or for the seed recipe a cut run's lower bound (steady step x the epoch's steps; False: a bound)."""
    out: dict[tuple[str, int, str], tuple[float, bool]] = {}
    for r in kept:
        if r.hw != hw or r.experiment != exp or not r.ok:
            continue
        pl = repeats.place(r)
        if pl is None:
            continue
        jt = jobtime.job_time(r)
        if jt.full_epoch:
            out[(pl.set, pl.round, str(r.host_id))] = (jt.epoch_s, True)
        elif exp == SEED_EXPERIMENT and len(steps.steady_steps(r)) >= MIN_SEED_STEADY and steps.epoch_time(r).seconds:
            out[(pl.set, pl.round, str(r.host_id))] = (float(steps.epoch_time(r).seconds or 0), False)
    return out


def round_pairs(records: list[RunRecord], a: str, b: str, hw: str,
                kept: list[RunRecord] | None = None) -> list[paired.Pair]:
    """Every round of an interleaved set on HW holding a run of A and one of B, as analysis.judge.answer.pairs' Pair.
    KEPT: counted(RECORDS) where the caller has it already."""
    kept = counted(records) if kept is None else kept
    ea, eb = _round_epochs(kept, a, hw), _round_epochs(kept, b, hw)
    return [paired.Pair(k[0], k[1], k[2], ea[k][0], eb[k][0], ea[k][1], eb[k][1])
            for k in sorted(ea.keys() & eb.keys())]


# ------------------------------------------------------------------------------------------------ the order


def _epoch_on(rows: list[HostEpochs], seeds: dict[tuple[str, str], SeedEpoch], exp: str, hw: str,
              host: str) -> tuple[float, bool] | None:
    """EXP's epoch on HOST: (seconds, a full epoch) from its first full epoch (unpaired runs: the first decides),
    else for the seed recipe its cut-run lower bound; None where the host has neither."""
    row = next((r for r in rows if r.experiment == exp and r.hw == hw and r.host == host), None)
    if row is not None:
        return row.first_epoch_s, True
    seed = seeds.get((hw, host)) if exp == SEED_EXPERIMENT else None
    return (seed.seconds, seed.full) if seed is not None else None


def order(rows: list[HostEpochs], seeds: dict[tuple[str, str], SeedEpoch], a: str, b: str,
          hw: str, rounds: list[paired.Pair] | None = None) -> Order | Undetermined:
    """Which of recipes A and B finishes the job sooner: from their paired rounds where they share any
    (analysis.judge.answer.pairs), else from the hosts holding both (see the module's rule)."""
    if rounds:
        v = paired.decide(a, b, rounds)
        if v.faster is None:
            return Undetermined(a, b, v.basis, v.settle)
        fast, slow = (a, b) if v.faster == "a" else (b, a)
        return Order(fast, slow, v.hosts, v.basis)
    hosts = sorted({r.host for r in rows if r.hw == hw} | {h for (w, h) in seeds if w == hw})
    sooner: dict[str, list[str]] = {a: [], b: []}
    bound = False
    for host in hosts:
        ea, eb = _epoch_on(rows, seeds, a, hw, host), _epoch_on(rows, seeds, b, hw, host)
        if ea is None or eb is None:
            continue
        (ta, fa), (tb, fb) = ea, eb
        if not fa and not fb:
            continue
        if (not fa and ta <= tb) or (not fb and tb <= ta):
            continue  # sooner than a lower bound: that order is not shown
        sooner[a if ta < tb else b].append(host)
        bound = bound or not (fa and fb)
    if sooner[a] and sooner[b]:
        return Undetermined(a, b, f"hosts disagree: {a} sooner on {', '.join(h[:8] for h in sooner[a])}, {b} on "
                                  f"{', '.join(h[:8] for h in sooner[b])}",
                            f"more full epochs of {a} and {b} on one host")
    for x, y in ((a, b), (b, a)):
        if sooner[x]:
            basis = "full epochs, one run per host" + (" and a cut seed run's lower bound" if bound else "")
            return Order(x, y, tuple(sooner[x]), basis)
    return Undetermined(a, b, "no host holds full epochs of both",
                        f"full epochs of {a} and {b} on one host (run-all --experiments {a},{b})")


def default_class(rows: list[HostEpochs]) -> str | None:
    """The class the answer is about: among the classes where a recipe's full epoch counts (eval loss in the seed
    band), the one with the most host rows; where none counts, the one with the most rows. A class of full epochs
    that cannot count yet (no seed eval loss on it) must not take the answer away from one where recipes count."""
    score: dict[str, tuple[bool, int]] = {}
    for r in rows:
        counts, n = score.get(r.hw, (False, 0))
        score[r.hw] = (counts or bool(r.in_band and r.experiment != SEED_EXPERIMENT), n + 1)
    return max(score, key=lambda h: (*score[h], h)) if score else None


def recommend(records: list[RunRecord], hw: str | None = None) -> Recommendation:
    """The recommended recipe on HW (default: default_class) and the orders it rests on."""
    rows_all = host_epochs(records)
    if hw is None:
        hw = default_class(rows_all)
    rows = [r for r in rows_all if r.hw == hw]
    seeds = {k: v for k, v in seed_epochs(records).items() if k[0] == hw}
    counting = sorted({r.experiment for r in rows if r.in_band and r.experiment != SEED_EXPERIMENT})
    others = sorted({r.experiment for r in rows if r.experiment not in counting})
    if not counting:
        why = ("no matrix recipe has a full-epoch run" if not rows else
               "no recipe's full epoch has its eval loss within the seed band of the seed recipe's")
        return Recommendation(hw, None, None, tuple(rows), (), (), None, note=why)
    names = counting + ([SEED_EXPERIMENT] if SEED_EXPERIMENT not in counting else [])
    orders: list[Order] = []
    open_pairs: list[Undetermined] = []
    rows_v1 = [r for r in host_epochs(records, timed_only=False) if r.hw == hw]
    seeds_v1 = {k: v for k, v in seed_epochs(records, timed_only=False).items() if k[0] == hw}
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            pairs = round_pairs(records, a, b, hw or "")
            got = order(rows, seeds, a, b, hw or "", pairs)
            if isinstance(got, Undetermined) and not pairs and rows_v1 != rows:
                # no timed host holds both: runs of the harness before its fix may (it added to every fast step,
                # so an order they show for a fast recipe over a slower one holds without it, said so)
                old = order(rows_v1, seeds_v1, a, b, hw or "")
                if isinstance(old, Order):
                    got = Order(old.faster, old.slower, old.hosts, old.basis + " (runs of the harness before its "
                                                                              "fix, no timed host holds both)")
            if isinstance(got, Order):
                orders.append(got)
            else:
                open_pairs.append(got)
    wins = {n: sum(o.faster == n for o in orders) for n in counting}
    best = max(counting, key=lambda n: (wins[n], -min(r.epoch_s for r in rows if r.experiment == n)))
    rest = [n for n in counting if n != best]
    runner = max(rest, key=lambda n: (wins[n], -min(r.epoch_s for r in rows if r.experiment == n)), default=None)
    unsettled = [u for u in open_pairs if best in (u.a, u.b)]
    note = None
    if unsettled:
        note = "order undetermined against " + ", ".join((u.b if u.a == best else u.a) for u in unsettled)
    others = [o for o in others if o != SEED_EXPERIMENT]
    if others:
        note = (note + "; " if note else "") + "not counted (eval loss outside the seed band or not judged): " \
            + ", ".join(others)
    rec = Recommendation(hw, best, None, tuple(rows), tuple(orders), tuple(open_pairs), runner, note=note)
    version = (rec.deciding.swift_version if rec.deciding else None) or recipes.MEASURED_SWIFT
    elsewhere = None
    if rec.deciding is not None and rec.deciding.seed is None:  # a ratio across hosts, labelled so
        pool = [v for v in seeds.values()] or [v for v in seeds_v1.values()]
        elsewhere = max(pool, key=lambda v: (v.full, v.run), default=None)
    return Recommendation(hw, best, recipes.copyable(best, version), tuple(rows), tuple(orders), tuple(open_pairs),
                          runner, note=note, swift_version=version, seed_elsewhere=elsewhere)
