"""Measure how spark.sql.shuffle.partitions changes a stateful micro-batch on this machine.

A thin wrapper: the query and its measurement are ``benchmarks/stateful.py``'s (a rate
source into ``groupBy().count()``, update mode, noop sink), which ``python -m benchmarks``
also runs for the partitions curve of docs/PERFORMANCE.md. Here you pick the counts. The
course's session sets shuffle partitions to the number of cores; this shows why.

Run
  .venv/bin/python benchmarks/shuffle_partitions.py                  # 200 and the core count
  .venv/bin/python benchmarks/shuffle_partitions.py --batches 10 --partitions 200 8 2 1

Timings belong here, not in tests.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import Stats  # noqa: E402  (also puts streaming_tutorial/ on sys.path)
from benchmarks.stateful import KEYS, PARTITIONS_CONF, ROWS_PER_SECOND, measure  # noqa: E402

WARM_UP = 1  # the first batch of a query plans it and creates its state stores


def main(argv: list[str] | None = None) -> None:
    from common.session import get_spark

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--batches",
        type=int,
        default=5,
        help="measured micro-batches per setting (default: %(default)s)",
    )
    parser.add_argument(
        "--partitions",
        type=int,
        nargs="+",
        default=[200, os.cpu_count() or 2],
        help="shuffle partition counts to compare",
    )
    args = parser.parse_args(argv)
    spark = get_spark("benchmark-shuffle-partitions", ui=False)
    print(
        f"cores: {os.cpu_count()}, {args.batches} batches per setting after {WARM_UP} warm-up, "
        f"rate {ROWS_PER_SECOND}/s into groupBy().count() over {KEYS} keys, update mode"
    )
    print(f"{'shuffle partitions':>18} | {'median batch ms':>15} | {'min':>6} | {'max':>6}")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for partitions in args.partitions:
                stats = Stats.of(
                    measure(
                        spark,
                        Path(tmp) / f"chk-{partitions}",
                        {PARTITIONS_CONF: str(partitions)},
                        WARM_UP,
                        args.batches,
                    )
                )
                print(
                    f"{partitions:>18} | {stats.p50:>15.0f} | "
                    f"{stats.min:>6.0f} | {stats.max:>6.0f}",
                    flush=True,
                )
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
