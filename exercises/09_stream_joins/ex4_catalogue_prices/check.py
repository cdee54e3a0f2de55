"""Check of 09.4: the learner's stream-static join, with the catalogue changed between batches.

The run writes the scenario's catalogue as a Delta table, gives the learner's enrich_events the
events' stream and that table read as a static DataFrame, and feeds the events one micro-batch
at a time (processAllAvailable); before the batches named in ``edits`` it overwrites the table,
as a catalogue job would. Each batch must join with the table as it is when the batch runs.
"""

from dataclasses import dataclass, field
from pathlib import Path

from common import paths
from common.schemas import ECOMMERCE_EVENT_SCHEMA
from infra.files import json_lines, write_atomically
from practice.observe import Batch, Observation, plain, sort_rows, watermark_shown
from practice.scenarios import shop_event
from practice.spec import Exercise, Mistake, Scenario
from teaching.microbatch import finish_run, start_collecting, stream_batches

CATALOGUE_SCHEMA = "product_id STRING, product_name STRING, category STRING, price DOUBLE"


@dataclass
class CatalogueScenario(Scenario):
    """A scenario of events, with the catalogue the query starts with and its later versions."""

    catalogue: list = field(default_factory=list)  # (product_id, name, category, price) rows
    edits: dict = field(default_factory=dict)  # {batch number: the catalogue from that batch on}


def event(event_id, product, paid, quantity=1, kind="purchase", user="U1") -> dict:
    """A shop event whose own product_name ("Product <id>") is not the catalogue's."""
    return shop_event(
        event_id, user, kind, "10:30:00", product=product, price=paid, quantity=quantity
    )


def write_catalogue(spark, rows: list, table: Path) -> None:
    """The catalogue as a new version of the Delta table (overwrite: one commit)."""
    (
        spark.createDataFrame(rows, CATALOGUE_SCHEMA)
        .write.format("delta")
        .mode("overwrite")
        .save(paths.uri(table))
    )


def run(spark, exercise, module, scenario, workdir: Path) -> Observation:
    """The events through the learner's join, a batch at a time; the catalogue edited between."""
    from practice.checking import NotStarted

    if workdir.exists():
        paths.remove_tree(workdir, allow_outside=True)
    table = workdir / "catalogue"
    write_catalogue(spark, scenario.catalogue, table)
    products = spark.read.format("delta").load(paths.uri(table))
    folder = workdir / "input" / "events"
    folder.mkdir(parents=True)
    events = stream_batches(spark, folder, ECOMMERCE_EVENT_SCHEMA)
    try:
        enriched = module.enrich_events(events, products)
    except NotImplementedError as error:
        raise NotStarted() from error
    query, collected = start_collecting(enriched, workdir / "checkpoint")
    try:
        for number, records in enumerate(scenario.batches):
            if number in scenario.edits:
                write_catalogue(spark, scenario.edits[number], table)
            if scenario.reads_scrambled:
                records = list(reversed(records))
            write_atomically(folder, f"batch-{number:04d}.json", json_lines(records))
            # Waits until the batch that reads this file has run: one file, one micro-batch.
            query.processAllAvailable()
    finally:
        query.stop()
    if query.exception() is not None:
        raise query.exception()
    finished = finish_run(query, collected)
    batches = [
        Batch(
            sort_rows([plain(tuple(row)) for row in batch.rows]), watermark_shown(batch.watermark)
        )
        for batch in finished.batches
    ]
    return Observation(list(enriched.columns), batches)


def column(observation, name: str) -> list:
    """Every value of column ``name``, in every batch."""
    if name not in observation.columns:
        return []
    index = observation.columns.index(name)
    return [row[index] for batch in observation.batches for row in batch.rows]


def loses_unknown_products(mine, wanted) -> bool:
    """Fewer rows than expected, none with a null list_price: the unmatched events are gone."""
    unmatched = [price for price in column(wanted, "list_price") if price is None]
    return (
        bool(unmatched)
        and len(column(mine, "event_id")) < len(column(wanted, "event_id"))
        and None not in column(mine, "list_price")
    )


def nothing_matches(mine, wanted) -> bool:
    """Every event came out, but not one with a list price: the join key matches nothing."""
    prices = column(mine, "list_price")
    return (
        len(prices) == len(column(wanted, "list_price"))
        and any(price is not None for price in column(wanted, "list_price"))
        and all(price is None for price in prices)
    )


def stale_catalogue(mine, wanted) -> bool:
    """Batch 0 is right; a later batch differs: the catalogue as it was at the start."""
    if len(mine.batches) != len(wanted.batches) or len(mine.batches) < 2:
        return False
    if mine.columns != wanted.columns or mine.batches[0].rows != wanted.batches[0].rows:
        return False
    later = range(1, len(mine.batches))
    return any(mine.batches[number].rows != wanted.batches[number].rows for number in later)


def names_not_from_catalogue(mine, wanted) -> bool:
    """The list prices are right and the names are not: the names are the events' own."""
    return sorted(map(repr, column(mine, "list_price"))) == sorted(
        map(repr, column(wanted, "list_price"))
    ) and sorted(map(repr, column(mine, "product_name"))) != sorted(
        map(repr, column(wanted, "product_name"))
    )


