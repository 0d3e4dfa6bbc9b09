"""A run's journal drawn as a timeline for its admin page: an SVG rendered on the server.

Steps are bars from their start to their end (an attempt still running, or a wait, to
now), waits and sleeps lighter, failed attempts counted on the bar; the
engine's own markers (patches, recorded values, attributes) are folded away. Numbers in
the SVG are written with a dot whatever the language: a localized "60,3" draws nothing.
"""

from dataclasses import dataclass
from datetime import datetime

from django.utils.formats import number_format
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from durable import clock
from durable.models import EntryKind, EntryStatus
from durable.surfaces.admin.display import label

FOLDED_KINDS = {
    EntryKind.PATCH,
    EntryKind.NOW,
    EntryKind.UUID,
    EntryKind.RANDOM,
    EntryKind.ATTRIBUTES,
}
WIDTH, LABEL, ROW, TOP = 900, 220, 20, 24
COLOURS = {
    EntryStatus.COMPLETED: "#198754",
    EntryStatus.FAILED: "#dc3545",
    EntryStatus.RETRYING: "#fd7e14",
    EntryStatus.STARTED: "#0d6efd",
    EntryStatus.WAITING: "#b8860b",
    EntryStatus.CANCELLED: "#495057",
}
WAIT_KINDS = {EntryKind.SIGNAL, EntryKind.SLEEP, EntryKind.DRAIN, EntryKind.CHILD}


@dataclass
class Bar:
    position: int
    label: str
    start: datetime
    end: datetime
    colour: str
    wait: bool
    note: str


def _number(value: float) -> str:
    return f"{value:.1f}"


def _bar(entry, now: datetime) -> Bar:
    start = entry.started_at or entry.created_at
    if entry.status in (EntryStatus.WAITING, EntryStatus.RETRYING, EntryStatus.STARTED):
        end = now  # still going: drawn to now (a wait's deadline may be days away)
    else:
        end = entry.updated_at or start
    note = _("%(kind)s %(name)s: %(status)s") % {
        "kind": label(EntryKind, entry.kind),
        "name": entry.name,
        "status": label(EntryStatus, entry.status),
    }
    if entry.attempt > 1:
        note = _("%(note)s, attempt %(attempt)d") % {"note": note, "attempt": entry.attempt}
    return Bar(
        entry.position,
        f"#{entry.position} {entry.name}",
        start,
        max(end, start),
        COLOURS.get(entry.status, "#6c757d"),
        entry.kind in WAIT_KINDS,
        note,
    )


def timeline_svg(run, journal) -> SafeString:
    """The SVG of ``journal`` (the run's entries, in order), or "" when it has none to draw."""
    now = clock.now()
    shown = [entry for entry in journal if entry.kind not in FOLDED_KINDS]
    folded = len(journal) - len(shown)
    if not shown:
        return SafeString("")
    bars = [_bar(entry, now) for entry in shown]
    begin = min([run.created_at, *(bar.start for bar in bars)])
    finish = max(bar.end for bar in bars)
    span = max((finish - begin).total_seconds(), 0.001)
    scale = (WIDTH - LABEL - 10) / span
    height = TOP + ROW * len(bars) + 24

    def x(moment: datetime) -> float:
        return LABEL + (moment - begin).total_seconds() * scale

    rows = format_html_join(
        "",
        (
            '<g class="durable-timeline-row"><title>{}</title>'
            '<text x="4" y="{}" font-size="11" translate="no">{}</text>'
            '<rect x="{}" y="{}" width="{}" height="{}" fill="{}" fill-opacity="{}" '
            'rx="2"></rect></g>'
        ),
        (
            (
                bar.note,
                _number(TOP + ROW * n + 13),
                bar.label[:34],
                _number(x(bar.start)),
                _number(TOP + ROW * n + 3),
                _number(max(x(bar.end) - x(bar.start), 2.0)),
                _number(ROW - 6),
                bar.colour,
                "0.45" if bar.wait else "1",
            )
            for n, bar in enumerate(bars)
        ),
    )
    # the caption is for people: its number is written as the reader's language writes it
    caption = _("%(seconds)s s since the run started") % {"seconds": number_format(span, 1)}
    if folded:
        caption = ngettext(
            "%(caption)s; %(count)d engine marker folded away",
            "%(caption)s; %(count)d engine markers folded away",
            folded,
        ) % {"caption": caption, "count": folded}
    return format_html(
        '<svg id="durable-timeline" xmlns="http://www.w3.org/2000/svg" role="img" width="100%" '
        'viewBox="0 0 {} {}" aria-label="{}">'
        '<text x="4" y="14" font-size="11" fill="#555">{}</text>{}'
        '<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#999"></line></svg>',
        WIDTH,
        height,
        _("timeline of run %(run)s") % {"run": run.id},
        caption,
        rows,
        LABEL,
        _number(height - 16),
        WIDTH - 10,
        _number(height - 16),
    )
