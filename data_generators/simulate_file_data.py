"""Drop JSON files of payment transactions into data/input_stream/, one every few seconds.

Lessons 03 (file streaming) and 04 (output sinks) watch that folder. Each file is
written elsewhere and renamed into the folder, so Spark never reads half a file.

Run (in a second terminal, from anywhere):
  python data_generators/simulate_file_data.py                      # 5 files, one every 5 s
  python data_generators/simulate_file_data.py --count 20 --interval 2
  python data_generators/simulate_file_data.py --malformed-every 4  # every 4th line broken
  python data_generators/simulate_file_data.py --output-dir /tmp/transactions

Same --seed and --base-time, same bytes. Numbering continues after the files already
in the folder, so a second run never overwrites the first.
"""

from __future__ import annotations

import csv
import random
import re
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "streaming_tutorial"))

from common import config, paths  # noqa: E402
from common.timestamps import iso  # noqa: E402
from infra import cli  # noqa: E402
from infra.files import json_lines  # noqa: E402
from infra.simfiles import SimFile, continue_after, run_file_simulator  # noqa: E402

FILE_PREFIX = "transactions"
FILE_PATTERN = re.compile(rf"^{FILE_PREFIX}-(\d+)\.json$")
SECONDS_BETWEEN_TRANSACTIONS = 3  # event time advances ~3 s per transaction
USERS = 50  # USER-1000 .. USER-1049, so per-user aggregations have repeats
# A typical basket size per category, so Electronics amounts look like Electronics.
AMOUNT_RANGE = {
    "Electronics": (25.0, 1500.0),
    "Sports": (10.0, 300.0),
    "Home": (5.0, 400.0),
    "Fashion": (10.0, 250.0),
}
DEFAULT_AMOUNT_RANGE = (5.0, 500.0)


def main(argv: list[str] | None = None) -> int:
    parser = cli.simulator_parser(__doc__, count=5, interval=5, output_dir=paths.TRANSACTIONS_DIR)
    parser.add_argument(
        "--records-per-file",
        type=cli.positive_int,
        default=10,
        metavar="N",
        help="transactions per file (default: %(default)s)",
    )
    parser.add_argument(
        "--malformed-every",
        type=int,
        default=0,
        metavar="N",
        help="replace every Nth line of each file with broken JSON (default: 0 = never)",
    )
    args = parser.parse_args(argv)
    if args.malformed_every < 0:
        parser.error("--malformed-every must be 0 (never) or a positive number")
    folder = args.output_dir.resolve()

    print(
        f"Writing {args.count} file(s) of {args.records_per_file} transactions to "
        f"{paths.display(folder)} every {args.interval:g} s (Ctrl-C stops).",
        flush=True,
    )
    return run_file_simulator(
        "transactions", folder, transaction_files(folder, args), args.interval
    )


def transaction_files(folder: Path, args) -> Iterator[list[SimFile]]:
    """The run's files, one batch each, numbered on from the files already in ``folder``."""
    first_file, start = continue_after(folder, FILE_PATTERN)
    base_time = args.base_time or now_for(start)
    for number in range(args.count):
        records = make_transactions(
            args.records_per_file,
            seed=args.seed,
            base_time=base_time,
            start=start + number * args.records_per_file,
        )
        text = render_file(records, malformed_every=args.malformed_every)
        yield [
            SimFile(
                f"{FILE_PREFIX}-{first_file + number:04d}.json", text, f"{len(records)} records"
            )
        ]


def make_transactions(
    count: int, *, seed: int = 42, base_time: datetime = config.BASE_EVENT_TIME, start: int = 0
) -> list[dict]:
    """Transactions ``start`` .. ``start + count - 1`` of the sequence that begins at ``base_time``.

    Each record is a pure function of (seed, base_time, its index), so
    ``make_transactions(10) + make_transactions(10, start=10) == make_transactions(20)``.
    Keys and order match common.schemas.TRANSACTION_SCHEMA; ids are 1-based (TXN-000001).
    """
    categories = product_categories()
    records = []
    for index in range(start, start + count):
        rng = random.Random(f"{seed}:transaction:{index}")
        category = rng.choice(categories)
        low, high = AMOUNT_RANGE.get(category, DEFAULT_AMOUNT_RANGE)
        # Event time: a steady pace plus whole-second jitter smaller than the pace, so
        # times only go up and print without fractions.
        offset = index * SECONDS_BETWEEN_TRANSACTIONS + rng.randrange(SECONDS_BETWEEN_TRANSACTIONS)
        records.append(
            {
                "transaction_id": f"TXN-{index + 1:06d}",
                "user_id": f"USER-{1000 + rng.randrange(USERS)}",
                "amount": round(rng.uniform(low, high), 2),
                "category": category,
                "timestamp": iso(base_time + timedelta(seconds=offset)),
            }
        )
    return records


def render_file(records: list[dict], *, malformed_every: int = 0) -> str:
    """The file's text: JSON Lines, with every ``malformed_every``-th line (1-based) broken.

    A broken line is its record cut in half, as a writer that crashed mid-line leaves
    it; Spark reads it as a corrupt record (lesson 03 shows how to quarantine those).
    """
    lines = json_lines(records).splitlines(keepends=True)
    if malformed_every > 0:
        for position in range(malformed_every - 1, len(lines), malformed_every):
            lines[position] = malformed(lines[position])
    return "".join(lines)


def malformed(line: str) -> str:
    """A JSON line cut in half: not valid JSON."""
    text = line.rstrip("\n")
    return text[: len(text) // 2] + "\n"


def product_categories() -> list[str]:
    """The categories of data/reference/products.csv, in the order they first appear."""
    with open(paths.PRODUCTS_CSV, newline="", encoding="utf-8") as handle:
        return list(dict.fromkeys(row["category"] for row in csv.DictReader(handle)))


def now_for(start: int) -> datetime:
    """The base time that puts transaction ``start`` at the current moment (the live default)."""
    return datetime.now(timezone.utc).replace(microsecond=0) - timedelta(
        seconds=start * SECONDS_BETWEEN_TRANSACTIONS
    )


if __name__ == "__main__":
    sys.exit(main())
