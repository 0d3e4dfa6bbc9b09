"""Quantiles by nearest rank, as PostgreSQL's ``percentile_disc`` computes them: always one
of the values, so a p99 of whole seconds is a number of whole seconds someone waited."""

import math
from collections.abc import Iterable


def nearest_ranks(values: Iterable[float], *fractions: float) -> list[float | None]:
    """For each fraction, the smallest value with at least that fraction of them at or below
    it (the values sorted once for all); None for each when there are no values."""
    ordered = sorted(values)
    if not ordered:
        return [None] * len(fractions)
    return [ordered[max(math.ceil(fraction * len(ordered)) - 1, 0)] for fraction in fractions]
