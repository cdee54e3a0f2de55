"""A known mistake: each changed window with the count of the batch's new readings only."""

PREDICTION = [
    [("10:30:00", "10:30:10", 2), ("10:30:10", "10:30:20", 1)],
    [("10:30:00", "10:30:10", 1), ("10:30:20", "10:30:30", 1)],
    [("10:30:00", "10:30:10", 1), ("10:30:20", "10:30:30", 1)],
]
