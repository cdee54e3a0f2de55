"""Exercise 18.1 · Sales per category, declared — a reference solution."""


def gold_category_sales_sql() -> str:
    """The pipeline's definition of gold_category_sales: one CREATE MATERIALIZED VIEW."""
    return """
-- Recomputed from the whole of silver_events at every run: the answer for every event so far.
CREATE MATERIALIZED VIEW gold_category_sales
COMMENT 'The funnel and the sales of each product category'
AS SELECT
     category,
     -- One pass over every event of a category: no WHERE, so a category without a purchase
     -- keeps its row.
     count_if(event_type = 'view') AS views,
     count_if(event_type = 'cart') AS carts,
     count_if(event_type = 'purchase') AS purchases,
     -- Only the purchases' quantities and amounts; no purchase at all adds up to 0, not null.
     coalesce(sum(CASE WHEN event_type = 'purchase' THEN quantity END), 0) AS units,
     round(coalesce(sum(CASE WHEN event_type = 'purchase' THEN price * quantity END), 0), 2)
       AS revenue
   -- silver_events holds the good events only: a quarantined line never reaches it.
   FROM silver_events
   GROUP BY category
"""
