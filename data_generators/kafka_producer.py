"""Send keyed JSON events to Kafka: shop events, sensor readings, ad impressions and clicks.

The Kafka twin of the file simulators: the same records (same generators, seed and
event times), sent as messages with a key at a steady rate. Lesson 08 reads the shop
events; the ad kinds feed the stream-stream join when it reads from Kafka.

Run (in a second terminal, from anywhere; it needs a broker: python local_kafka.py start)
  python data_generators/kafka_producer.py                          # 500 shop events, 10 per second
  python data_generators/kafka_producer.py --count 300 --rate 10 --malformed-every 25
  python data_generators/kafka_producer.py --kind sensor --late-fraction 0.2 --max-lateness 60
  python data_generators/kafka_producer.py --kind ads --count 400 --rate 20
  python data_generators/kafka_producer.py --rate 0 --count 10000   # as fast as possible

Kinds (--kind), their keys and default topics
  ecommerce    key user_id        -> events           ECOMMERCE_EVENT_SCHEMA
  sensor       key sensor_id      -> sensor-readings  SENSOR_SCHEMA
  impressions  key impression_id  -> ad-impressions   IMPRESSION_SCHEMA
  clicks       key impression_id  -> ad-clicks        CLICK_SCHEMA
  ads          impressions and clicks in arrival order, each to its own topic
               (--count is the number of impressions)

Same --seed and --base-time, same messages (--base-time defaults to now).
--malformed-every N sends every Nth message cut in half, as a producer that crashed
mid-write would: not JSON, so a consumer must quarantine it. --enrich adds a country
and a user agent per shopper (Faker, seeded): extra JSON fields a schema ignores.
Topics are created if missing; Ctrl-C stops after flushing what was already sent.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "streaming_tutorial"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import config  # noqa: E402
from infra import cli  # noqa: E402
from infra.errors import CourseError  # noqa: E402

SIMULATOR_NAME = "kafka_producer"
DEFAULT_COUNT = 500
DEFAULT_RATE = 10.0  # messages per second: slow enough to watch, fast enough to fill batches
DEFAULT_PARTITIONS = 3  # so the partition column and per-key ordering have something to show
SENSOR_TOPIC = "sensor-readings"
KINDS = ("ecommerce", "sensor", "impressions", "clicks", "ads")
KEY_FIELD = {
    "ecommerce": "user_id",
    "sensor": "sensor_id",
    "impression": "impression_id",
    "click": "impression_id",
}
DEFAULT_LATE_FRACTION = {"sensor": 0.1}  # the others arrive in order unless asked
PROGRESS_EVERY_SECONDS = 2.0
SEND_TIMEOUT_SECONDS = 30.0  # a message the broker has not acknowledged by then is an error
PRODUCER_SETTINGS = {"acks": "all"}  # the broker has written it before send() counts as done
# Batch when racing (--rate 0), send each message at once when pacing. Racing: larger batches,
# a longer linger and zstd. kafka-python spends its time per request in Python, so fewer,
# bigger, compressed requests carry more messages a second: 100-byte events on the course's
# broker, 2 cores, 2026-11-23 (python -m benchmarks): linger_ms=5 alone 17,000 msg/s, + 256 KiB
# batches 23,000, + zstd 57,000 (gzip 47,000; 1 MiB batches no better). zstandard is installed.
RACING_SETTINGS = {"linger_ms": 20, "batch_size": 256 * 1024, "compression_type": "zstd"}
PACED_SETTINGS = {"linger_ms": 0}


@dataclass(frozen=True)
class Message:
    topic: str
    key: str
    value: str  # the JSON text, or a broken copy of it
    malformed: bool = False


@dataclass(frozen=True)
class Delivery:
    """Where the broker stored a message: tests match these against what a query read."""

    message: Message
    partition: int
    offset: int
    timestamp_ms: int  # the Kafka timestamp (CreateTime: when the producer sent it)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    check_options(parser, args)
    from infra import kafka
    from infra.simulators import run_simulator

    bootstrap = args.bootstrap_servers or kafka.bootstrap_servers()
    base_time = args.base_time or datetime.now(timezone.utc).replace(microsecond=0)
    messages = build_messages(
        args.kind,
        args.count,
        seed=args.seed,
        base_time=base_time,
        topic=args.topic,
        impressions_topic=args.impressions_topic,
        clicks_topic=args.clicks_topic,
        malformed_every=args.malformed_every,
        late_fraction=args.late_fraction,
        max_lateness_seconds=args.max_lateness,
        disorder_seconds=args.disorder,
        enrich=args.enrich,
    )
    rate = args.rate if args.rate is not None else (1 / args.interval if args.interval > 0 else 0.0)
    try:
        # SIGTERM (a lesson stopping us) and Ctrl-C both end in send_messages' flush.
        return run_simulator(
            SIMULATOR_NAME,
            lambda: produce(bootstrap, messages, args, base_time, rate),
            stopped="every message sent so far was flushed to Kafka.",
        )
    except CourseError as error:
        print(str(error), file=sys.stderr)
        return 1


def produce(
    bootstrap: str, messages: list[Message], args, base_time: datetime, rate: float
) -> None:
    """Create the topics if missing, send the messages at ``rate``, say what Kafka acknowledged."""
    from infra import kafka

    topics = list(dict.fromkeys(message.topic for message in messages))
    kafka.check_reachable(bootstrap)
    kafka.ensure_topics(bootstrap, topics, partitions=args.partitions)
    pace = f"{rate:g} per second" if rate > 0 else "as fast as possible"
    print(
        f"Sending {len(messages)} {args.kind} messages to {', '.join(topics)} at {bootstrap}, "
        f"{pace} (first event time {base_time:%Y-%m-%dT%H:%M:%SZ}; Ctrl-C stops).",
        flush=True,
    )
    deliveries = send_messages(bootstrap, messages, rate=rate, progress=show_progress)
    broken = sum(delivery.message.malformed for delivery in deliveries)
    print(
        f"Done: {len(deliveries)} messages acknowledged by Kafka "
        f"({broken} deliberately malformed).",
        flush=True,
    )


def build_parser():
    parser = cli.simulator_parser(__doc__, count=DEFAULT_COUNT, interval=1 / DEFAULT_RATE)
    parser.add_argument(
        "--rate",
        type=float,
        default=None,
        metavar="PER_SECOND",
        help=f"messages per second, 0 = as fast as possible (default: {DEFAULT_RATE:g}; "
        "overrides --interval)",
    )
    parser.add_argument(
        "--kind", choices=KINDS, default="ecommerce", help="what to send (default: %(default)s)"
    )
    parser.add_argument(
        "--topic",
        default=None,
        help="topic to send to (default: events, sensor-readings, ad-impressions or ad-clicks "
        "by --kind; not with --kind ads)",
    )
    parser.add_argument(
        "--impressions-topic",
        default=config.TOPIC_IMPRESSIONS,
        help="--kind ads/impressions: topic of the impressions (default: %(default)s)",
    )
    parser.add_argument(
        "--clicks-topic",
        default=config.TOPIC_CLICKS,
        help="--kind ads/clicks: topic of the clicks (default: %(default)s)",
    )
    parser.add_argument(
        "--bootstrap-servers",
        default=None,
        metavar="HOST:PORT",
        help="Kafka to send to (default: KAFKA_BOOTSTRAP_SERVERS or the course's broker, "
        f"{config.local_kafka_bootstrap()})",
    )
    parser.add_argument(
        "--partitions",
        type=cli.positive_int,
        default=DEFAULT_PARTITIONS,
        help="partitions of topics this creates (default: %(default)s)",
    )
    parser.add_argument(
        "--malformed-every",
        type=int,
        default=0,
        metavar="N",
        help="send every Nth message cut in half, not JSON (default: 0 = never)",
    )
    parser.add_argument(
        "--late-fraction",
        type=float,
        default=None,
        metavar="F",
        help="share of records that arrive late, 0..1 (default: 0.1 for sensor, else 0)",
    )
    parser.add_argument(
        "--max-lateness",
        type=cli.non_negative_seconds,
        default=60,
        metavar="SECONDS",
        help="--kind sensor: how late a late reading can be (default: %(default)s)",
    )
    parser.add_argument(
        "--disorder",
        type=cli.non_negative_seconds,
        default=5,
        metavar="SECONDS",
        help="--kind sensor: how far out of order any reading can be (default: %(default)s)",
    )
    parser.add_argument(
        "--enrich",
        action="store_true",
        help="--kind ecommerce: add a country and a user agent per shopper (Faker)",
    )

    return parser


def check_options(parser, args) -> None:
    if args.kind == "ads" and args.topic:
        parser.error(
            "--topic does not apply to --kind ads: use --impressions-topic and --clicks-topic"
        )
    if args.late_fraction is not None and not 0 <= args.late_fraction <= 1:
        parser.error("--late-fraction must be between 0 and 1")
    if args.rate is not None and args.rate < 0:
        parser.error("--rate must be zero or more")
    if args.malformed_every < 0:
        parser.error("--malformed-every must be zero or more")


def build_messages(
    kind: str,
    count: int,
    *,
    seed: int = cli.DEFAULT_SEED,
    base_time: datetime = config.BASE_EVENT_TIME,
    topic: str | None = None,
    impressions_topic: str = config.TOPIC_IMPRESSIONS,
    clicks_topic: str = config.TOPIC_CLICKS,
    malformed_every: int = 0,
    late_fraction: float | None = None,
    max_lateness_seconds: float = 60,
    disorder_seconds: float = 5,
    enrich: bool = False,
) -> list[Message]:
    """The messages to send, in order: a pure function of the arguments (no clock, no broker)."""
    late = DEFAULT_LATE_FRACTION.get(kind, 0.0) if late_fraction is None else late_fraction
    if kind == "ecommerce":
        from data_generators.generate_ecommerce_events import make_ecommerce_events

        records = make_ecommerce_events(count, seed=seed, base_time=base_time)
        if enrich:
            records = add_shopper_profiles(records, seed)
        keyed = [(topic or config.TOPIC_EVENTS, "ecommerce", record) for record in records]
    elif kind == "sensor":
        from data_generators.generate_sensor_data import make_sensor_readings

        records = make_sensor_readings(
            count,
            seed=seed,
            base_time=base_time,
            late_fraction=late,
            max_lateness_seconds=max_lateness_seconds,
            disorder_seconds=disorder_seconds,
        )
        keyed = [(topic or SENSOR_TOPIC, "sensor", record) for record in records]
    elif kind in ("impressions", "clicks", "ads"):
        from data_generators.generate_ad_events import make_ad_timeline

        # The timeline is in arrival order: a click can come before a late impression.
        timeline = make_ad_timeline(count, seed=seed, base_time=base_time, late_fraction=late)
        targets = {"impression": topic or impressions_topic, "click": topic or clicks_topic}
        wanted = {
            "impressions": {"impression"},
            "clicks": {"click"},
            "ads": {"impression", "click"},
        }[kind]
        keyed = [(targets[what], what, record) for what, record, _ in timeline if what in wanted]
    else:
        raise ValueError(f"unknown kind {kind!r}; choose one of {', '.join(KINDS)}")

    messages = []
    for number, (target, what, record) in enumerate(keyed, start=1):
        value = json.dumps(record, separators=(",", ":"))
        broken = malformed_every > 0 and number % malformed_every == 0
        messages.append(
            Message(
                target,
                str(record[KEY_FIELD[what]]),
                cut_in_half(value) if broken else value,
                broken,
            )
        )
    return messages


def cut_in_half(value: str) -> str:
    """What a producer that crashed mid-write leaves: the first half of the JSON text."""
    return value[: len(value) // 2]


def add_shopper_profiles(records: list[dict], seed: int) -> list[dict]:
    """Add a country and a user agent per shopper: the same shopper always gets the same ones."""
    from faker import Faker

    fake = Faker()
    profiles: dict[str, dict] = {}
    enriched = []
    for record in records:
        user = record["user_id"]
        if user not in profiles:
            fake.seed_instance(f"{seed}:{user}")  # a pure function of (seed, user): reproducible
            profiles[user] = {"country": fake.country_code(), "user_agent": fake.user_agent()}
        enriched.append({**record, **profiles[user]})
    return enriched


def send_messages(
    bootstrap: str,
    messages: Sequence[Message],
    *,
    rate: float = 0.0,
    progress: Callable[[int, int], None] | None = None,
) -> list[Delivery]:
    """Send ``messages`` in order, ``rate`` per second (0 = as fast as possible); return where
    each landed.

    Always flushes before returning, also on Ctrl-C or SIGTERM: what was handed to the
    producer reaches Kafka. A broker that does not acknowledge raises CourseError.
    """
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    from infra.kafka import CLIENT_ID, check_reachable, client_options, unreachable_advice

    check_reachable(bootstrap)
    producer = KafkaProducer(
        **client_options(bootstrap),
        client_id=f"{CLIENT_ID}-producer",
        request_timeout_ms=10000,
        delivery_timeout_ms=int(SEND_TIMEOUT_SECONDS * 1000),
        bootstrap_timeout_ms=5000,
        **PRODUCER_SETTINGS,
        **(RACING_SETTINGS if rate == 0 else PACED_SETTINGS),
    )
    futures = []
    started = last_report = time.monotonic()
    try:
        for number, message in enumerate(messages, start=1):
            futures.append(
                producer.send(message.topic, key=message.key.encode(), value=message.value.encode())
            )
            now = time.monotonic()
            if progress and now - last_report >= PROGRESS_EVERY_SECONDS:
                progress(number, len(messages))
                last_report = now
            if rate > 0:
                # Pace against the start, not the previous send, so the rate does not drift.
                delay = started + number / rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
    finally:
        producer.flush(timeout=SEND_TIMEOUT_SECONDS)
        producer.close(timeout=5)
    deliveries = []
    try:
        for message, future in zip(messages, futures, strict=True):
            metadata = future.get(timeout=SEND_TIMEOUT_SECONDS)
            deliveries.append(
                Delivery(message, metadata.partition, metadata.offset, metadata.timestamp)
            )
    except KafkaError as error:
        raise CourseError(
            unreachable_advice(bootstrap, f"a message was not acknowledged: {error}")
        ) from error
    if progress:
        progress(len(deliveries), len(messages))
    return deliveries


def show_progress(sent: int, total: int) -> None:
    print(f"  sent {sent}/{total}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
