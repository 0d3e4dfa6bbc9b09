"""Lists that stay fast with millions of rows: no count of the whole table on each page.

An operator reading the newest runs needs the page, not the exact number of runs behind
it. Unfiltered, the count is PostgreSQL's estimate (``pg_class.reltuples``, kept by
autovacuum) once the table is large; filtered, it is counted up to ``COUNT_CAP`` rows and
shown as "more than" beyond, so a filter that matches most of the table costs a bounded
scan (the newest ``COUNT_CAP`` matches are browsable: a narrower filter finds older ones).
Small tables, and SQLite unfiltered, count exactly, as Django does.
"""

from django.core.paginator import Paginator
from django.utils.functional import cached_property

from durable.sql import table_estimate

# Below this many rows (by the estimate) an exact count is cheap: counted, not estimated.
ESTIMATE_ABOVE = 100_000
# A filtered list counts at most this many of its rows.
COUNT_CAP = 10_000


class EstimatedCountPaginator(Paginator):
    """A paginator whose ``count`` is estimated (``estimated``) or capped (``capped``) at scale."""

    estimated = False
    capped = False

    @cached_property
    def count(self) -> int:
        queryset = self.object_list
        if not hasattr(queryset, "query"):
            return super().count
        if not queryset.query.where and not queryset.query.distinct:
            estimate = table_estimate(queryset)
            if estimate is not None and estimate > ESTIMATE_ABOVE:
                self.estimated = True
                return estimate
            return super().count
        counted = queryset.order_by()[: COUNT_CAP + 1].count()
        if counted > COUNT_CAP:
            self.capped = True
            return COUNT_CAP
        return counted
