"""One command that measures the course's defaults against Spark's and against the machine's floor.

Run (from the project root, after the README's set-up; about 3½ minutes on 2 cores with --quick)
  python -m benchmarks                 # the full run, about 10-15 minutes on 2 cores
  python -m benchmarks --quick         # smaller sizes, the same figures
  python -m benchmarks --only stateful,producer
  python -m benchmarks --tiny --output FOLDER        # the smoke test's size: every key, no meaning
  python -m benchmarks --publish      # a full run, then its two plots copied into docs/

It prints progress lines while it runs and a table at the end, and writes
``output/benchmarks/results.json`` (a flat object: the date, the machine, every figure) and
the two plots of docs/PERFORMANCE.md beside it. A run never changes a tracked file: publishing
a full run's plots into docs/ is a step of its own, ``--publish``. Kafka: the
cluster in KAFKA_BOOTSTRAP_SERVERS, else the course's broker (started for the run if none
is running); the benchmark's topics all start with ``bench-``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks import harness  # noqa: F401  (puts streaming_tutorial/ on sys.path first)
from benchmarks.harness import Progress, Results, Target, machine, table

# In this order: the two without a Spark JVM of ours first, so nothing of ours competes with them.
BENCHMARKS = (
    "first_output",
    "producer",
    "stateful",
    "stateless",
    "state_stores",
    "throughput",
    "end_to_end",
)
KAFKA_BENCHMARKS = {"stateless", "throughput", "end_to_end", "producer"}
SPARK_BENCHMARKS = set(BENCHMARKS) - {"first_output", "producer"}
TARGETS = [
    Target("stateful_default_over_tuned", at_least=25),
    Target("stateful_batch_p50_ms", at_most=250),
    Target("stateless_batch_p50_ms", at_most=150),
    Target("producer_msgs_per_s", at_least=50_000),
    Target("e2e_realtime_p50_ms", at_most=50),
    Target("kafka_to_delta_rows_per_s", at_least=100_000),
    Target("first_output_s", at_most=10),
]
SHOWN = [
    "stateful_default_over_tuned",
    "stateful_batch_p50_ms",
    "stateful_default_batch_p50_ms",
    "stateless_batch_p50_ms",
    "stateless_batch_p95_ms",
    "stateless_default_batch_p50_ms",
    "stateless_kafka_batch_p50_ms",
    "stateless_kafka_async_batch_p50_ms",
    *[f"state_store_{p}_{t}_batch_ms" for t in ("10k", "100k", "1m") for p in ("hdfs", "rocksdb")],
    *[f"state_store_{p}_{t}_memory_mb" for t in ("10k", "100k", "1m") for p in ("hdfs", "rocksdb")],
    "producer_msgs_per_s",
    "producer_confluent_msgs_per_s",
    "e2e_microbatch_p50_ms",
    "e2e_microbatch_p99_ms",
    "e2e_realtime_p50_ms",
    "e2e_realtime_p99_ms",
    "files_to_delta_rows_per_s",
    "kafka_to_delta_rows_per_s",
    "rate_to_noop_rows_per_s",
    "first_output_s",
    "session_start_s",
]


@dataclass(frozen=True)
class Size:
    """How much each benchmark measures. A figure is the median of ``samples`` measurements."""

    name: str
    warm_up: int = 1  # micro-batches dropped before measuring
    samples: int = 5
    default_partitions: int = 200  # Spark's default; --tiny takes fewer (recorded in results.json)
    candidates: bool = True  # try the candidate settings (stateful, stateless, producer)
    partitions_curve: list[int] = field(default_factory=lambda: [1, 16])
    max_state_keys: int = 1_000_000
    producer_messages: int = 200_000  # in all, split over the rounds
    producer_rounds: int = 5
    e2e_messages: int = 100
    rows_per_file: int = 200_000  # per micro-batch, files and Kafka -> Delta: large, a ceiling
    rate_rows_per_batch: int = 1_000_000
    first_output_runs: int = 3


SIZES = {
    "full": Size(
        "full",
        warm_up=2,
        samples=7,
        partitions_curve=[1, 4, 8, 16, 50, 200],
        producer_messages=1_000_000,
        e2e_messages=400,
        rows_per_file=500_000,
        rate_rows_per_batch=5_000_000,
        first_output_runs=5,
    ),
    "quick": Size("quick", candidates=False, max_state_keys=100_000, producer_messages=250_000),
    "tiny": Size(
        "tiny",
        warm_up=0,
        samples=1,
        default_partitions=4,
        candidates=False,
        partitions_curve=[1],
        max_state_keys=100,
        producer_messages=300,
        producer_rounds=1,
        e2e_messages=5,
        rows_per_file=100,
        rate_rows_per_batch=1000,
        first_output_runs=1,
    ),
}


def parse_args(argv: list[str] | None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__.splitlines()[0]
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--quick", action="store_true", help="smaller sizes, about 3½ minutes on 2 cores"
    )
    group.add_argument(
        "--tiny",
        action="store_true",
        help="the smoke test's size: writes every key, measures nothing",
    )
    parser.add_argument(
        "--only", default="", metavar="NAME,...", help=f"run only these: {', '.join(BENCHMARKS)}"
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=None,
        help="folder for results.json and the plots (default: output/benchmarks)",
    )
    parser.add_argument(
        "--publish",
        action="store_true",
        help="copy the plots into docs/ after a full run (the figures docs/PERFORMANCE.md shows)",
    )
    args = parser.parse_args(argv)
    if args.publish and (args.quick or args.tiny or args.only):
        parser.error(
            "--publish copies a full run's plots into docs/: run it without --quick, --tiny "
            "and --only (the plots of a shorter run stay in the output folder)"
        )
    chosen = [name.strip() for name in args.only.split(",") if name.strip()] or list(BENCHMARKS)
    unknown = sorted(set(chosen) - set(BENCHMARKS))
    if unknown:
        parser.error(
            f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}"
        )
    args.chosen = [name for name in BENCHMARKS if name in chosen]
    args.size = SIZES["tiny" if args.tiny else "quick" if args.quick else "full"]
    return args


def count_steps(chosen: list[str], size: Size) -> int:
    from benchmarks import kafka_producer

    per = {
        "first_output": size.first_output_runs,
        "stateless": 4 + size.candidates,
        "state_stores": 6,
        "throughput": 3,
        "end_to_end": 1,
        "stateful": 3 + 6 * size.candidates + len(size.partitions_curve),
        "producer": size.producer_rounds * (2 + len(kafka_producer.VARIANTS) * size.candidates),
    }
    return sum(per[name] for name in chosen)


def main(argv: list[str] | None = None) -> int:
    from common import paths
    from infra.errors import CourseError

    args = parse_args(argv)
    size, chosen = args.size, args.chosen
    output = args.output or paths.OUTPUT_DIR / "benchmarks"
    workdir = output / "work"
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    results = Results(
        {"size": size.name, "machine": machine(), "load_average_start": harness.load_average()}
    )
    progress = Progress(count_steps(chosen, size))
    print(
        f"python -m benchmarks ({size.name}): {', '.join(chosen)}; progress on stderr", flush=True
    )
    try:
        run(chosen, size, results, progress, workdir)
    except KeyboardInterrupt:
        print(
            "Stopped (Ctrl-C): queries, session and broker stopped; no results written.",
            file=sys.stderr,
        )
        return 130
    except CourseError as error:  # e.g. no Kafka broker answers: one paragraph of advice
        print(str(error), file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    results.info["load_average_end"] = harness.load_average()
    results.info["seconds"] = round(progress.elapsed())
    written = results.write(output / "results.json")
    if "stateful" in chosen and "state_stores" in chosen:
        from benchmarks import plots

        note = (
            f"{size.name} run, {results.info['machine']['cores']} cores, "
            f"{time.strftime('%Y-%m-%d')}"
        )
        drawn = plots.draw(results.figures, output, note)
        if args.publish:
            for plot in drawn:
                shutil.copy2(plot, paths.PROJECT_ROOT / "docs" / plot.name)
            print(f"published {', '.join(plot.name for plot in drawn)} into docs/")
    print(table(results.figures, TARGETS, SHOWN))
    print(f"\n{len(results.figures)} figures in {written} ({results.info['seconds']} s)")
    return 0


def run(chosen: list[str], size: Size, results: Results, progress: Progress, workdir: Path) -> None:
    from contextlib import ExitStack

    from common.session import get_spark
    from infra.kafka_broker import kafka_for_lesson

    if "first_output" in chosen:  # first: a cold JVM, not competing with ours
        from benchmarks import first_output

        first_output.run(results, progress, size)
    with ExitStack() as stack:
        bootstrap = (
            stack.enter_context(kafka_for_lesson()) if KAFKA_BENCHMARKS & set(chosen) else ""
        )
        if "producer" in chosen:  # before our Spark JVM exists
            from benchmarks import kafka_producer

            kafka_producer.run(results, progress, bootstrap, size)
        spark = None
        if SPARK_BENCHMARKS & set(chosen):
            started = time.perf_counter()
            # 2 GiB of heap: the HDFS-backed store keeps a million keys on the heap, twice.
            spark = get_spark(
                "benchmarks",
                kafka=True,
                delta=True,
                ui=False,
                extra_conf={"spark.driver.memory": "2g"},
            )
            results.put("session_start_s", time.perf_counter() - started)
            stack.callback(spark.stop)
        for name in chosen:
            if name == "stateful":
                from benchmarks import stateful

                stateful.run(spark, results, progress, workdir, size)
            elif name == "stateless":
                from benchmarks import stateless

                stateless.run(spark, results, progress, workdir, size, bootstrap)
            elif name == "state_stores":
                from benchmarks import state_stores

                state_stores.run(spark, results, progress, workdir, size)
            elif name == "throughput":
                from benchmarks import throughput

                throughput.run(spark, results, progress, workdir, size, bootstrap)
            elif name == "end_to_end":
                from benchmarks import end_to_end

                end_to_end.run(spark, results, progress, workdir, size, bootstrap)


if __name__ == "__main__":
    sys.exit(main())
