"""Drop JSON files of temperature readings into data/sensor_readings/, some of them late.

Readings arrive in order of ``reading_id``, but their ``event_time`` (when the sensor
measured) is not in that order: every reading is a little behind (network jitter, up to
--disorder seconds) and some are very late (a sensor that was offline, up to
--max-lateness seconds). That is what watermarks are for: lesson 07 shows which late
readings a watermark still accepts and which it drops. About 3% of readings are spikes
10-15 °C above normal, for the alerting examples.

Run (in a second terminal, from anywhere):
  python data_generators/generate_sensor_data.py                  # 5 files, one every 5 s
  python data_generators/generate_sensor_data.py --late-fraction 0.3 --max-lateness 120
  python data_generators/generate_sensor_data.py --late-fraction 0 --disorder 0   # all in order
  python data_generators/generate_sensor_data.py --seed 7 --output-dir /tmp/sensors

Same --seed and --base-time, same bytes. Numbering continues after the files already
in the folder.
"""

from __future__ import annotations

import math
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

FILE_PREFIX = "readings"
FILE_PATTERN = re.compile(rf"^{FILE_PREFIX}-(\d+)\.json$")
SECONDS_BETWEEN_READINGS = 1  # the true event time advances 1 s per reading
SPIKE_FRACTION = 0.03  # readings far above normal, for alerting examples
SPIKE_DEGREES = (10.0, 15.0)
DAILY_SWING_PERIOD_SECONDS = 600  # a slow up-and-down so charts are not flat


def main(argv: list[str] | None = None) -> int:
    parser = cli.simulator_parser(__doc__, count=5, interval=5, output_dir=paths.SENSOR_DIR)
    parser.add_argument(
        "--readings-per-file",
        type=cli.positive_int,
        default=10,
        metavar="N",
        help="readings per file (default: %(default)s)",
    )
    parser.add_argument(
        "--sensors",
        type=cli.positive_int,
        default=3,
        metavar="N",
        help="number of sensors, SENSOR-0 .. SENSOR-N-1 (default: %(default)s)",
    )
    parser.add_argument(
        "--late-fraction",
        type=float,
        default=0.1,
        metavar="F",
        help="share of readings that arrive very late, 0..1 (default: %(default)s)",
    )
    parser.add_argument(
        "--max-lateness",
        type=cli.non_negative_seconds,
        default=60,
        metavar="SECONDS",
        help="how late a very late reading can be (default: %(default)s)",
    )
    parser.add_argument(
        "--disorder",
        type=cli.non_negative_seconds,
        default=5,
        metavar="SECONDS",
        help="how far behind any reading can be (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    if not 0 <= args.late_fraction <= 1:
        parser.error("--late-fraction must be between 0 and 1")
    folder = args.output_dir.resolve()

    print(
        f"Writing {args.count} file(s) of {args.readings_per_file} readings from {args.sensors} "
        f"sensors to {paths.display(folder)} every {args.interval:g} s (Ctrl-C stops).",
        flush=True,
    )
    return run_file_simulator("sensors", folder, reading_files(folder, args), args.interval)


def reading_files(folder: Path, args) -> Iterator[list[SimFile]]:
    """The run's files, one batch each, numbered on from the files already in ``folder``."""
    first_file, start = continue_after(folder, FILE_PATTERN)
    base_time = args.base_time or now_for(start)
    for number in range(args.count):
        readings = make_sensor_readings(
            args.readings_per_file,
            seed=args.seed,
            base_time=base_time,
            sensors=args.sensors,
            late_fraction=args.late_fraction,
            max_lateness_seconds=args.max_lateness,
            disorder_seconds=args.disorder,
            start=start + number * args.readings_per_file,
        )
        late = count_late(readings, base_time, args.disorder)
        yield [
            SimFile(
                f"{FILE_PREFIX}-{first_file + number:04d}.json",
                json_lines(readings),
                f"{len(readings)} readings, {late} very late",
            )
        ]


def make_sensor_readings(
    count: int,
    *,
    seed: int = 42,
    base_time: datetime = config.BASE_EVENT_TIME,
    sensors: int = 3,
    late_fraction: float = 0.1,
    max_lateness_seconds: float = 60,
    disorder_seconds: float = 5,
    start: int = 0,
) -> list[dict]:
    """Readings ``start`` .. ``start + count - 1`` in ARRIVAL order (reading_id = arrival
    number, 1-based).

    Reading i was taken at base_time + i s, minus a delay: up to ``disorder_seconds``
    for most, between ``disorder_seconds`` + 1 and ``max_lateness_seconds`` for a
    ``late_fraction`` of them. Delays are whole seconds so times print cleanly. Each
    reading is a pure function of (seed, base_time, options, its index).
    Keys and order match common.schemas.SENSOR_SCHEMA.
    """
    readings = []
    for index in range(start, start + count):
        rng = random.Random(f"{seed}:sensor:{index}")
        # Draw every random number whatever the options, so changing --late-fraction or
        # --disorder changes only the times, never which sensor or temperature.
        sensor = rng.randrange(sensors)
        jitter, late_roll, lateness = rng.random(), rng.random(), rng.random()
        noise, spike_roll, spike = rng.gauss(0, 0.3), rng.random(), rng.uniform(*SPIKE_DEGREES)
        humidity = rng.uniform(35.0, 65.0)

        delay = round(jitter * disorder_seconds)
        if late_roll < late_fraction:
            shortest = min(math.floor(disorder_seconds) + 1, max_lateness_seconds)
            delay = round(shortest + lateness * (max_lateness_seconds - shortest))
        true_seconds = index * SECONDS_BETWEEN_READINGS
        # Each sensor has its own normal level; all share a slow swing and a little noise.
        temperature = (
            20.0
            + 1.5 * sensor
            + 2.0 * math.sin(2 * math.pi * true_seconds / DAILY_SWING_PERIOD_SECONDS)
        )
        temperature += noise + (spike if spike_roll < SPIKE_FRACTION else 0.0)
        readings.append(
            {
                "reading_id": index + 1,
                "sensor_id": f"SENSOR-{sensor}",
                "temperature": round(temperature, 1),
                "humidity": round(humidity, 1),
                "event_time": iso(base_time + timedelta(seconds=true_seconds - delay)),
            }
        )
    return readings


def count_late(readings: list[dict], base_time: datetime, disorder_seconds: float) -> int:
    """How many readings are behind their arrival by more than the usual disorder."""
    late = 0
    for reading in readings:
        arrived = base_time + timedelta(
            seconds=(reading["reading_id"] - 1) * SECONDS_BETWEEN_READINGS
        )
        taken = parse_iso(reading["event_time"])
        late += (arrived - taken).total_seconds() > disorder_seconds
    return late


def now_for(start: int) -> datetime:
    """The base time that puts reading ``start`` at the current moment (the live default)."""
    return datetime.now(timezone.utc).replace(microsecond=0) - timedelta(
        seconds=start * SECONDS_BETWEEN_READINGS
    )


if __name__ == "__main__":
    sys.exit(main())
