"""A known mistake: no micro-batch after the input, so P2 never comes out."""

PREDICTION = [
    [("P1", "L1")],
    [],
    [("P3", "L3")],
]
