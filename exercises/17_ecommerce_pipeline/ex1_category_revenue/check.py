from common.schemas import ECOMMERCE_EVENT_SCHEMA
from practice.scenarios import shop_event
from practice.spec import Exercise, Mistake, Scenario

REVENUE = 4  # the column of a row that holds the revenue


def purchase(event_id: str, time_of_day: str, category: str, price: float, units: int = 1):
    return shop_event(
        event_id, "U-1", "purchase", time_of_day, category=category, price=price, quantity=units
    )


def view(event_id: str, time_of_day: str, category: str, price: float) -> dict:
    return shop_event(event_id, "U-2", "view", time_of_day, category=category, price=price)


def never_a_watermark(mine, wanted) -> bool:
    return all(batch.watermark is None for batch in mine.batches) and any(
        batch.watermark for batch in wanted.batches
    )


def revenue_is_sum_of_prices(row) -> bool:
    """The row's revenue is its purchases' prices added up (purchases x avg_price, within the
    rounding of both to 2 places), as if each purchase were of one unit."""
    count, revenue, average = row[REVENUE - 1], row[REVENUE], row[REVENUE + 1]
    if not all(isinstance(value, (int, float)) for value in (count, revenue, average)):
        return False
    return abs(revenue - count * average) <= 0.005 * count + 0.0051


def revenue_ignores_quantity(mine, wanted) -> bool:
    """The same windows, counts and prices, another revenue, and in every row whose revenue
    differs the sum of the prices: the quantity left out (not another wrong formula, such as
    the average price x the units sold)."""

    def without_revenue(observation) -> list:
        return [
            [row[:REVENUE] + row[REVENUE + 1 :] for row in batch.rows]
            for batch in observation.batches
        ]

    if without_revenue(mine) != without_revenue(wanted):
        return False
    differing = [
        got
        for mine_batch, wanted_batch in zip(mine.batches, wanted.batches, strict=True)
        for got, want in zip(mine_batch.rows, wanted_batch.rows, strict=True)
        if got != want
    ]
    return bool(differing) and all(revenue_is_sum_of_prices(row) for row in differing)


def watermark_unused(mine, wanted) -> bool:
    """Every batch's watermark right, but no row ever dropped where Spark drops some: the
    aggregation does not use the watermark (it groups by no window on the watermarked
    column)."""
    if len(mine.batches) != len(wanted.batches):
        return False
    return (
        all(
            got.watermark == want.watermark
            for got, want in zip(mine.batches, wanted.batches, strict=True)
        )
        and any(batch.dropped for batch in wanted.batches)
        and not any(batch.dropped for batch in mine.batches)
    )


EXERCISE = Exercise(
    title="Revenue per category",
    kind="build",
    practises="a windowed aggregation with a watermark in update mode: late purchases dropped",
    function="build_category_revenue",
    schemas=ECOMMERCE_EVENT_SCHEMA,
    output_mode="update",
    mirrors="17_ecommerce_pipeline:build_category_revenue",
    why=(
        "The watermark before the aggregation does two jobs: it drops a purchase whose window "
        "the previous batch's watermark had already passed, and it removes a window from the "
        "state once the watermark reaches its end, so a pipeline that runs for months keeps "
        "only recent windows. Update mode sends each changed window's row at once, so a "
        "dashboard sees revenue as it grows instead of waiting for the window to close as "
        "append would. Filtering to purchases before the groupBy keeps views and carts out of "
        "the counts."
    ),
    hints=[
        "Which events count towards revenue? How late may a purchase arrive, and what lets Spark "
        "forget a window it has passed? Where in the query must that be said: before or after the "
        "grouping?",
        "lesson 17, `build_category_revenue`: the watermark first, then only the purchases, then "
        "a window of event time together with the category.",
        "lesson 07, `build_window_counts` and lesson 06, `to_window_rows` show the measures and "
        "the window's start and end as columns; here purchases (a count), revenue (price x "
        "quantity summed, rounded to 2 places) and avg_price (rounded to 2 places).",
    ],
    scenarios=[
        # Batch 0: two purchases (one of 2 units) in the 10:30-10:35 window, and a view that
        # counts for nothing. Batch 1 updates Electronics' 10:30 window and opens Home's 10:45
        # one; the watermark becomes 10:47 - 10 min = 10:37. Batch 2: E-6 (10:34:30) is older
        # than 10:37, but its window ended after the previous batch's watermark (10:23), so it
        # counts; 10:37 then closes the 10:30 windows. Batch 3: E-8 (10:32) is dropped, its window
        # ended before 10:37; E-9 (10:44) counts.
        Scenario(
            [
                [
                    purchase("E-1", "10:31:00", "Electronics", 100.0, units=2),
                    view("E-2", "10:32:00", "Electronics", 100.0),
                    purchase("E-3", "10:33:00", "Home", 20.0),
                ],
                [
                    purchase("E-4", "10:34:00", "Electronics", 50.0),
                    purchase("E-5", "10:47:00", "Home", 30.0, units=3),
                ],
                [
                    purchase("E-6", "10:34:30", "Home", 40.0),
                    purchase("E-7", "10:38:00", "Electronics", 25.5),
                ],
                [
                    purchase("E-8", "10:32:00", "Home", 15.0),
                    purchase("E-9", "10:44:00", "Electronics", 12.25, units=4),
                ],
            ]
        ),
        # Other categories and times. Batch 1: X-3 is 8 minutes older than X-2 and counts; the
        # watermark becomes 11:12. Batch 2: X-4 (11:09) counts (its window ended after 10:52,
        # the previous watermark). Batch 3: X-7 (11:03) is dropped (its window ended before
        # 11:12); X-8 (11:16) counts.
        Scenario(
            [
                [purchase("X-1", "11:02:00", "Toys", 9.99, units=3)],
                [
                    purchase("X-2", "11:22:00", "Sports", 60.0),
                    purchase("X-3", "11:14:00", "Toys", 5.013),
                ],
                [
                    purchase("X-4", "11:09:00", "Toys", 10.0),
                    purchase("X-5", "11:20:00", "Sports", 40.0, units=2),
                    view("X-6", "11:21:00", "Toys", 9.99),
                ],
                [
                    purchase("X-7", "11:03:00", "Toys", 7.0),
                    purchase("X-8", "11:16:00", "Sports", 3.5),
                ],
            ],
            hidden=True,
        ),
    ],
    mistakes=[
        Mistake(
            "no_watermark",
            "No watermark: update mode runs without one, but then no purchase is ever too late "
            "(the late one is counted) and no window ever leaves the state. Put "
            "withWatermark(EVENT_TIME, WATERMARK_DELAY) before the groupBy.",
            when=never_a_watermark,
        ),
        Mistake(
            "revenue_ignores_quantity",
            "The revenue ignores the quantity: a purchase of 2 units at 100.0 brings 200.0, "
            "not 100.0. Sum price x quantity: F.sum(F.col('price') * F.col('quantity')).",
            when=revenue_ignores_quantity,
        ),
        Mistake(
            "window_on_other_column",
            "The watermark moves as it should, yet no late purchase is dropped (a late one is "
            "counted): the aggregation does not use the watermark. Spark applies it to an "
            "aggregation only when that groups by the column withWatermark names, or a window "
            "on it; a column computed from it after withWatermark (to_timestamp(...), a cast) "
            "carries no watermark. Group by F.window(EVENT_TIME, ...).",
            when=watermark_unused,
        ),
    ],
)
