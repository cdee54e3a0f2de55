"""03 · File streaming: watch a folder of JSON files, read each file once, quarantine bad lines.

What you'll learn
  - A folder is a stream: every new file is new input. A stream needs its schema up front
    (you will see the error without one), and each line is parsed against it.
  - ``maxFilesPerTrigger`` bounds how much one micro-batch reads; ``trigger(availableNow=True)``
    processes what is there now and stops.
  - The checkpoint (an option of the *writer*) remembers which files were read: run the
    lesson twice and the second run reads no old file.
  - A line that cannot be used is not dropped: ``from_json`` in PERMISSIVE mode never fails
    the query, and each bad line goes, with its file name and the reason ("missing user_id",
    "amount is not a number"...), to a quarantine folder, and is counted.
  - ``from_json`` alone converts some values silently (7 into a text field as "7", a number
    into a timestamp as epoch seconds): each field is parsed once more as a VARIANT, whose
    ``schema_of_variant`` says which JSON type the line gave it.

Run
  python streaming_tutorial/03_file_streaming.py                  # reads data/input_stream
  python streaming_tutorial/03_file_streaming.py                  # again: 0 old files re-read
  python streaming_tutorial/03_file_streaming.py --available-now  # process what is there, stop
  python streaming_tutorial/03_file_streaming.py --reset          # forget the checkpoint
  Files already there and no simulator running: it processes them and stops. No files: it
  starts the simulator for the run. To watch files arrive, start the simulator first in a
  second terminal; the lesson reads what it writes and stops when it stops (or after
  --duration seconds, 20 by default):
    python data_generators/simulate_file_data.py --count 10 --interval 3 --malformed-every 4
    python streaming_tutorial/03_file_streaming.py --duration 60

Practise
  python course.py exercises check 03.1   Parse and quarantine (build)

What you'll see
  (first run on the sample data of initial_setup.py)
  Reading a stream without .schema() fails:
    Schema must be specified when creating a streaming source DataFrame. If some files ...
  ...
  Batch 0 · transactions-0001.json: 10 rows parsed, 0 lines quarantined
  +--------------+---------+------+-----------+-------------------+
  |transaction_id|user_id  |amount|category   |timestamp          |
  +--------------+---------+------+-----------+-------------------+
  |TXN-000001    |USER-1016|551.04|Electronics|2025-01-15 10:30:01|
  |TXN-000002    |USER-1015|355.95|Home       |2025-01-15 10:30:03|
  ...
  Batch 2 · transactions-0003.json: 8 rows parsed, 2 lines quarantined
  ...
    quarantined, not a JSON object: {"transaction_id":"TXN-000025","user_id":"USER-1015",...
    quarantined, not a JSON object: {"transaction_id":"TXN-000030","user_id":"USER-1038","amount":3
  ...
  Already read by earlier runs (the checkpoint's list): 0 file(s)
  Read in this run: 3 file(s): transactions-0001.json, transactions-0002.json, ...
  Old files read again: 0
  Rows parsed: 28; lines quarantined: 2 (with their reason, in output/03_file_streaming/quarantine)
  And on the second run:
  Already read by earlier runs (the checkpoint's list): 3 file(s)
  Read in this run: 0 file(s)
  Old files read again: 0
"""

from pathlib import Path

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType, VariantType

from common import paths
from common.schemas import TRANSACTION_SCHEMA
from infra import checkpoints, cli, simulators
from infra.runner import (
    banner,
    checkpoint_root,
    foreach_batch,
    lesson_session,
    run_lesson,
    run_queries,
    say,
)
from teaching import demos, narration

LESSON = "03_file_streaming"
MAX_FILES_PER_TRIGGER = 1  # one file per micro-batch, so each batch is easy to follow
TRIGGER_INTERVAL = "2 seconds"  # how often a watching query lists the folder
# The simulator the lesson starts when the folder is empty: a few files, every 4th line broken.
SIMULATOR = (
    "transactions",
    "simulate_file_data.py",
    ["--count", "3", "--interval", "3", "--malformed-every", "4"],
)

