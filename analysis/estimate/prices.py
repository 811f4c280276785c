"""Price tables: price per GPU-hour by class and their currency (data/prices.yaml, dated list prices with their
source, unless `--prices FILE` names yours), and a cost at them. The one table tables, report and plan use.
"""
from __future__ import annotations

import math
from pathlib import Path

from experiments.base import hardware, userfiles
from experiments.base.datafiles import read_yaml
from experiments.base.errors import InputError

CURRENCY_KEY = "currency"
DEFAULT_PRICES = hardware.DATA / "prices.yaml"  # the one price table tables, report and plan use unless given another


def read_prices(path: str | Path) -> dict[str, float]:
    """A price table: YAML mapping of hardware key -> price per GPU-hour, and optionally `currency: EUR` (the unit the
    cost is printed in; without it the cost is in the file's own, unnamed currency). Keys are case-insensitive."""
    return price_table(path)[0]


def price_currency(path: str | Path | None) -> str | None:
    """The `currency:` of a price table, None when it names none (or there is no table)."""
    return price_table(path)[1] if path is not None else None


def price_table(path: str | Path) -> tuple[dict[str, float], str | None]:
    """(price per GPU-hour by class, the currency or None) of the price table at PATH; bad input otherwise."""
    path = Path(path)
    data = read_yaml(path, "price table")
    if not isinstance(data, dict) or not data:
        raise InputError(path, "a price table is a YAML mapping of hardware key to price per GPU-hour, "
                               "e.g. 'h100: 2.5' (and optionally 'currency: EUR')")
    currency = data.get(CURRENCY_KEY)
    if currency is not None and (not isinstance(currency, str) or not currency.strip()):
        raise InputError(path, f"currency must be a name such as EUR or USD, got {currency!r}")
    table = {}
    for key, value in data.items():
        if key == CURRENCY_KEY:
            continue
        key = str(key).lower()
        if hardware.get(str(key)) is None:
            raise InputError(path, f"unknown hardware {key!r} (known: {', '.join(hardware.table())})")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise InputError(path, f"price of {key!r} must be a non-negative number per GPU-hour, got {value!r}")
        table[str(key)] = float(value)
    if not table:
        raise InputError(path, "the price table names no GPU class (e.g. 'h100: 2.5')")
    return table, currency.strip() if currency else None


def price_source(path: str | Path | None = DEFAULT_PRICES) -> str | None:
    """The `# source:` comment line of a price table (where and when its prices were listed), None without one."""
    if path is None or not userfiles.present(path):
        return None
    for line in userfiles.read_text(path).splitlines():
        if line.startswith("# source:"):
            return line.removeprefix("# source:").strip()
    return None


def check_prices(path: str | Path | None) -> None:
    """Bad input (one line) for a price table that cannot be read: said before a tree is read, whether or not a
    recommended recipe then needs its prices."""
    if path is not None:
        read_prices(path)
        price_source(path)


def cost(gpu_hours: float | None, price: float | None) -> float | None:
    """GPU-hours x price per GPU-hour; None where either is unknown."""
    return None if gpu_hours is None or price is None else gpu_hours * price

