"""Run the course's own Apache Kafka broker: single node (KRaft), no Docker, no install.

    python local_kafka.py start              # fetch the jars once (~1 min), then start (~10 s)
    python local_kafka.py status             # running or not, ports, PID, data and jar folders
    python local_kafka.py topics             # list topics; --create NAME [--partitions N] adds one
    python local_kafka.py stop               # stop it cleanly
    python local_kafka.py reset              # stop it and delete its data and logs (keeps the jars)

Works from any folder (also as ``python -m local_kafka`` from the project root). The
broker listens on the loopback address and ports of common/config.py (``--help`` shows
them); --port/--controller-port or the environment variables LOCAL_KAFKA_PORT and
LOCAL_KAFKA_CONTROLLER_PORT change them (set the same variable for the lessons). Lessons
start this broker themselves when none is running; start it here to keep one up between
lessons. Its jars live in one folder shared by every course folder and test run (see
infra/kafka_broker.py). To use another Kafka instead (Docker: ``docker compose up -d``),
set KAFKA_BOOTSTRAP_SERVERS=host:port.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "streaming_tutorial"))

from common import config  # noqa: E402
from infra.errors import CourseError  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # The lessons read the ports from the environment: keep one source of truth.
    if args.port:
        os.environ[config.LOCAL_KAFKA_PORT_ENV] = str(args.port)
    if args.controller_port:
        os.environ[config.LOCAL_KAFKA_CONTROLLER_PORT_ENV] = str(args.controller_port)

    from infra import kafka, kafka_broker

    broker = kafka_broker.LocalBroker()
    try:
        if args.command == "start":
            process = kafka_broker.start(broker, timeout=args.timeout)
            if process is not None:
                print(
                    "It keeps running after this command ends; stop it with: python local_kafka.py "
                    "stop"
                )
                if broker.port != config.LOCAL_KAFKA_PORT:
                    print(
                        f"Lessons look for it on port {config.LOCAL_KAFKA_PORT}: run them with "
                        f"{config.LOCAL_KAFKA_PORT_ENV}={broker.port} "
                        f"(or {config.KAFKA_BOOTSTRAP_ENV}={broker.bootstrap})."
                    )
        elif args.command == "stop":
            if kafka_broker.stop(broker):
                print(f"Stopped the course's Kafka broker at {broker.bootstrap}.")
            elif kafka.answers(broker.bootstrap):
                print(
                    f"A Kafka broker answers at {broker.bootstrap}, but it was not started from "
                    "this course folder: stop it where you started it (e.g. 'docker compose down')."
                )
            else:
                print("The course's Kafka broker is not running.")
        elif args.command == "status":
            print(kafka_broker.status(broker).describe())
        elif args.command == "reset":
            kafka_broker.reset(broker)
            print(
                f"Stopped the broker (if it ran) and deleted its data and logs under "
                f"{broker.home}; the next start formats fresh storage."
            )
        elif args.command == "topics":
            bootstrap = args.bootstrap_servers or kafka.bootstrap_servers()
            if args.create:
                kafka.ensure_topics(bootstrap, args.create, partitions=args.partitions)
            names = kafka.list_topics(bootstrap)
            print(f"Topics at {bootstrap} ({len(names)}):")
            for name in names:
                print(f"  {name}")
    except CourseError as error:
        print(paragraphs(str(error)), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nStopped with Ctrl-C.", file=sys.stderr)
        return 130
    return 0


def paragraphs(text: str) -> str:
    """Wrap prose lines; keep indented lines (log excerpts) as they are."""
    return "\n".join(
        line
        if line.startswith(" ")
        else textwrap.fill(line, width=78, break_long_words=False, break_on_hyphens=False)
        for line in text.splitlines()
    )


def build_parser() -> argparse.ArgumentParser:
    ports = argparse.ArgumentParser(add_help=False)
    ports.add_argument(
        "--port",
        type=int,
        default=None,
        help=f"client port (default: {config.LOCAL_KAFKA_PORT_ENV} or {config.LOCAL_KAFKA_PORT})",
    )
    ports.add_argument(
        "--controller-port",
        type=int,
        default=None,
        help=f"KRaft controller port (default: {config.LOCAL_KAFKA_CONTROLLER_PORT_ENV} "
        f"or {config.LOCAL_KAFKA_CONTROLLER_PORT})",
    )

    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    start = sub.add_parser(
        "start", parents=[ports], help="start the broker (fetches its jars the first time)"
    )
    start.add_argument(
        "--timeout",
        type=float,
        default=120,
        metavar="SECONDS",
        help="how long to wait for the broker to answer (default: %(default)s)",
    )
    sub.add_parser("stop", parents=[ports], help="stop the broker this course folder started")
    sub.add_parser(
        "status", parents=[ports], help="is it running? ports, PID, data and jar folders"
    )
    sub.add_parser("reset", parents=[ports], help="stop the broker and delete its data and logs")
    topics = sub.add_parser("topics", parents=[ports], help="list topics (and create some)")
    topics.add_argument(
        "--create", nargs="+", metavar="NAME", default=[], help="create these topics if missing"
    )
    topics.add_argument(
        "--partitions",
        type=int,
        default=1,
        help="partitions of created topics (default: %(default)s)",
    )
    topics.add_argument(
        "--bootstrap-servers",
        default=None,
        metavar="HOST:PORT",
        help="another cluster (default: KAFKA_BOOTSTRAP_SERVERS or the local broker)",
    )
    return parser


if __name__ == "__main__":
    sys.exit(main())