# This lesson writes out the parse and the quarantine reasons for TRANSACTION_SCHEMA.
# Later lessons reuse the same idea, driven by any schema, from common/parsing.py
# (parse_json, quarantine_reason): its verdicts are exactly the ones below
# (tests/lessons/test_03_parsing_agrees.py checks it, line by line).
REASON_COLUMN = "quarantine_reason"  # why a line cannot be used; null for a good transaction
CORRUPT_COLUMN = "_corrupt_record"  # from_json puts the text of a record that does not fit here
# Working columns of the parse, read by quarantine_reason() and then dropped.
JSON_COLUMN = "_json"  # the line without a byte-order mark
RECORD_COLUMN = "_record"  # the line parsed with the schema's types
AS_JSON_COLUMN = "_as_json"  # the line parsed with every field as a VARIANT: its JSON value
JSON_TYPES_COLUMN = "_json_types"  # the JSON type of each field's value: STRING, BIGINT...
KEYS_COLUMN = "_keys"  # the object's keys, in their order
BYTE_ORDER_MARK = "\ufeff"  # U+FEFF: some editors write it at the start of a UTF-8 file
# How deeply nested a line may be: Spark's JSON parser (Jackson) reads 1000 levels, and the
# check that a line holds one object wraps it in [ ], one level more.
MAX_JSON_DEPTH = 999
# from_json's schema: the transaction's fields, plus a column for the text of a line that does
# not fit. (The fields' metadata, the amount's range, is checked below, not by from_json.)
RECORD_SCHEMA = StructType(
    [StructField(field.name, field.dataType) for field in TRANSACTION_SCHEMA.fields]
    + [StructField(CORRUPT_COLUMN, StringType())]
)
# Every field once more, as a VARIANT: null when the field is absent, a VARIANT null for JSON
# null, else the value with the JSON type it was given (schema_of_variant names it: STRING,
# BIGINT, DECIMAL(5,2), DOUBLE, BOOLEAN, OBJECT<...>, ARRAY<...>). from_json alone converts
# silently: any value into a text field (7 as "7"), a number into a timestamp (epoch seconds).
AS_JSON_SCHEMA = StructType(
    [StructField(field.name, VariantType()) for field in TRANSACTION_SCHEMA.fields]
)
JSON_STRING = "^STRING$"  # the JSON type of a text field's value, and of a date and time's
JSON_NUMBER = "^(BIGINT|DECIMAL|DOUBLE)"  # a JSON number, whole or not
# PERMISSIVE never fails the query: a line that does not fit the schema comes back with nulls
# where it does not fit, and its text in CORRUPT_COLUMN.
JSON_OPTIONS = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT_COLUMN}


def read_transactions(spark, folder: Path) -> DataFrame:
    """Every line of every file in ``folder`` as text (``value``), with its file's name
    (``source_file``)."""
    # Text first, parsed next: a line that does not fit the schema is kept, never lost.
    # No checkpointLocation here: it is an option of writeStream (start_transactions). On a
    # reader Spark silently ignores it, and a restarted query would read every file again.
    folder.mkdir(parents=True, exist_ok=True)  # a stream may start before its first file
    return (
        spark.readStream.format("text")
        .option("maxFilesPerTrigger", MAX_FILES_PER_TRIGGER)
        .load(paths.uri(folder))
        # _metadata is the hidden per-file column of file sources: which file each line came from.
        .withColumn("source_file", F.col("_metadata.file_name"))
    )


def parse_transactions(lines: DataFrame) -> DataFrame:
    """The transaction's fields, parsed from each line, and why the line cannot be used (its
    ``quarantine_reason``, null when it can)."""
    # A byte-order mark at the start of a line is not content. The file source skips one at
    # the start of a file; a line that reaches the stream another way (Kafka) may keep it.
    without_bom = F.regexp_replace(F.col("value"), f"^{BYTE_ORDER_MARK}", "")
    parsed = (
        lines.withColumn(JSON_COLUMN, without_bom)
        # The line with the schema's types: a value that does not fit becomes null.
        .withColumn(RECORD_COLUMN, F.from_json(F.col(JSON_COLUMN), RECORD_SCHEMA, JSON_OPTIONS))
        # The same line with every field as its JSON value, and that value's JSON type.
        .withColumn(AS_JSON_COLUMN, F.from_json(F.col(JSON_COLUMN), AS_JSON_SCHEMA, JSON_OPTIONS))
        .withColumn(JSON_TYPES_COLUMN, json_types())
        # The keys as the line gives them: a key given twice is listed twice.
        .withColumn(KEYS_COLUMN, F.json_object_keys(F.col(JSON_COLUMN)))
    )
    fields = [
        F.col(f"{RECORD_COLUMN}.{name}").alias(name) for name in TRANSACTION_SCHEMA.fieldNames()
    ]
    return parsed.select(*lines.columns, *fields, quarantine_reason().alias(REASON_COLUMN))


