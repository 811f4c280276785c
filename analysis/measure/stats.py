"""Every range the tables quote: the one place that draws a bootstrap, takes its percentiles or a normal/t quantile.

Fixed seeds and a fixed draw order: the same inputs give the same range every time a table is made. numpy and scipy
are imported inside the functions, so importing this module (every CLI start) stays cheap.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator

N_BOOT = 2000  # bootstrap resamples of every range
BOOTSTRAP_MAX = 20_000  # more pairs than this: ratio_of_sums gives the normal interval instead of the bootstrap
LOW_PCT, HIGH_PCT = 2.5, 97.5  # the percentiles of a 95 % range


def z95() -> float:
    """The standard normal's 97.5 % quantile (1.959963984540054), from scipy rather than a literal."""
    from scipy.stats import norm

    return float(norm.ppf(0.975))


def t_halfwidth(sd: float, n: int, level: float) -> float:
    """Half the width of the Student-t LEVEL interval of a mean of N values with standard deviation SD."""
    return t_quantile(0.5 + level / 2, n - 1) * sd / math.sqrt(n)


@functools.lru_cache(maxsize=4096)
def t_quantile(q: float, dof: int) -> float:
    """Student t's Q quantile at DOF degrees of freedom (scipy's t.ppf takes ~1 ms a call: once per pair here)."""
    from scipy import stats

    return float(stats.t.ppf(q, dof))


def interval95(samples) -> tuple[float, float]:
    """The 2.5 and 97.5 percentiles of SAMPLES (a bootstrap's draws): its 95 % range."""
    import numpy as np

    low, high = (float(x) for x in np.percentile(samples, [LOW_PCT, HIGH_PCT]))
    return low, high


def resample_rows(n_rows: int, n_boot: int = N_BOOT, seed: int = 0) -> Iterator:
    """N_BOOT index arrays of N_ROWS rows drawn with replacement, one draw per resample (a refit per resample)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    for _ in range(n_boot):
        yield rng.integers(0, n_rows, size=n_rows)


def bootstrap_refits(refit: Callable, n_rows: int, width: int, n_boot: int = N_BOOT, seed: int = 0):
    """REFIT(idx) on N_BOOT resamples of N_ROWS rows (rows of the result: its WIDTH-long vectors)."""
    import numpy as np

    out = np.empty((n_boot, width))
    for b, idx in enumerate(resample_rows(n_rows, n_boot, seed)):
        out[b] = refit(idx)
    return out


def resampled_sums(values, k: int, n_boot: int = N_BOOT, seed: int = 1):
    """N_BOOT sums of K VALUES drawn with replacement (zeros when K or VALUES is empty)."""
    import numpy as np

    if k == 0 or len(values) == 0:
        return np.zeros(n_boot)
    rng = np.random.default_rng(seed)
    return values[rng.integers(0, len(values), size=(n_boot, k))].sum(axis=1)


def ratio_of_sums(num, den, n_boot: int = N_BOOT) -> tuple[float, float | None, float | None]:
    """sum(NUM) / sum(DEN) with a 95 % bootstrap range that resamples the (num, den) pairs together (None with fewer
    than 2 pairs). Fixed seed: the same table every time it is made."""
    import numpy as np

    a, b = np.asarray(num, float), np.asarray(den, float)
    point = float(a.sum() / b.sum())
    if len(a) < 2:
        return point, None, None
    if len(a) > BOOTSTRAP_MAX:
        # the bootstrap costs n_boot x n: past BOOTSTRAP_MAX pairs, the ratio's normal (delta-method) interval,
        # which the bootstrap's percentiles equal at that size (a 200 MB log's ~700,000 steps: 20 s -> 10 ms)
        n = len(a)
        resid = a - point * b
        se = float(np.sqrt(resid.var(ddof=1) / n) / b.mean())
        z = z95()
        return point, point - z * se, point + z * se
    rng = np.random.default_rng(0)
    chunk = max(1, min(n_boot, 2_000_000 // len(a)))  # resamples drawn a chunk at a time: memory stays bounded
    ratios = []
    for start in range(0, n_boot, chunk):
        idx = rng.integers(0, len(a), size=(min(chunk, n_boot - start), len(a)))
        ratios.append(a[idx].sum(axis=1) / b[idx].sum(axis=1))
    low, high = interval95(np.concatenate(ratios))
    return point, low, high


def ratio_of_two(num_a, den_a, num_b, den_b, n_boot: int = N_BOOT) -> tuple[float, float | None, float | None]:
    """(sum(NUM_A) / sum(DEN_A)) / (sum(NUM_B) / sum(DEN_B)) for two runs that trained different batches, with a 95 %
    bootstrap range that resamples each run's intervals on its own (None with fewer than 2 intervals on a side). The
    quotient of the two runs' separate ranges would be far wider than the ratio's own spread."""
    import numpy as np

    a, da, b, db = (np.asarray(x, float) for x in (num_a, den_a, num_b, den_b))
    point = float((a.sum() / da.sum()) / (b.sum() / db.sum()))
    if len(a) < 2 or len(b) < 2 or len(a) > BOOTSTRAP_MAX or len(b) > BOOTSTRAP_MAX:
        return point, None, None
    rng = np.random.default_rng(0)
    ia = rng.integers(0, len(a), size=(n_boot, len(a)))
    ib = rng.integers(0, len(b), size=(n_boot, len(b)))
    ratios = (a[ia].sum(axis=1) / da[ia].sum(axis=1)) / (b[ib].sum(axis=1) / db[ib].sum(axis=1))
    low, high = interval95(ratios)
    return point, low, high
