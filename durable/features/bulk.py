"""Bulk operations: retry, wake or cancel every run a filter keeps, counted first, then
acted on run by run through ``durable.services`` (one audit row per run, under the actor).

Never writes a run directly: each run is locked, checked and changed by its service in
its own short transaction, so a bulk of thousands holds no long locks and a run whose
status changed since the count is skipped, not forced.
"""

import hashlib
import time
import uuid
from datetime import datetime
from typing import NamedTuple

from django.core import signing
from django.core.cache import caches
from django.db.models import QuerySet

from durable import clock, conf, services
from durable.errors import DurableError, InvalidTransition, RunFinished, RunNotFound
from durable.models import WorkflowRun
from durable.selectors import RunFilter, runs_filtered

ACTIONS = ("retry", "wake", "cancel")
SAMPLE_SIZE = 10
TOKEN_SALT = "durable.features.bulk"


class BulkError(DurableError):
    """A bulk operation that cannot be previewed or done as asked; nothing was written."""


class BulkFilterMissing(BulkError):
    """No filter at all: "every run" is never what an operator means by a bulk repair."""


class BulkTooLarge(BulkError):
    """More runs than DURABLE_BULK_MAX_RUNS: narrow the filter (by version, by attribute)."""


class BulkTokenInvalid(BulkError):
    """A confirmation token that is forged, expired, or issued to someone else."""


class BulkOperation(NamedTuple):
    action: str
    run_filter: RunFilter
    reason: str = ""
    graceful: bool = False

    def describe(self) -> dict:
        described = {"action": self.action, "filter": self.run_filter.as_params()}
        if self.action == "cancel":
            described.update(reason=self.reason, graceful=self.graceful)
        return described


class BulkPreview(NamedTuple):
    operation: BulkOperation
    count: int  # runs the action applies to now
    matched: int  # runs the filter keeps, whatever their status
    sample: list[str]
    token: str
    as_of: datetime


class BulkResult(NamedTuple):
    operation: BulkOperation
    bulk_id: str
    acted: int
    skipped: int
    skipped_runs: list[tuple[str, str]]  # (run id, why), the first SAMPLE_SIZE * 2
    remaining: int = 0  # targets this pass did not reach (it ran out of time)
    resume_token: str = ""  # confirms the next pass, when ``remaining``


def bulk_targets(operation: BulkOperation, *, as_of: datetime) -> QuerySet:
    """The runs ``operation`` would act on: kept by its filter, created by ``as_of``, in a
    status the state machine lets the action start from.

    A graceful cancel leaves out runs already asked to cancel: asking again changes
    nothing and writes no audit row, so counting them would overstate what was done.
    """
    runs = runs_filtered(operation.run_filter).filter(
        created_at__lte=as_of, status__in=WorkflowRun.sources_of(operation.action)
    )
    if operation.action == "cancel" and operation.graceful:
        runs = runs.filter(cancel_request__isnull=True)
    return runs


def bulk_preview(operation: BulkOperation, *, actor: str) -> BulkPreview:
    """Count what ``operation`` would do and sign a token that confirms exactly that.

    Writes nothing. The token pins the operation and the moment of the count, so runs
    started after the operator saw the count are not swept up by the confirmation.
    """
    _check(operation)
    as_of = clock.now()
    targets = bulk_targets(operation, as_of=as_of)
    count = targets.count()
    _check_size(count)
    matched = runs_filtered(operation.run_filter).filter(created_at__lte=as_of).count()
    sample = list(targets.order_by("id").values_list("id", flat=True)[:SAMPLE_SIZE])
    token = _sign(operation, actor=actor, as_of=as_of)
    return BulkPreview(operation, count, matched, sample, token, as_of)


def bulk_confirm(token: str, *, actor: str, audit: dict | None = None) -> BulkResult:
    """Do what a preview counted (or go on where the last pass stopped), for the person it
    was shown to, within the token's lifetime."""
    try:
        signed = signing.loads(token, salt=TOKEN_SALT, max_age=conf.bulk_confirm_seconds())
    except signing.SignatureExpired:
        raise BulkTokenInvalid(
            f"the confirmation token has expired (valid {conf.bulk_confirm_seconds()} s): "
            "preview the operation again"
        ) from None
    except signing.BadSignature:
        raise BulkTokenInvalid("the confirmation token is not one this server issued") from None
    if signed.get("actor") != actor:
        raise BulkTokenInvalid(
            "the confirmation token was issued to another user: preview the operation yourself"
        )
    # Once: a double-clicked Confirm must not act twice (a wake would write every audit row
    # twice). Kept in the cache web processes share (Redis in production).
    if not caches["durable"].add(
        f"bulk-token:{hashlib.sha256(token.encode()).hexdigest()}",
        actor,
        timeout=conf.bulk_confirm_seconds(),
    ):
        raise BulkTokenInvalid(
            "this confirmation token was used already: preview the operation again to repeat it"
        )
    operation = BulkOperation(
        signed["action"],
        filter_from_params(signed["filter"]),
        reason=signed.get("reason", ""),
        graceful=signed.get("graceful", False),
    )
    return bulk_apply(
        operation,
        actor=actor,
        audit=audit,
        as_of=datetime.fromisoformat(signed["as_of"]),
        after=signed.get("after"),
        bulk_id=signed.get("bulk_id"),
    )


