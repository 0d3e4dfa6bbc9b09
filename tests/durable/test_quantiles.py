"""Nearest-rank quantiles: the dashboard's weekly p50 and p90 and /metrics' advance latency."""

from durable.quantiles import nearest_ranks


def test_the_nearest_rank_percentile_of_ten_values_is_the_ninth_for_p90():
    assert nearest_ranks([float(n) for n in range(1, 11)], 0.9) == [9.0]


def test_several_quantiles_come_in_the_order_asked_from_values_in_any_order():
    assert nearest_ranks([3.0, 1.0, 2.0, 4.0], 0.99, 0.5, 0.0) == [4.0, 2.0, 1.0]


def test_no_values_have_no_quantile():
    assert nearest_ranks([], 0.5, 0.99) == [None, None]