def quarantine_reason() -> Column:
    """Why a parsed line is not a usable transaction, or null when it is. The first reason wins.

    The line first (empty, not UTF-8, not one JSON object, a field given twice), then each
    field of TRANSACTION_SCHEMA in its order: a required field (nullable=False) that is
    missing, a value of another JSON type than the field's or one Spark cannot read, an amount
    that is not finite or below the schema's minimum.
    Needs the columns parse_transactions adds; the texts are shown to learners.
    """
    line = F.col("value")
    amount = F.col(f"{RECORD_COLUMN}.amount")
    return (
        F.when(line.isNull() | (F.trim(line) == ""), "empty line")
        # Spark keeps a line's bytes as they are: bad UTF-8 would reach the rows as U+FFFD.
        .when(~F.is_valid_utf8(line), "not valid UTF-8")
        .when(~holds_one_json_object().eqNullSafe(True), why_not_one_json_object())
        # {"amount": 5, "amount": -5}: from_json would keep one of them, without a word.
        .when(repeated_field().isNotNull(), F.concat(repeated_field(), F.lit(" appears twice")))
        # Absent, JSON null or blank is missing. A value given must have the field's JSON type.
        .when(absent("transaction_id"), "missing transaction_id")
        .when(not_json("transaction_id", JSON_STRING), "transaction_id is not a string")
        .when(absent("user_id"), "missing user_id")
        .when(not_json("user_id", JSON_STRING), "user_id is not a string")
        .when(absent("amount"), "missing amount")
        # 1e400 parses as Infinity, "NaN" as NaN: numbers no real amount can be.
        .when(
            F.isnan(amount) | F.abs(amount).eqNullSafe(F.lit(float("inf"))),
            "amount is not a finite number",
        )
        .when(not_json("amount", JSON_NUMBER) | unreadable("amount"), "amount is not a number")
        # The schema's metadata states the range: money is never negative ({"min": 0}).
        .when(amount < 0, "amount below 0")
        # category is optional: absent or null will do, but a value given must be text.
        .when(not_json("category", JSON_STRING), "category is not a string")
        .when(absent("timestamp"), "missing timestamp")
        # A date and time is text Spark can read ("2025-01-15T10:30:01Z"), never a number.
        .when(
            not_json("timestamp", JSON_STRING) | unreadable("timestamp"),
            "timestamp is not a date and time",
        )
        # Spark marked the record corrupt and no check above said why: still not usable.
        .when(F.col(f"{RECORD_COLUMN}.{CORRUPT_COLUMN}").isNotNull(), "a field has the wrong type")
    )


def holds_one_json_object() -> Column:
    """True when the line is exactly one JSON object (null when Spark cannot tell)."""
    json_text = F.col(JSON_COLUMN)
    # It starts with {, and [ + line + ] is an array of exactly one value. A cut-off line,
    # plain text or a list fails; so does a second record or any text after the first,
    # which from_json would silently drop.
    as_array = F.concat(F.lit("["), json_text, F.lit("]"))
    return json_text.rlike(r"^\s*\{") & (F.json_array_length(as_array) == 1)


def why_not_one_json_object() -> Column:
    """The reason for a line that is not one JSON object."""
    line = F.col("value")
    # Spark's JSON parser refuses a line nested deeper than MAX_JSON_DEPTH. Such a line holds
    # more than that many brackets; a cut-off or non-JSON line almost never does.
    brackets = F.length(line) - F.length(F.translate(line, "[{", ""))
    return (
        F.when(brackets > MAX_JSON_DEPTH, f"nested more than {MAX_JSON_DEPTH} levels deep")
        # json_object_keys reads the first JSON value only: an object there, then more text.
        .when(F.json_object_keys(F.col(JSON_COLUMN)).isNotNull(), "text after the JSON object")
        .otherwise("not a JSON object")
    )


