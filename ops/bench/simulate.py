"""Simulator speed: seconds per simulated day at the handbook's size (5,000 customers,
10,000 terminals, ≈ 9,700 transactions a day). Target: well under a second a day.

Prints, side by side: the handbook core alone (``handbook_days``), the full day with
channels, devices and text (``days``), and the full day turned into typed records
(``SimDay.records``), which is what the Kafka sink iterates.

Run:  nice python ops/bench/simulate.py [--days 14]
"""

from __future__ import annotations

import argparse
import platform
import time

import _common  # noqa: F401,I001  (first: the repository, not this folder, on sys.path)

from engine.offline.simulate.simulator import SimConfig, Simulator


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=14)
    parser.add_argument("--customers", type=int, default=5_000)
    parser.add_argument("--terminals", type=int, default=10_000)
    args = parser.parse_args()
    config = SimConfig(customers=args.customers, terminals=args.terminals, days=args.days, seed=0,
                       drain_outcomes=False)

    t0 = time.perf_counter()
    simulator = Simulator(config)
    world_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    n_core = sum(len(frame) for frame in simulator.handbook_days())
    core_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    days = list(simulator.days())
    full_s = time.perf_counter() - t0
    n_full = sum(len(d.events) for d in days)

    t0 = time.perf_counter()
    n_records = sum(1 for d in days for _ in d.records())
    records_s = time.perf_counter() - t0

    print(f"simulate benchmark: {args.customers} customers, {args.terminals} terminals, {args.days} days, "
          f"{n_full / args.days:.0f} tx/day; world built in {world_s:.2f} s; python {platform.python_version()}")
    print(f"{'case':34} {'s/day':>7} {'tx/s':>10} {'× core':>7}")
    rows = [("handbook core (handbook_days)", core_s, n_core),
            ("full day (days)", full_s, n_full),
            ("full day + typed records", full_s + records_s, n_records)]
    for name, seconds, n in rows:
        print(f"{name:34} {seconds / args.days:7.3f} {n / seconds:10.0f} {seconds / core_s:7.1f}")


if __name__ == "__main__":
    main()
