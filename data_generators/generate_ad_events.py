"""Ad impressions and clicks for lesson 09's stream-stream join, written as JSON files.

Every impression is a pure function of its number and the seed: the same
``--seed`` and ``--base-time`` give the same ads, users, clicks and times on every
machine. Impressions are ``IMPRESSION_SPACING_SECONDS`` apart in event time. An
impression gets a click with a probability that depends on the ad (so the
click-through rates differ); most clicks come within ``--max-click-delay``
seconds, but ``OUT_OF_BOUND_SHARE`` of them come later, outside the join's time
bound, so the lesson can show that they are not matched.

Run (in a second terminal, while lesson 09 runs with --source files --no-simulator)
  python data_generators/generate_ad_events.py
  python data_generators/generate_ad_events.py --count 1000 --interval 0.5 --late-fraction 0.1
  python data_generators/generate_ad_events.py --output-dir /tmp/ads
      # writes /tmp/ads/impressions and /tmp/ads/clicks

Files go to data/ad_events/impressions/ and data/ad_events/clicks/ (or under
--output-dir), one pair per ``--batch-size`` impressions, written atomically (a
streaming reader never sees a half-written file).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "streaming_tutorial"))

import random  # noqa: E402
from datetime import datetime, timedelta, timezone  # noqa: E402
from typing import Iterator  # noqa: E402

from common import config, paths  # noqa: E402
from common.timestamps import iso  # noqa: E402
from infra import cli  # noqa: E402
from infra.files import json_lines  # noqa: E402
from infra.simfiles import SimFile, run_file_simulator  # noqa: E402

SIMULATOR_NAME = "ad_events"
DEFAULT_COUNT = 400  # impressions per run: 20 files of 20 impressions, 20 minutes of event time
DEFAULT_INTERVAL = 1.0  # seconds between files: a 400-impression run takes about 20 s
DEFAULT_BATCH_SIZE = 20  # impressions per file
IMPRESSION_SPACING_SECONDS = 3  # event time between two impressions
ADS = ("AD-1", "AD-2", "AD-3", "AD-4", "AD-5")
# How much more (or less) likely than average each ad is to be clicked: the CTRs differ.
AD_APPEAL = {"AD-1": 1.6, "AD-2": 1.2, "AD-3": 1.0, "AD-4": 0.7, "AD-5": 0.5}
USER_COUNT = 50
OUT_OF_BOUND_SHARE = 0.15  # clicks that come after max_click_delay_seconds (the join drops them)
LATE_ARRIVAL_SECONDS = 180  # a "late" record arrives this long after records of its event time


def make_ad_timeline(
    count: int,
    *,
    seed: int = cli.DEFAULT_SEED,
    base_time: datetime = config.BASE_EVENT_TIME,
    click_probability: float = 0.3,
    max_click_delay_seconds: int = 600,
    late_fraction: float = 0.0,
    start: int = 0,
) -> list[tuple[str, dict, datetime]]:
    """Every record in the order it arrives: ("impression" | "click", record, arrival time).

    Impression ``n`` (counting from ``start``) is IMP-<n+1>; its click, if any, is
    CLK-<n+1>, so ids never depend on how the run is cut into pieces. A record
    arrives at its event time, or ``LATE_ARRIVAL_SECONDS`` later for the
    ``late_fraction`` of records that are late (out of order).
    """
    if not 0.0 <= click_probability <= 1.0 or not 0.0 <= late_fraction <= 1.0:
        raise ValueError("click_probability and late_fraction must be between 0 and 1")
    if max_click_delay_seconds < 1:
        raise ValueError("max_click_delay_seconds must be at least 1")
    timeline = []
    for number in range(start, start + count):
        # One generator per impression: the impression is a pure function of (seed, number).
        rng = random.Random(f"{seed}:{number}")
        impression_time = base_time + timedelta(seconds=number * IMPRESSION_SPACING_SECONDS)
        ad_id = ADS[rng.randrange(len(ADS))]
        user_id = f"USER-{rng.randrange(1, USER_COUNT + 1):03d}"
        impression = {
            "impression_id": f"IMP-{number + 1:06d}",
            "ad_id": ad_id,
            "user_id": user_id,
            "impression_time": iso(impression_time),
        }
        timeline.append(("impression", impression, _arrival(impression_time, rng, late_fraction)))
        if rng.random() < min(1.0, click_probability * AD_APPEAL[ad_id]):
            if rng.random() < OUT_OF_BOUND_SHARE:
                delay = rng.randint(max_click_delay_seconds + 1, 2 * max_click_delay_seconds)
            else:
                delay = rng.randint(1, max_click_delay_seconds)
            click_time = impression_time + timedelta(seconds=delay)
            click = {
                "click_id": f"CLK-{number + 1:06d}",
                "impression_id": impression["impression_id"],
                "ad_id": ad_id,
                "user_id": user_id,
                "click_time": iso(click_time),
            }
            timeline.append(("click", click, _arrival(click_time, rng, late_fraction)))
    # Stable sort: records that arrive at the same instant keep their generation order.
    timeline.sort(key=lambda item: item[2])
    return timeline


def make_ad_events(
    count: int,
    *,
    seed: int = cli.DEFAULT_SEED,
    base_time: datetime = config.BASE_EVENT_TIME,
    click_probability: float = 0.3,
    max_click_delay_seconds: int = 600,
    late_fraction: float = 0.0,
    start: int = 0,
) -> tuple[list[dict], list[dict]]:
    """(impressions, clicks), each in arrival order, matching IMPRESSION_SCHEMA and CLICK_SCHEMA."""
    timeline = make_ad_timeline(
        count,
        seed=seed,
        base_time=base_time,
        click_probability=click_probability,
        max_click_delay_seconds=max_click_delay_seconds,
        late_fraction=late_fraction,
        start=start,
    )
    impressions = [record for kind, record, _ in timeline if kind == "impression"]
    clicks = [record for kind, record, _ in timeline if kind == "click"]
    return impressions, clicks


def _arrival(event_time: datetime, rng: random.Random, late_fraction: float) -> datetime:
    late = late_fraction > 0 and rng.random() < late_fraction
    return event_time + timedelta(seconds=LATE_ARRIVAL_SECONDS) if late else event_time


def split_into_files(
    timeline: list[tuple[str, dict, datetime]], base_time: datetime, batch_size: int, count: int
) -> list[tuple[list[dict], list[dict]]]:
    """Cut the timeline into (impressions, clicks) per file, by arrival time.

    File k holds what arrives during the event time of impressions k*batch_size ..
    (k+1)*batch_size - 1; whatever arrives after the last impression (late clicks)
    goes into the last file, so a run ends with its watermark well past its data.
    """
    span = batch_size * IMPRESSION_SPACING_SECONDS
    files = max(1, -(-count // batch_size))
    chunks: list[tuple[list[dict], list[dict]]] = [([], []) for _ in range(files)]
    for kind, record, arrival in timeline:
        index = min(files - 1, max(0, int((arrival - base_time).total_seconds() // span)))
        chunks[index][0 if kind == "impression" else 1].append(record)
    return chunks


def main(argv: list[str] | None = None) -> int:
    parser = cli.simulator_parser(
        __doc__, count=DEFAULT_COUNT, interval=DEFAULT_INTERVAL, output_dir=paths.AD_EVENTS_DIR
    )
    parser.add_argument(
        "--batch-size",
        type=cli.positive_int,
        default=DEFAULT_BATCH_SIZE,
        help="impressions per file (default: %(default)s)",
    )
    parser.add_argument(
        "--click-probability",
        type=float,
        default=0.3,
        help="average chance that an impression is clicked (default: %(default)s)",
    )
    parser.add_argument(
        "--max-click-delay",
        type=cli.positive_int,
        default=600,
        metavar="SECONDS",
        help="most clicks come within this many seconds of their impression (default: %(default)s)",
    )
    parser.add_argument(
        "--late-fraction",
        type=float,
        default=0.0,
        help=f"share of records that arrive {LATE_ARRIVAL_SECONDS} s late, out of order "
        "(default: %(default)s)",
    )
    args = parser.parse_args(argv)
    for name in ("click_probability", "late_fraction"):
        if not 0.0 <= getattr(args, name) <= 1.0:
            parser.error(f"--{name.replace('_', '-')} must be between 0 and 1")

    folder = args.output_dir.resolve()
    # Whole seconds: file names and event times are easier to read.
    base_time = args.base_time or datetime.now(timezone.utc).replace(microsecond=0)
    timeline = make_ad_timeline(
        args.count,
        seed=args.seed,
        base_time=base_time,
        click_probability=args.click_probability,
        max_click_delay_seconds=args.max_click_delay,
        late_fraction=args.late_fraction,
    )
    chunks = split_into_files(timeline, base_time, args.batch_size, args.count)
    print(
        f"Writing {args.count} impressions in {len(chunks)} files to "
        f"{paths.display(folder)}/{{impressions,clicks}}/, one pair every {args.interval:g} s "
        f"(first impression at {iso(base_time)}).",
        flush=True,
    )
    code = run_file_simulator(
        SIMULATOR_NAME, folder, ad_files(chunks, base_time, args.seed), args.interval
    )
    if code == 0:
        print("Done.", flush=True)
    return code


def ad_files(
    chunks: list[tuple[list[dict], list[dict]]], base_time: datetime, seed: int
) -> Iterator[list[SimFile]]:
    """One batch per chunk: its impressions file, then its clicks file (an empty one left out)."""
    # The run's base time and seed in every name: a second run adds files instead of
    # replacing ones a streaming query has already read (it would ignore those).
    stamp = f"{base_time.astimezone(timezone.utc):%Y%m%dT%H%M%SZ}-s{seed}"
    for number, (impressions, clicks) in enumerate(chunks):
        # Impressions first: with no late records, a click's impression is already there.
        batch = [
            SimFile(
                f"impressions/impressions-{stamp}-{number:04d}.json",
                json_lines(impressions),
                f"{len(impressions)} impression{'s' * (len(impressions) != 1)}",
            ),
            SimFile(
                f"clicks/clicks-{stamp}-{number:04d}.json",
                json_lines(clicks),
                f"{len(clicks)} click{'s' * (len(clicks) != 1)}",
            ),
        ]
        yield [file for file in batch if file.text]


if __name__ == "__main__":
    sys.exit(main())