def json_types() -> Column:
    """Each field's JSON type as the line gives it: STRING, BIGINT, DECIMAL(5,2), DOUBLE, BOOLEAN,
    OBJECT<...>, ARRAY<...>, VOID for null; null when the field is absent."""
    # schema_of_variant names the JSON type of a VARIANT value. Computed once per line here,
    # read by several checks below.
    given = F.col(AS_JSON_COLUMN)
    return F.struct(
        *[
            F.schema_of_variant(given.getField(name)).alias(name)
            for name in TRANSACTION_SCHEMA.fieldNames()
        ]
    )


def repeated_field() -> Column:
    """The first field of the schema (in its order) given twice in the line, or null."""
    keys = F.col(KEYS_COLUMN)
    # array_remove takes out every copy of a key: more than one gone, it was there twice.
    twice = [
        F.when(F.size(keys) - F.size(F.array_remove(keys, name)) > 1, F.lit(name))
        for name in TRANSACTION_SCHEMA.fieldNames()
    ]
    return F.coalesce(*twice)


def absent(field: str) -> Column:
    """The field is not in the line, is JSON null, or is blank text."""
    json_type = F.col(f"{JSON_TYPES_COLUMN}.{field}")
    text = F.try_variant_get(F.col(f"{AS_JSON_COLUMN}.{field}"), "$", "string")
    blank = (json_type == "STRING") & (F.trim(text) == "")
    return json_type.isNull() | (json_type == "VOID") | blank


def not_json(field: str, json_type_pattern: str) -> Column:
    """The field is given a value of another JSON type than the pattern names."""
    json_type = F.col(f"{JSON_TYPES_COLUMN}.{field}")
    return ~absent(field) & ~json_type.rlike(json_type_pattern)


def unreadable(field: str) -> Column:
    """The field is given, but from_json could not read it as the schema's type ("yesterday" as
    a timestamp, 1e400 as a decimal)."""
    return ~absent(field) & F.col(f"{RECORD_COLUMN}.{field}").isNull()


def build_good_transactions(parsed: DataFrame) -> DataFrame:
    """The lines that are good transactions, as the schema's columns."""
    return parsed.where(F.col(REASON_COLUMN).isNull()).select(*TRANSACTION_SCHEMA.fieldNames())


def build_quarantined_lines(parsed: DataFrame) -> DataFrame:
    """The lines that cannot be used, kept whole: their file, the reason and the raw text."""
    return parsed.where(F.col(REASON_COLUMN).isNotNull()).select(
        "source_file",
        F.col(REASON_COLUMN).alias("reason"),
        F.col("value").alias("raw_line"),
    )


def write_batch(batch: DataFrame, batch_id: int, quarantine: Path, tally: dict) -> None:
    """One micro-batch: its good rows to the console, its bad lines (with their reason) to the
    quarantine."""
    # foreachBatch hands over each micro-batch as a plain DataFrame: one read of the files
    # feeds both outputs. persist() keeps it in memory for the uses below.
    batch.persist()
    try:
        per_file = (
            batch.groupBy("source_file")
            .agg(F.count(F.lit(1)).alias("lines"), F.count(REASON_COLUMN).alias("bad"))
            .orderBy("source_file")
            .collect()
        )
        # The split: good rows go on, bad lines go to the quarantine with their reason.
        good = build_good_transactions(batch)
        bad = build_quarantined_lines(batch)
        bad_rows = bad.collect()
        if bad_rows:
            write_quarantine(bad, quarantine, batch_id)
        # An empty file is a micro-batch too, with no lines.
        counts = [
            f"{f.source_file}: {f.lines - f.bad} rows parsed, {f.bad} lines quarantined"
            for f in per_file
        ]
        print(f"\nBatch {batch_id} · {', '.join(counts) or 'a file with no lines'}")
        if sum(f.lines - f.bad for f in per_file):
            good.orderBy("transaction_id").show(truncate=False)
        for row in bad_rows:
            print(f"  quarantined, {row.reason}: {narration.first_line(row.raw_line)}")
        tally["files"] += [f.source_file for f in per_file]
        tally["parsed"] += sum(f.lines - f.bad for f in per_file)
        tally["quarantined"] += len(bad_rows)
    finally:
        batch.unpersist()


