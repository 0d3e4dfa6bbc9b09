"""The run lists' search box at scale: a run's id or any of its search attributes, by substring.

Django's admin searches each field with ``UPPER(field) LIKE UPPER('%word%')``, which no index
serves: with a million runs one search read them all (1.8 s, benchmarks/pages.py). On
PostgreSQL each word is matched instead against one expression, the id and the attributes'
JSON text, which a trigram index (migration 0023, ``pg_trgm``) serves:
``(id || ' ' || attributes::text) ILIKE '%word%'``. Its text must stay the index's, word for
word. Without ``pg_trgm`` (a role that may not create the extension) the same search is
correct, only unindexed. SQLite searches as Django's admin does.
"""

from django.db import connection
from django.db.models import BooleanField, Q
from django.db.models.expressions import RawSQL
from django.utils.text import smart_split, unescape_string_literal

# The indexed expression, with the table's name (migration 0023 builds it on both tables).
SEARCH_TEXT = "(({table}.id)::text || ' ' || ({table}.attributes)::text)"


def like_pattern(word: str) -> str:
    """``word`` as an ILIKE substring pattern: its own ``%``, ``_`` and ``\\`` match themselves."""
    escaped = word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def words(search_term: str) -> list[str]:
    """The words of a search, as Django's admin splits them: a quoted phrase is one word."""
    found = []
    for bit in smart_split(search_term):
        if bit.startswith(('"', "'")) and bit[0] == bit[-1]:
            bit = unescape_string_literal(bit)
        if bit:
            found.append(bit)
    return found


def matching(model, search_term: str) -> Q:
    """Runs of ``model`` whose id or attributes contain every word of ``search_term``."""
    table = connection.ops.quote_name(model._meta.db_table)
    text = SEARCH_TEXT.format(table=table)
    condition = Q()
    for word in words(search_term):
        condition &= Q(
            RawSQL(f"{text} ILIKE %s", [like_pattern(word)], output_field=BooleanField())
        )
    return condition


class RunSearch:
    """For a ModelAdmin of runs (live or archived): the indexed search on PostgreSQL."""

    def get_search_results(self, request, queryset, search_term):
        if connection.vendor != "postgresql" or not search_term.strip():
            return super().get_search_results(request, queryset, search_term)
        return queryset.filter(matching(queryset.model, search_term)), False