def bulk_apply(
    operation: BulkOperation,
    *,
    actor: str,
    audit: dict | None = None,
    as_of: datetime | None = None,
    after: str | None = None,
    bulk_id: str | None = None,
) -> BulkResult:
    """Act on every target of ``operation`` through its service, one run per transaction.

    Ids are read in batches in id order (keyset), so a run acted on is never met twice
    and a wake, which leaves the status as it was, still visits each run once. A run the
    service refuses (its status moved on since the count) is skipped and reported. A pass
    stops after DURABLE_BULK_PASS_SECONDS, under the web timeout, and returns a token that
    goes on after the last run it reached (``after``), under the same ``bulk_id``.
    """
    _check(operation)
    as_of = as_of or clock.now()
    targets = bulk_targets(operation, as_of=as_of)
    if after is None:
        _check_size(targets.count())
    bulk_id = bulk_id or uuid.uuid4().hex
    detail = {**(audit or {}), "bulk": {"id": bulk_id, **operation.describe()}}
    act = _service(operation)
    acted, skipped, skipped_runs, out_of_time = 0, 0, [], False
    stop_at = time.monotonic() + conf.bulk_pass_seconds()
    while not out_of_time:
        batch = targets.order_by("id")
        if after is not None:
            batch = batch.filter(id__gt=after)
        run_ids = list(batch.values_list("id", flat=True)[: conf.bulk_batch_size()])
        if not run_ids:
            break
        for run_id in run_ids:
            if (acted or skipped) and time.monotonic() >= stop_at:  # every pass makes progress
                out_of_time = True
                break
            try:
                act(run_id, actor=actor, audit=detail)
            except (InvalidTransition, RunFinished, RunNotFound) as refusal:
                skipped += 1
                if len(skipped_runs) < SAMPLE_SIZE * 2:
                    skipped_runs.append((run_id, str(refusal)))
            else:
                acted += 1
            after = run_id
    remaining = targets.filter(id__gt=after).count() if out_of_time else 0
    resume = (
        _sign(operation, actor=actor, as_of=as_of, after=after, bulk_id=bulk_id)
        if remaining
        else ""
    )
    return BulkResult(operation, bulk_id, acted, skipped, skipped_runs, remaining, resume)


def _sign(operation: BulkOperation, *, actor: str, as_of: datetime, **resume) -> str:
    return signing.dumps(
        {**operation.describe(), "actor": actor, "as_of": as_of.isoformat(), **resume},
        salt=TOKEN_SALT,
        compress=True,
    )


def filter_from_params(params: dict) -> RunFilter:
    """A RunFilter from ``RunFilter.as_params`` (a token's copy, already checked once)."""
    return RunFilter(
        status=params.get("status"),
        workflow=params.get("workflow"),
        version=params.get("version"),
        parent=params.get("parent"),
        attributes=tuple(
            (name[len("attr.") :], text)
            for name, text in params.items()
            if name.startswith("attr.")
        ),
    )


def _service(operation: BulkOperation):
    if operation.action == "retry":
        return services.run_retry
    if operation.action == "wake":
        return services.run_wake

    def cancel(run_id, *, actor, audit):
        return services.run_cancel(
            run_id, reason=operation.reason, graceful=operation.graceful, actor=actor, audit=audit
        )

    return cancel


def _check(operation: BulkOperation) -> None:
    if operation.action not in ACTIONS:
        raise BulkError(
            f"unknown bulk action {operation.action!r}: use one of {', '.join(ACTIONS)}"
        )
    if operation.run_filter.is_empty():
        raise BulkFilterMissing(
            "a bulk operation needs a filter (status, workflow, version or "
            "attr.<name>): it never acts on every run"
        )


def _check_size(count: int) -> None:
    if count > conf.bulk_max_runs():
        raise BulkTooLarge(
            f"{count} runs match; one bulk operation acts on at most "
            f"{conf.bulk_max_runs()} (DURABLE_BULK_MAX_RUNS): narrow the filter, e.g. "
            "by version or by a search attribute"
        )
