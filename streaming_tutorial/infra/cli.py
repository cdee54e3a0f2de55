"""The one command-line style of the course: the same flags in every lesson and simulator.

Lessons::

    --duration SECONDS   stop after this long (every lesson ends by itself)
    --master URL         Spark master (default local[*], or spark-submit's; a cluster URL works too)
    --checkpoint-dir DIR where this lesson keeps its checkpoints
    --reset              delete this lesson's checkpoints and output first
    --storage URI        where data/, checkpoints/, output/ live (a folder, file:, hdfs:, s3a: ...)
    --no-simulator       do not start the lesson's simulator; you run it yourself
    --available-now      (file lessons) process what is there, then exit
    --host, --port       (the socket lesson) where its server listens

Simulators::

    --count N  --interval SECONDS  --seed N  --base-time ISO-8601
    --output-dir DIR     (file simulators) where to write the files
    --storage URI        (file simulators) the lessons' storage, when it is a local folder
"""

from __future__ import annotations

import argparse
from datetime import datetime
from pathlib import Path

from common import config, paths
from common.timestamps import parse_iso

MAX_DEFAULT_DURATION = 60.0
DEFAULT_SEED = 42


def _summary(doc: str | None) -> str:
    return (doc or "").strip().splitlines()[0] if doc and doc.strip() else ""


def positive_seconds(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


def non_negative_seconds(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be zero or more seconds, got {text}")
    return value


def positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, got {text}")
    return value


def iso_time(text: str) -> datetime:
    """Parse an ISO-8601 time; a time without a zone is taken as UTC."""
    try:
        return parse_iso(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(
            f"not an ISO-8601 time (e.g. 2025-01-15T10:30:00Z): {text}"
        ) from error


def lesson_parser(
    doc: str | None,
    *,
    duration: float = 20.0,
    simulator: bool = True,
    available_now: bool = False,
    socket_server: bool = False,
) -> argparse.ArgumentParser:
    """The parser every lesson starts from; a lesson may add its own options to it.

    ``socket_server`` adds --host and --port: where the text server of the socket lesson
    listens (socket_server.py has the same flags and defaults).
    """
    if duration > MAX_DEFAULT_DURATION:
        raise ValueError(f"a lesson's default duration must be at most {MAX_DEFAULT_DURATION} s")
    parser = argparse.ArgumentParser(
        description=_summary(doc),
        epilog="Read the file's docstring for what the lesson teaches and what you will see.",
    )
    parser.add_argument(
        "--duration",
        type=positive_seconds,
        default=duration,
        metavar="SECONDS",
        help="stop the lesson's queries after this many seconds (default: %(default)s)",
    )
    parser.add_argument(
        "--master",
        default=None,
        help="Spark master URL, e.g. spark://127.0.0.1:7077 (default: local[*], or spark-submit's)",
    )
    parser.add_argument(
        "--checkpoint-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="where this lesson keeps its checkpoints (default: checkpoints/<lesson>)",
    )
    parser.add_argument(
        "--reset",
        action="store_true",
        help="delete this lesson's checkpoints and output before starting",
    )
    add_storage_flag(parser)
    if simulator:
        parser.add_argument(
            "--no-simulator",
            action="store_true",
            help="do not start the simulator; run it yourself in a second terminal",
        )
    if socket_server:
        parser.add_argument(
            "--host",
            default=config.SOCKET_HOST,
            help="the text server's host (default: %(default)s)",
        )
        parser.add_argument(
            "--port",
            type=int,
            default=config.SOCKET_PORT,
            help="the text server's port (default: %(default)s, or $SOCKET_PORT)",
        )
    if available_now:
        parser.add_argument(
            "--available-now",
            action="store_true",
            help="process the files that are there now, then exit (trigger availableNow)",
        )
    return parser


def simulator_parser(
    doc: str | None,
    *,
    count: int,
    interval: float,
    seed: int = DEFAULT_SEED,
    output_dir: Path | None = None,
) -> argparse.ArgumentParser:
    """The parser every simulator starts from; ``output_dir`` (a file simulator's folder) adds
    --output-dir."""
    parser = argparse.ArgumentParser(description=_summary(doc))
    parser.add_argument(
        "--count",
        type=positive_int,
        default=count,
        help="how many items to produce (default: %(default)s)",
    )
    parser.add_argument(
        "--interval",
        type=non_negative_seconds,
        default=interval,
        metavar="SECONDS",
        help="pause between items (default: %(default)s)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=seed,
        help="random seed; same seed, same data (default: %(default)s)",
    )
    parser.add_argument(
        "--base-time",
        type=iso_time,
        default=None,
        metavar="ISO",
        help="event time of the first item, e.g. 2025-01-15T10:30:00Z (default: now)",
    )
    if output_dir is not None:
        parser.add_argument(
            "--output-dir",
            type=Path,
            default=output_dir,
            metavar="DIR",
            help=f"where to write the files (default: {paths.display(output_dir)})",
        )
        add_storage_flag(parser)
    return parser


def add_storage_flag(parser: argparse.ArgumentParser) -> None:
    """--storage: read by common/paths.py before argparse runs (the folders are computed at
    import); declared here so that argparse accepts it and --help explains it."""
    parser.add_argument(
        paths.STORAGE_FLAG,
        default=paths.STORAGE or None,
        metavar="URI",
        help=f"where data/, checkpoints/ and output/ live: a local folder, file:///shared/..., or "
        f"hdfs://, s3a://, abfss://, gs:// (default: ${paths.STORAGE_ENV}, "
        "else the project folder)",
    )
