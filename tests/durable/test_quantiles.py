"""Nearest-rank quantiles: the dashboard's weekly p50 and p90 and /metrics' advance latency."""

from durable.quantiles import nearest_rank


def test_the_nearest_rank_percentile_of_ten_values_is_the_ninth_for_p90():
    assert nearest_rank([float(n) for n in range(1, 11)], 0.9) == 9.0


def test_the_values_need_not_come_sorted_and_none_have_no_quantile():
    assert nearest_rank([3.0, 1.0, 2.0], 0.5) == 2.0
    assert nearest_rank([], 0.99) is None
