"""Drop JSON files of shop events (view -> cart -> purchase) into data/ecommerce_events/.

Shoppers browse at the same time: a few sessions are open at once and their events
interleave, each session viewing one to three products, maybe putting the last one in
the cart and maybe buying it. Prices and names come from data/reference/products.csv.
The analytics lessons read this folder; each file is renamed into it complete.

Run (in a second terminal, from anywhere):
  python data_generators/generate_ecommerce_events.py                 # 5 files, one every 5 s
  python data_generators/generate_ecommerce_events.py --count 30 --interval 2 --events-per-file 50
  python data_generators/generate_ecommerce_events.py --seed 7 --output-dir /tmp/shop
      # another shop

Same --seed and --base-time, same bytes. Numbering continues after the files already
in the folder.
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
from common.timestamps import iso, parse_iso  # noqa: E402
from infra import cli  # noqa: E402
from infra.files import json_lines  # noqa: E402
from infra.simfiles import SimFile, continue_after, run_file_simulator  # noqa: E402

FILE_PREFIX = "events"
FILE_PATTERN = re.compile(rf"^{FILE_PREFIX}-(\d+)\.json$")
OPEN_SESSIONS = 4  # shoppers browsing at the same time; their events interleave
MAX_VIEWS_PER_SESSION = 3
CART_PROBABILITY = 0.5  # a session puts its last viewed product in the cart...
PURCHASE_PROBABILITY = 0.6  # ...and a cart ends in a purchase this often
GAP_SECONDS = (1, 4)  # time between two consecutive events: a few whole seconds
USERS = 40  # USER-2000 .. USER-2039


def main(argv: list[str] | None = None) -> int:
    parser = cli.simulator_parser(__doc__, count=5, interval=5, output_dir=paths.ECOMMERCE_DIR)
    parser.add_argument(
        "--events-per-file",
        type=cli.positive_int,
        default=20,
        metavar="N",
        help="events per file (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    folder = args.output_dir.resolve()

    print(
        f"Writing {args.count} file(s) of {args.events_per_file} shop events to "
        f"{paths.display(folder)} every {args.interval:g} s (Ctrl-C stops).",
        flush=True,
    )
    return run_file_simulator("ecommerce", folder, event_files(folder, args), args.interval)


def event_files(folder: Path, args) -> Iterator[list[SimFile]]:
    """The run's files, one batch each, numbered on from the files already in ``folder``."""
    first_file, start = continue_after(folder, FILE_PATTERN)
    base_time = args.base_time or now_for(start, args.seed)
    for number in range(args.count):
        events = make_ecommerce_events(
            args.events_per_file,
            seed=args.seed,
            base_time=base_time,
            start=start + number * args.events_per_file,
        )
        kinds = ", ".join(
            f"{sum(e['event_type'] == kind for e in events)} {kind}"
            for kind in ("view", "cart", "purchase")
        )
        yield [
            SimFile(
                f"{FILE_PREFIX}-{first_file + number:04d}.json",
                json_lines(events),
                f"{len(events)} events: {kinds}",
            )
        ]


def make_ecommerce_events(
    count: int, *, seed: int = 42, base_time: datetime = config.BASE_EVENT_TIME, start: int = 0
) -> list[dict]:
    """Events ``start`` .. ``start + count - 1`` of the shop's event sequence, in time order.

    The whole sequence is one seeded simulation from ``base_time`` (event 0 happens
    exactly then), so any slice of it is reproducible and slices join up seamlessly.
    Keys and order match common.schemas.ECOMMERCE_EVENT_SCHEMA; ids are 1-based.
    """
    products = load_products()
    rng = random.Random(f"{seed}:ecommerce")
    sessions: list[list[dict]] = []  # each open session: its remaining events
    offset = 0
    events = []
    for index in range(start + count):
        while len(sessions) < OPEN_SESSIONS:
            sessions.append(plan_session(rng, products))
        session = rng.choice(sessions)
        event = session.pop(0)
        if not session:
            sessions.remove(session)
        if index > 0:
            offset += rng.randint(*GAP_SECONDS)
        if index >= start:
            events.append(
                {
                    "event_id": f"EVT-{index + 1:06d}",
                    **event,
                    "timestamp": iso(base_time + timedelta(seconds=offset)),
                }
            )
    return events


def plan_session(rng: random.Random, products: list[dict]) -> list[dict]:
    """One shopper's visit: views, then maybe a cart, maybe a purchase (without ids or times)."""
    user_id = f"USER-{2000 + rng.randrange(USERS)}"
    viewed = [rng.choice(products) for _ in range(rng.randint(1, MAX_VIEWS_PER_SESSION))]
    steps = [(product, "view", 1) for product in viewed]
    if rng.random() < CART_PROBABILITY:
        quantity = rng.randint(1, 3)
        steps.append((viewed[-1], "cart", quantity))
        if rng.random() < PURCHASE_PROBABILITY:
            steps.append((viewed[-1], "purchase", quantity))
    return [
        {
            "user_id": user_id,
            "event_type": event_type,
            "product_id": product["product_id"],
            "product_name": product["product_name"],
            "category": product["category"],
            "price": product["list_price"],
            "quantity": quantity,
        }
        for product, event_type, quantity in steps
    ]


def load_products() -> list[dict]:
    """data/reference/products.csv as dicts, list_price as a float."""
    with open(paths.PRODUCTS_CSV, newline="", encoding="utf-8") as handle:
        return [{**row, "list_price": float(row["list_price"])} for row in csv.DictReader(handle)]


def now_for(start: int, seed: int) -> datetime:
    """The base time that puts event ``start`` at the current moment (the live default)."""
    first = make_ecommerce_events(1, seed=seed, start=start)[0]["timestamp"]
    offset = parse_iso(first) - config.BASE_EVENT_TIME
    return datetime.now(timezone.utc).replace(microsecond=0) - offset


if __name__ == "__main__":
    sys.exit(main())
