"""A known mistake: the impressions' watermark (09:28) taken for the join's in batch 2."""

PREDICTION = [
    [("P1", "L1")],
    [],
    [("P3", "L3"), ("P2", None)],
    [],
]
