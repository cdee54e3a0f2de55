"""00 · Check your setup: Python, Java, pyspark, the folders, the sample data and a first Spark job.

What you'll learn
  - What the course runs on: Python 3.11+, Java 17+ (Spark runs on the JVM) and pyspark 4.2.
  - Where the course keeps things: data/ (input), checkpoints/ (query progress), output/.
  - How a lesson gets its SparkSession (common.session.get_spark) and the laptop defaults
    it sets: shuffle partitions = cores, UTC timestamps, WARN logs.
  - Which optional connectors (Kafka, Delta Lake, SQLite JDBC) are already downloaded.

Run
  python initial_setup.py --sample-data               # once: folders + sample data
  python streaming_tutorial/00_setup_environment.py   # about 15 s, most of it starting Spark
  No simulator needed. Exit code 0: ready (missing sample data is only a warning);
  1: Java or pyspark needs fixing (the advice says how).

What you'll see
  (after initial_setup.py --sample-data; your versions and Java path may differ)
  ========================================================================
  1. The machine
  ========================================================================
    ✓ Python   3.11.7
    ✓ Java     17 (/usr/bin/java)
    ✓ pyspark  4.2.0
  ========================================================================
  2. Folders and sample data
  ========================================================================
    ✓ data/input_stream          3 files, 30 lines
    ✓ data/ecommerce_events      5 files, 100 lines
    ✓ data/sensor_readings       4 files, 120 lines
    ✓ checkpoints                ready
    ✓ output                     ready
  ========================================================================
  3. A first Spark job
  ========================================================================
    Spark version:       4.2.0
    Master:              local[*]
    Shuffle partitions:  2
    Session time zone:   UTC
    Products per category (a batch query on data/reference/products.csv):
      Electronics  3 products, average list price 566.66
      Fashion      3 products, average list price 51.66
      Home         3 products, average list price 91.33
      Sports       3 products, average list price 79.83
  ========================================================================
  4. Optional connectors (downloaded on first use)
  ========================================================================
    ✓ Kafka        org.apache.spark_spark-sql-kafka-0-10_2.13-4.2.0.jar: cached
    ✓ Delta Lake   io.delta_delta-spark_4.2_2.13-4.4.0.jar: cached
    ✓ SQLite JDBC  org.xerial_sqlite-jdbc-3.50.3.0.jar: cached
  ========================================================================
  5. Summary
  ========================================================================
  Ready: Python, Java, pyspark, Spark, the folders and the sample data.
  Next: python streaming_tutorial/01_basic_streaming.py
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from common import paths
from common.schemas import PRODUCT_SCHEMA
from common.session import SQLITE_JDBC_PACKAGE, delta_package, get_spark, kafka_package
from infra import cli
from infra.environment import run_checks
from infra.errors import CourseError
from infra.runner import banner, run_lesson, say

LESSON = "00_setup_environment"
# Spark 4 keeps the jars of spark.jars.packages here (Ivy's cache, one file per jar).
IVY_JARS_DIR = Path.home() / ".ivy2.5.2" / "jars"
SAMPLE_FOLDERS = (paths.TRANSACTIONS_DIR, paths.ECOMMERCE_DIR, paths.SENSOR_DIR)
SETUP_ADVICE = "python initial_setup.py --sample-data"


@dataclass(frozen=True)
class FolderStatus:
    folder: Path
    files: int  # *.json files in it (0 when it does not exist)
    lines: int  # records in them, broken ones included


def read_products(spark) -> DataFrame:
    """The product catalogue (data/reference/products.csv), read in batch: a static DataFrame."""
    return (
        spark.read.format("csv")
        # The schema is given, so Spark does not read the file once more to guess the types.
        .schema(PRODUCT_SCHEMA)
        # The first line names the columns; it is no product.
        .option("header", True)
        # paths.uri: an explicit file: URI, never a bare path (see common/paths.py).
        .load(paths.uri(paths.PRODUCTS_CSV))
    )


def build_products_per_category(products: DataFrame) -> DataFrame:
    """Products and their average list price per category, in category order.

    A first (batch) query: the same DataFrame API the streaming lessons use.
    """
    return (
        # One group per category...
        products.groupBy("category")
        # ...and two figures for each: how many products, and their average list price.
        .agg(
            F.count("*").alias("products"),
            F.round(F.avg("list_price"), 2).alias("avg_list_price"),
        )
        # A batch result can be sorted as a whole (a streaming one only in complete mode).
        .orderBy("category")
    )


def check_machine() -> list[str]:
    """Print a ✓ or ✗ line per requirement; return the advice for each one that failed."""
    checks = run_checks()
    for check in checks:
        if check.ok:
            print(f"  ✓ {check.name:<8} {check.detail}")
        else:
            print(f"  ✗ {check.name:<8} NOT READY")
    return [f"{check.name}: {check.detail}" for check in checks if not check.ok]


def check_folders() -> list[str]:
    """Print what data/, checkpoints/ and output/ hold; return what is worth fixing."""
    empty = []
    for status in sample_data_status(SAMPLE_FOLDERS):
        name = paths.display(status.folder)
        if status.files:
            print(f"  ✓ {name:<26} {status.files} files, {status.lines} lines")
        else:
            print(f"  ! {name:<26} no sample files yet")
            empty.append(name)
    missing = []
    for folder in (paths.CHECKPOINT_DIR, paths.OUTPUT_DIR):
        name = paths.display(folder)
        if folder.is_dir():
            print(f"  ✓ {name:<26} ready")
        else:
            print(f"  ! {name:<26} missing")
            missing.append(name)
    warnings = []
    if empty:
        warnings.append(
            f"No sample data in {', '.join(empty)}: run '{SETUP_ADVICE}' (lessons that need "
            "data can also start their simulator, but the docstrings show the sample data)."
        )
    if missing:
        warnings.append(
            f"Missing {', '.join(missing)}: '{SETUP_ADVICE}' creates them (lessons also create "
            "them when they need them)."
        )
    return warnings


def run_first_job(args) -> list[str]:
    """Start Spark the way every lesson does (get_spark) and run a tiny batch query.

    Returns the problems, if any.
    """
    try:
        spark = get_spark(LESSON, master=args.master)
    except CourseError as error:
        print("  ✗ Spark could not start (its own error is above)")
        return [f"Spark: {error}"]
    try:
        # The defaults every lesson gets from get_spark: worth seeing once.
        print(f"  Spark version:       {spark.version}")
        print(f"  Master:              {spark.sparkContext.master}")
        print(f"  Shuffle partitions:  {spark.conf.get('spark.sql.shuffle.partitions')}")
        print(f"  Session time zone:   {spark.conf.get('spark.sql.session.timeZone')}")
        print(f"  Products per category (a batch query on {paths.display(paths.PRODUCTS_CSV)}):")
        products = read_products(spark)
        # collect() runs the query and brings its few rows to the driver, here.
        for row in build_products_per_category(products).collect():
            print(
                f"    {row.category:<12} {row.products} products, "
                f"average list price {row.avg_list_price:.2f}"
            )
    finally:
        spark.stop()
    return []


def show_connectors(jars_dir: Path) -> None:
    """Say which connector jars are in Ivy's cache (purely informational)."""
    for name, (jar, cached) in cached_connector_jars(jars_dir).items():
        if cached:
            print(f"  ✓ {name:<12} {jar}: cached")
        else:
            print(
                f"  · {name:<12} {jar}: not downloaded yet: the first lesson that needs it "
                "fetches it (needs network)"
            )


