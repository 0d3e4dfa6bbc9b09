"""Named errors of the approvals app: views turn them into 4xx pages with the message intact."""


class ApprovalError(Exception):
    """Base class of every error the approvals services raise on purpose."""

    status_code = 409


class NotAllowed(ApprovalError):
    """The actor is not a compliance reviewer (or may not do this to this case)."""

    status_code = 403


class ApprovalNotFound(ApprovalError):
    status_code = 404


class AlreadyClosed(ApprovalError):
    """The case was decided, expired or cancelled: it is read-only. Says who closed it and when."""


class ClaimedByOther(ApprovalError):
    """Someone else holds the case; only they may decide or release it."""


class FourEyes(ApprovalError):
    """The second approval of a high-risk case must come from a different reviewer."""


class SegregationOfDuties(ApprovalError):
    """The reviewer acted on the case's process (retried, woke, signalled or cancelled its run,
    or changed its subject in the admin): someone who did not must approve it. Names the action."""

    status_code = 403


class ApprovalHeld(ApprovalError):
    """The process holds the case: it cannot be approved while a reason stands (approvals.holds)."""


class ReasonRequired(ApprovalError):
    status_code = 400


class InvalidOutcome(ApprovalError):
    status_code = 400


class RunEnded(ApprovalError):
    """The run this case answers has finished: no decision can reach it any more."""


class ClaimRevoked(ApprovalError):
    """A supervisor released or reassigned this reviewer's claim: their decision, made from a
    page opened before that, must not go through. Says who took it, when and why."""


class NotEligible(ApprovalError):
    """The case is routed to groups this person is not in (or they already voted on it)."""

    status_code = 403


class InvalidDate(ApprovalError):
    """A deadline or follow-up date that is missing, in the past, or earlier than the current
    one."""

    status_code = 400


class ReviewerRequired(ApprovalError):
    """A reassignment that names nobody (or nobody who exists)."""

    status_code = 400


class NotDecided(ApprovalError):
    """An evidence pack is made of a decision: an open, expired or cancelled case has none."""


class EvidenceNotReady(ApprovalError):
    """The case is decided but its run has not taken the decision yet (it does within moments):
    a pack now would hold a journal that does not lead to the decision."""
