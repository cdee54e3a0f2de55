"""Another right answer: the aggregates' FILTER clause instead of count_if and CASE WHEN, the
view's columns named (with comments) in the CREATE statement, and a table comment."""


def gold_category_sales_sql() -> str:
    """The pipeline's definition of gold_category_sales: one CREATE MATERIALIZED VIEW."""
    return """
CREATE MATERIALIZED VIEW gold_category_sales (
  category STRING COMMENT 'the product category',
  views BIGINT,
  carts BIGINT,
  purchases BIGINT,
  units BIGINT COMMENT 'units purchased',
  revenue DOUBLE COMMENT 'price x quantity of the purchases, rounded to cents'
)
COMMENT 'Funnel and sales per category'
AS SELECT
  category,
  count(*) FILTER (WHERE event_type = 'view') AS views,
  count(*) FILTER (WHERE event_type = 'cart') AS carts,
  count(*) FILTER (WHERE event_type = 'purchase') AS purchases,
  coalesce(sum(quantity) FILTER (WHERE event_type = 'purchase'), 0) AS units,
  round(coalesce(sum(price * quantity) FILTER (WHERE event_type = 'purchase'), 0.0), 2)
    AS revenue
FROM silver_events
GROUP BY category
"""