EXERCISE = Exercise(
    title="Catalogue prices",
    kind="build",
    practises="a stream-static left outer join: every event kept, unknown products with nulls, "
    "columns both sides have told apart, and the static side read again in every micro-batch",
    function="enrich_events",
    schemas=ECOMMERCE_EVENT_SCHEMA,
    run=run,
    check_watermark=False,  # not an exercise about watermarks: a harmless one is no failure
    check_dropped=False,
    why=(
        "Each micro-batch joins its few events with the whole static side, which Spark plans and "
        "reads again for that batch: a Delta table is read at its latest version, so a price cut "
        "applies from the next batch on, with no restart. The stream goes on the left of a left "
        "outer join: an event whose product the catalogue does not know is kept, with nulls, "
        "instead of vanishing as in an inner join. Joined on the product_id alone, a catalogue "
        "with one row per id gives each event exactly one row. Both sides have a price and a "
        "product_name: taking each from its own side (renamed before the join, or through its "
        "DataFrame) leaves nothing ambiguous."
    ),
    hints=[
        "Which join keeps an event even when the catalogue has no row for its product? And both "
        "sides have a price and a product_name: after the join, how would Spark know which one "
        "you mean?",
        "lesson 09, build_enriched_events: it selects the catalogue's columns, joins the stream "
        "(on the left) with them on product_id, 'left', then computes a column from the "
        "catalogue's side. Here, also rename the two prices before the join.",
        "lesson 09, build_enriched_events selects from each side only the columns it needs "
        "before the join, so that only the join key has the same name on both sides; an alias "
        "in those selects gives each price its own name. The discount is then a column of the "
        "joined rows.",
    ],
    scenarios=[
        # Batch 0: P001 bought below its list price; P999 is not in the catalogue and E4 has no
        # product: both stay, with nulls. Before batch 1 the catalogue cuts P002's price and adds
        # P004: E5 and E6 must see that version (the first one would give 12.5 and nothing).
        CatalogueScenario(
            [
                [
                    event("E1", "P001", 1199.99),
                    event("E2", "P002", 12.5, quantity=2, kind="cart", user="U2"),
                    event("E3", "P999", 5.0, kind="view", user="U3"),
                    event("E4", None, 0.0, kind="view"),
                ],
                [
                    event("E5", "P002", 9.9, quantity=2, user="U2"),
                    event("E6", "P004", 20.0, user="U4"),
                    event("E7", "P003", 45.0, user="U3"),
                ],
            ],
            catalogue=[
                ("P001", "Laptop Pro 15", "Electronics", 1299.99),
                ("P002", "Coffee Mug", "Home", 12.5),
                ("P003", "Desk Lamp", "Home", 45.0),
            ],
            edits={
                1: [
                    ("P001", "Laptop Pro 15", "Electronics", 1299.99),
                    ("P002", "Coffee Mug", "Home", 9.9),
                    ("P003", "Desk Lamp", "Home", 45.0),
                    ("P004", "Yoga Mat", "Sports", 25.0),
                ]
            },
        ),
        # Other ids, read scrambled (no edit: each catalogue version costs the check a Delta
        # commit). k-10 differs from K-10 only in case: another id, unknown to the catalogue.
        CatalogueScenario(
            [
                [
                    event("X3", "B-7", 60.0, kind="cart", user="USER-2"),
                    event("X1", "K-10", 27.5, quantity=2, user="USER-1"),
                    event("X2", "k-10", 27.5, kind="view", user="USER-1"),
                    event("X4", "K-99", 3.0, user="USER-3"),
                ],
                [
                    event("X6", None, 1.0, kind="view", user="USER-3"),
                    event("X5", "K-11", 20.0, quantity=3, user="USER-2"),
                    event("X7", "K-10", 27.5, user="USER-4"),
                ],
            ],
            hidden=True,
            catalogue=[
                ("K-10", "Kettle", "Home", 30.0),
                ("K-11", "Toaster", "Home", 25.5),
                ("B-7", "Bike Helmet", "Sports", 60.0),
            ],
        ),
    ],
    mistakes=[
        Mistake(
            "ambiguous_price",
            "After the join there are two columns called price (and two product_name): the "
            "event's and the catalogue's, and Spark cannot tell which one you mean. Rename them "
            "before the join (the event's price as paid_price, the catalogue's as list_price), "
            "or select each through its own DataFrame.",
            error=r"AMBIGUOUS_REFERENCE|ambiguous",
        ),
        Mistake(
            "inner_join",
            "The events whose product the catalogue does not know (and those without a product) "
            "are missing: that is what an inner join does. Join with how='left_outer', the "
            "stream on the left: they come out with null catalogue columns.",
            when=loses_unknown_products,
        ),
        Mistake(
            "joined_on_every_shared_column",
            "Every event came out, but not one found its product. The join key is product_id "
            "alone: if the join also compares product_name, category or price, which both sides "
            "have but with other values (the event's are what the page showed), nothing "
            "matches.",
            when=nothing_matches,
        ),
        Mistake(
            "stale_catalogue",
            "Batch 0 is right, but from batch 1 on the rows show the catalogue as it was when "
            "the query started, not the version written before that batch. Something kept a "
            "copy taken then: the catalogue collected into Python (a dict, a map literal), or a "
            "DataFrame built from collected rows. Join with the products DataFrame itself: Spark "
            "reads a Delta table's latest version in every micro-batch.",
            when=stale_catalogue,
        ),
        Mistake(
            "name_from_the_event",
            "The list prices are right, but the product names are not the catalogue's (an "
            "unknown product even has one): they are the events' own product_name, what the "
            "shop's page showed. Take product_name from the catalogue's side of the join.",
            when=names_not_from_catalogue,
        ),
        Mistake(
            "static_side_on_the_left",
            "Spark refuses a left outer join with the static catalogue on the left and the "
            "stream on the right: to emit a catalogue row with nulls it would have to know that "
            "no later event can match it, and a stream never ends. Put the stream on the left: "
            "events.join(catalogue, ..., 'left_outer').",
            error=r"LeftOuter join with a streaming DataFrame/Dataset on the right and a static",
        ),
    ],
)
