"""Template filters of the runs admin: times and ids an operator can read at a glance."""

import re

from django import template
from django.utils import formats, timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

register = template.Library()


@register.filter
def stamp(value):
    """``17/03/2027 21:49:26 -03``: in the active time zone (the project's pages activate the
    reviewers'), dated as the reader writes dates, like every other page; to the second and
    with its zone, so it can be matched with a log line. It may wrap between the date and the
    time, nowhere else."""
    if value is None:
        return None
    local = timezone.localtime(value) if timezone.is_aware(value) else value
    clock = f"{local:%H:%M:%S}" + (f"\N{NO-BREAK SPACE}{local:%Z}" if local.tzinfo else "")
    return format_html(
        '<time datetime="{}">{} {}</time>',
        value.isoformat(),
        formats.date_format(local, "SHORT_DATE_FORMAT"),
        clock,
    )


@register.filter
def breakable(text):
    """A run id, wait or workflow name (``onboarding:c-42``, ``signal:paid|voided``,
    ``reconcile_correction``) that may wrap after its colons, slashes, bars and underscores,
    so a narrow column stays legible."""
    if not text:
        return None
    return format_html_join(
        mark_safe("<wbr>"), "{}", ((part,) for part in re.split(r"(?<=[:/|_])", str(text)))
    )
