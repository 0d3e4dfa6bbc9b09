"""Quantiles by nearest rank, as PostgreSQL's ``percentile_disc`` computes them: always one
of the values, so a p99 of whole seconds is a number of whole seconds someone waited."""

import math
from collections.abc import Iterable


def nearest_rank(values: Iterable[float], fraction: float) -> float | None:
    """The smallest value with at least ``fraction`` of them at or below it; None for none."""
    ordered = sorted(values)
    if not ordered:
        return None
    return ordered[max(math.ceil(fraction * len(ordered)) - 1, 0)]
