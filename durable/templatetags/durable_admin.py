"""Template filters of the runs admin: times and ids an operator can read at a glance."""
import re

from django import template
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

register = template.Library()

STAMP_FORMAT = "%Y-%m-%d %H:%M:%S %Z"


@register.filter
def stamp(value):
    """``2026-12-01 07:37:50 UTC``: to the second and with its zone, so it can be matched
    with a log line; it may wrap between the date and the time, nowhere else."""
    if value is None:
        return None
    local = timezone.localtime(value) if timezone.is_aware(value) else value
    day, _, clock = local.strftime(STAMP_FORMAT).strip().partition(" ")
    return format_html('<time datetime="{}">{} {}</time>', value.isoformat(), day,
                       clock.replace(" ", "\N{NO-BREAK SPACE}"))


@register.filter
def breakable(text):
    """A run id, wait or workflow name (``onboarding:c-42``, ``signal:paid|voided``,
    ``reconcile_correction``) that may wrap after its colons, slashes, bars and underscores,
    so a narrow column stays legible."""
    if not text:
        return None
    return format_html_join(mark_safe("<wbr>"), "{}", ((part,) for part in re.split(r"(?<=[:/|_])", str(text))))
