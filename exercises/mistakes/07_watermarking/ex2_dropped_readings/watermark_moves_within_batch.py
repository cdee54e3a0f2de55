"""A known mistake: the watermark moved by the readings of the same batch."""

PREDICTION = [[1], [4], [5], [7, 8], [10, 11]]
