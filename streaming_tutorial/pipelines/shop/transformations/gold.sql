-- Gold: the figures lesson 17 computes with build_category_revenue and build_funnel, as
-- materialized views over silver_events. A materialized view is recomputed from its source on
-- every run (open-source Spark has no incremental refresh), so it is always the whole answer.

-- Purchases, revenue and average price per category per 5-minute window of event time.
CREATE MATERIALIZED VIEW gold_category_revenue
COMMENT 'Revenue per category in 5-minute windows (lesson 17: build_category_revenue)'
AS SELECT
     -- window() gives each row a struct: its start and end become two plain columns.
     window.start AS window_start,
     window.end AS window_end,
     category,
     count(*) AS purchases,
     -- Rounded so the totals read like money (doubles add up to 0.30000000000000004).
     round(sum(price * quantity), 2) AS revenue,
     round(avg(price), 2) AS avg_price
   FROM silver_events
   -- Revenue comes from purchases only: views and carts add up to nothing here.
   WHERE event_type = 'purchase'
   -- Grouped by the 5-minute window of event time (when it happened, not when it arrived).
   GROUP BY window(`timestamp`, '5 minutes'), category;

-- The funnel: views, carts and purchases per 2-minute window of event time.
CREATE MATERIALIZED VIEW gold_funnel
COMMENT 'Views, carts and purchases in 2-minute windows (lesson 17: build_funnel)'
AS SELECT
     window.start AS window_start,
     window.end AS window_end,
     -- One pass over the events counts each step of the funnel.
     count_if(event_type = 'view') AS views,
     count_if(event_type = 'cart') AS carts,
     count_if(event_type = 'purchase') AS purchases
   FROM silver_events
   -- Every event counts, whatever its type: a 2-minute window of event time each.
   GROUP BY window(`timestamp`, '2 minutes');