def write_quarantine(bad: DataFrame, quarantine: Path, batch_id: int) -> None:
    """A batch's bad lines, each with its file and reason, as JSON in quarantine/batch_id=N/."""
    # One folder per batch id, overwritten if the batch runs again after a crash: each bad
    # line once.
    bad.coalesce(1).write.mode("overwrite").json(paths.uri(quarantine / f"batch_id={batch_id}"))


def start_transactions(
    transactions: DataFrame, checkpoint: Path, trigger: dict, quarantine: Path, tally: dict
):
    """Start the query; its checkpoint is where it records every file it has read."""
    # foreachBatch calls write_batch with each micro-batch (foreach_batch only makes a stop
    # in the middle of a batch end quietly).
    handler = foreach_batch(lambda batch, batch_id: write_batch(batch, batch_id, quarantine, tally))
    # checkpointLocation is an option of the *writer*. Set on readStream, Spark silently
    # ignores it, and every run would read every file again.
    return (
        transactions.writeStream.foreachBatch(handler)
        .option("checkpointLocation", paths.uri(checkpoint))
        .trigger(**trigger)
        .queryName("transactions_from_files")
        .start()
    )


def main(argv: list[str] | None = None) -> None:
    args = cli.lesson_parser(__doc__, available_now=True).parse_args(argv)
    folder = paths.TRANSACTIONS_DIR
    quarantine = paths.output_for(LESSON, "quarantine")
    with lesson_session(LESSON, args) as spark:
        checkpoint = checkpoint_root(LESSON, args) / "transactions"
        banner("1. A folder of JSON files, read with a fixed schema")
        # Source -> parse: each line as text, then its fields and its quarantine reason.
        lines = read_transactions(spark, folder)  # (creates the folder if missing)
        transactions = parse_transactions(lines)
        demos.show_refusal(
            lambda: spark.readStream.json(paths.uri(folder)), "Reading a stream without .schema()"
        )
        say("""A stream starts before its data exists: the folder may still be empty, and
            every file must be read the same way as the first. So a file stream takes its
            schema up front instead of guessing it. This lesson reads each line as text and
            parses it against TRANSACTION_SCHEMA: a line that does not fit is kept, with the
            reason, instead of stopping the query or vanishing.""")
        say(f"""maxFilesPerTrigger={MAX_FILES_PER_TRIGGER}: each micro-batch reads at most that
            many new files. The checkpoint ({paths.display(checkpoint)}) records every file
            read, so a restarted query skips them.""")

        files_before = checkpoints.source_files(checkpoint, committed_only=True)
        tally = {"files": [], "parsed": 0, "quarantined": 0}
        with simulators.file_input_for_lesson(*SIMULATOR, folder, args) as files:
            action = "Watching" if files.watching else "Reading"
            banner(f"2. {action} {paths.display(folder)}, a file per micro-batch")
            query = start_transactions(
                transactions, checkpoint, files.trigger(TRIGGER_INTERVAL), quarantine, tally
            )
            run_queries([query], args, until=files.done)

        banner("3. What this run did")
        read_now = sorted(checkpoints.source_files(checkpoint, committed_only=True) - files_before)
        print(f"Already read by earlier runs (the checkpoint's list): {len(files_before)} file(s)")
        listed = f": {', '.join(read_now)}" if read_now else ""
        print(f"Read in this run: {len(read_now)} file(s){listed}")
        print(f"Old files read again: {len(set(tally['files']) & files_before)}")
        print(
            f"Rows parsed: {tally['parsed']}; lines quarantined: {tally['quarantined']} "
            f"(with their reason, in {paths.display(quarantine)})"
        )
        say("""Run the lesson again: the checkpoint lists every file already read, so the
            next run reads only files that arrived since (add some with the simulator).
            --reset deletes the checkpoint and the quarantine, and the next run reads
            everything again.""")


if __name__ == "__main__":
    run_lesson(main)
