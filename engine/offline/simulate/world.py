"""The simulated world: customer and terminal profiles, built once per simulation.

Profiles follow the handbook (see ``engine.offline.simulate.simulator``): locations on a 100×100 grid,
spending habits, and the set of terminals within reach of each customer, stored as
CSR arrays (``reach_offset``/``reach_count``/``reach_flat``) so a day's terminal
draws are one vectorised gather. The rest — country, language, app usage, IP range,
terminal kind, merchant category, currency — is what Tollgate adds.

>>> w = build_world_for(customers=50, terminals=100, seed=0)
>>> bool(w.reach_flat.size == w.reach_count.sum())
True
>>> sorted(set(w.term_kind.tolist())) <= ["online", "payee", "pos"]
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy.spatial import cKDTree


class _WorldConfig(Protocol):
    customers: int
    terminals: int
    radius: float


@dataclass(slots=True)
class World:
    mean_amount: np.ndarray
    std_amount: np.ndarray
    mean_tx_per_day: np.ndarray
    customer_ids: np.ndarray
    account_ids: np.ndarray
    home_country: np.ndarray
    language: np.ndarray
    app_user: np.ndarray
    ip_prefix: np.ndarray
    reach_offset: np.ndarray
    reach_count: np.ndarray
    reach_flat: np.ndarray
    terminal_ids: np.ndarray
    term_kind: np.ndarray
    term_mcc: np.ndarray
    term_country: np.ndarray
    term_currency: np.ndarray


def _pick(rng: np.random.Generator, table: dict[str, float], n: int) -> np.ndarray:
    keys = list(table)
    weights = np.array([table[k] for k in keys])
    return np.array(keys, dtype=object)[rng.choice(len(keys), n, p=weights / weights.sum())]


_HOME = {"BE": 0.82, "NL": 0.06, "FR": 0.05, "DE": 0.03, "LU": 0.02, "GB": 0.01, "PL": 0.01}
_HOME_LANGUAGE = {"BE": {"nl": 0.55, "fr": 0.40, "de": 0.05}, "NL": {"nl": 1.0}, "FR": {"fr": 1.0},
                  "DE": {"de": 1.0}, "LU": {"fr": 0.6, "de": 0.4}, "GB": {"en": 1.0}, "PL": {"pl": 1.0}}
_OTHER_LANGUAGES = ("es", "pl", "ru", "zh", "ja", "ar", "tr")
_IP_FIRST_OCTET = {"BE": [81, 84, 91, 94, 109, 178, 193, 213], "NL": [62, 77, 80, 145, 217],
                   "FR": [78, 82, 86, 90, 176], "DE": [79, 84, 87, 93, 217], "LU": [80, 85, 158],
                   "GB": [51, 81, 86, 109], "PL": [31, 83, 89]}
_KIND = {"pos": 0.72, "online": 0.20, "payee": 0.08}
_POS_COUNTRY = {"BE": 0.90, "NL": 0.04, "FR": 0.03, "LU": 0.02, "DE": 0.01}
_ONLINE_COUNTRY = {"IE": 0.20, "NL": 0.15, "LU": 0.15, "BE": 0.15, "DE": 0.10, "FR": 0.10, "GB": 0.08,
                   "US": 0.07}
_CURRENCY = {"GB": "GBP", "US": "USD"}
#: ISO 18245 merchant category codes by terminal kind, with rough shares.
MCC_BY_KIND: dict[str, dict[str, float]] = {
    "pos": {"5411": 0.30, "5812": 0.15, "5814": 0.10, "5541": 0.10, "5912": 0.07, "5651": 0.07,
            "5311": 0.05, "4111": 0.06, "5200": 0.05, "5813": 0.05},
    "online": {"5999": 0.20, "5732": 0.12, "5815": 0.15, "4121": 0.10, "4722": 0.08, "5942": 0.05,
               "5691": 0.10, "7995": 0.05, "4899": 0.10, "5311": 0.05},
    "payee": {"4829": 0.70, "6012": 0.20, "6513": 0.10},
}


def mix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser: stable pseudo-random 64-bit ids from integers (vectorised)."""
    x = np.asarray(x, dtype=np.uint64).copy()
    with np.errstate(over="ignore"):
        x ^= x >> np.uint64(30)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    return x


def build_world(config: _WorldConfig, rng: np.random.Generator) -> World:
    c, t = config.customers, config.terminals
    # Handbook profiles.
    cust_xy = rng.uniform(0, 100, (c, 2))
    mean_amount = rng.uniform(5, 100, c)
    mean_tx = rng.uniform(0, 4, c)
    term_xy = rng.uniform(0, 100, (t, 2))
    reach = cKDTree(term_xy).query_ball_point(cust_xy, r=config.radius, return_sorted=True)
    reach_count = np.fromiter((len(r) for r in reach), dtype=np.int64, count=c)
    reach_offset = np.concatenate(([0], np.cumsum(reach_count)[:-1])).astype(np.int64)
    reach_flat = np.fromiter((i for r in reach for i in r), dtype=np.int64, count=int(reach_count.sum()))

    # Tollgate's additions.
    home = _pick(rng, _HOME, c)
    language = np.empty(c, dtype=object)
    for country, table in _HOME_LANGUAGE.items():
        idx = np.flatnonzero(home == country)
        language[idx] = _pick(rng, table, idx.size)
    roll = rng.random(c)
    language[roll < 0.15] = "en"
    other = roll > 0.95
    language[other] = np.array(_OTHER_LANGUAGES, dtype=object)[rng.integers(0, len(_OTHER_LANGUAGES), other.sum())]
    first = np.array([_IP_FIRST_OCTET[h][i % len(_IP_FIRST_OCTET[h])]
                      for h, i in zip(home.tolist(), rng.integers(0, 64, c).tolist())])
    octets = rng.integers(0, 256, (c, 2))
    ip_prefix = np.array([f"{a}.{b}.{d}" for a, (b, d) in zip(first.tolist(), octets.tolist())], dtype=object)

    kind = _pick(rng, _KIND, t)
    country = np.where(kind == "online", _pick(rng, _ONLINE_COUNTRY, t), _pick(rng, _POS_COUNTRY, t))
    mcc = np.empty(t, dtype=object)
    for k, table in MCC_BY_KIND.items():
        idx = np.flatnonzero(kind == k)
        mcc[idx] = _pick(rng, table, idx.size)
    currency = np.array([_CURRENCY.get(cc, "EUR") for cc in country.tolist()], dtype=object)
    return World(
        mean_amount=mean_amount, std_amount=mean_amount / 2, mean_tx_per_day=mean_tx,
        customer_ids=np.array([f"C{i:06d}" for i in range(c)], dtype=object),
        account_ids=np.array([f"A{i:06d}" for i in range(c)], dtype=object),
        home_country=home, language=language, app_user=rng.random(c) < 0.55,
        ip_prefix=ip_prefix,
        reach_offset=reach_offset, reach_count=reach_count, reach_flat=reach_flat,
        terminal_ids=np.array([f"T{i:06d}" for i in range(t)], dtype=object),
        term_kind=kind, term_mcc=mcc, term_country=country.astype(object), term_currency=currency,
    )


def build_world_for(customers: int, terminals: int, seed: int, radius: float = 5.0) -> World:
    """Convenience for tests and notebooks."""
    @dataclass
    class _Cfg:
        customers: int
        terminals: int
        radius: float

    return build_world(_Cfg(customers, terminals, radius), np.random.default_rng(seed))
