"""Another right answer: the events of silver_events first narrowed to the columns the view needs
in a CTE, each count a sum of 1s, units and revenue sums of if(...) with 0 for any other event
(never null, so no coalesce)."""


def gold_category_sales_sql() -> str:
    """The pipeline's definition of gold_category_sales: one CREATE MATERIALIZED VIEW."""
    return """
CREATE MATERIALIZED VIEW gold_category_sales AS
WITH events AS (
  SELECT category, event_type, quantity, price * quantity AS amount FROM silver_events
)
SELECT
  category,
  sum(if(event_type = 'view', 1, 0)) AS views,
  sum(if(event_type = 'cart', 1, 0)) AS carts,
  sum(if(event_type = 'purchase', 1, 0)) AS purchases,
  sum(if(event_type = 'purchase', quantity, 0)) AS units,
  round(sum(if(event_type = 'purchase', amount, 0.0)), 2) AS revenue
FROM events
GROUP BY category
"""
