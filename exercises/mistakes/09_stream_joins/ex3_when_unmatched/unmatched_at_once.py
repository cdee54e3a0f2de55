"""A known mistake: P2 comes out with nulls in its own batch, as in a batch join."""

PREDICTION = [
    [("P1", "L1"), ("P2", None)],
    [],
    [("P3", "L3")],
    [],
]
