"""A known mistake: the late impression P0 comes out with nulls instead of being dropped."""

PREDICTION = [
    [("P1", "L1")],
    [],
    [("P3", "L3")],
    [("P2", None), ("P0", None)],
]