def sample_data_status(folders) -> list[FolderStatus]:
    """How many JSON files and lines each folder holds (0, 0 when it does not exist)."""
    statuses = []
    for folder in folders:
        files = sorted(folder.glob("*.json")) if folder.is_dir() else []
        lines = sum(len(path.read_text(encoding="utf-8").splitlines()) for path in files)
        statuses.append(FolderStatus(folder, len(files), lines))
    return statuses


def connector_jars() -> dict[str, str]:
    """The file names Ivy gives the connectors' main jars, for this pyspark and delta-spark."""
    packages = {
        "Kafka": kafka_package(),
        "Delta Lake": delta_package(),
        "SQLite JDBC": SQLITE_JDBC_PACKAGE,
    }
    # Ivy stores group:artifact:version as group_artifact-version.jar.
    return {
        name: "{}_{}-{}.jar".format(*coordinates.split(":"))
        for name, coordinates in packages.items()
    }


def cached_connector_jars(jars_dir: Path) -> dict[str, tuple[str, bool]]:
    """For each connector: (its jar's file name, whether it is already in ``jars_dir``)."""
    return {name: (jar, (jars_dir / jar).is_file()) for name, jar in connector_jars().items()}


def main(argv: list[str] | None = None) -> int:
    args = cli.lesson_parser(__doc__, simulator=False).parse_args(argv)

    banner("1. The machine")
    blockers = check_machine()  # without these fixed, no lesson can run

    banner("2. Folders and sample data")
    warnings = check_folders()  # lessons still run: they start their simulators

    if not blockers:
        banner("3. A first Spark job")
        blockers += run_first_job(args)
        banner("4. Optional connectors (downloaded on first use)")
        show_connectors(IVY_JARS_DIR)

    banner("5. Summary")
    if blockers:
        print("Not ready yet. Fix this first:")
        for item in blockers:
            say(f"- {item}")
    elif warnings:
        print("Ready: Python, Java, pyspark and Spark.")
    else:
        print("Ready: Python, Java, pyspark, Spark, the folders and the sample data.")
    if warnings:
        print("Worth doing:")
        for item in warnings:
            say(f"- {item}")
    if blockers:
        return 1
    print("Next: python streaming_tutorial/01_basic_streaming.py")
    return 0


if __name__ == "__main__":
    run_lesson(main)
