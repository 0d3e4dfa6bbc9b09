"""Fixtures for the approvals tests: reviewers, an outsider, and runs waiting on a case."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from approvals.models import ApprovalRequest
from approvals.services import compliance_group_ensure
from durable import services as durable_services
from durable.testing import drive
from tests.approvals import workflows  # noqa: F401  (registers the test workflows)

PASSWORD = "correct-horse-battery"


def make_user(username: str, *, reviewer: bool, groups: tuple[str, ...] = ()):
    """A user; a reviewer is in the compliance group, and in ``groups`` (routing: kyc, ...)."""
    user = get_user_model().objects.create_user(username=username, password=PASSWORD)
    if reviewer:
        user.groups.add(compliance_group_ensure())
    user.groups.add(*[Group.objects.get_or_create(name=name)[0] for name in groups])
    return user


@pytest.fixture
def ana(db):
    return make_user("ana", reviewer=True)


@pytest.fixture
def bruno(db):
    return make_user("bruno", reviewer=True)


@pytest.fixture
def outsider(db):
    return make_user("olga", reviewer=False)


def start_case(
    company: str = "acme", *, risk: str = "low", workflow: str = "approval_test"
) -> ApprovalRequest:
    """Start a run and drive it until it waits on its approval request; return the request."""
    args = (company, risk) if workflow in ("approval_test", "approval_routed_test") else (company,)
    run = durable_services.run_start(workflow, *args, id=f"{workflow}:{company}", actor="test")
    drive(run.id)
    return ApprovalRequest.objects.filter(run_id=run.id).order_by("-id").first()


@pytest.fixture
def case(db, clock):
    return start_case("acme")


@pytest.fixture
def high_risk_case(db, clock):
    return start_case("globex", risk="high")


def start_routed_case(company: str, *, risk: str = "low", groups=("kyc",)) -> ApprovalRequest:
    """A run waiting on a case routed to ``groups``."""
    run = durable_services.run_start(
        "approval_routed_test",
        company,
        risk,
        list(groups),
        id=f"approval_routed_test:{company}",
        actor="test",
    )
    drive(run.id)
    return ApprovalRequest.objects.get(run_id=run.id)


@pytest.fixture
def junior(db):
    return make_user("joana", reviewer=True, groups=("kyc",))


@pytest.fixture
def junior2(db):
    return make_user("jonas", reviewer=True, groups=("kyc",))


@pytest.fixture
def senior(db):
    return make_user("sara", reviewer=True, groups=("kyc-senior",))


@pytest.fixture
def supervisor(db):
    return make_user("sofia", reviewer=False, groups=("compliance-supervisor",))


@pytest.fixture
def senior_case(db, clock):
    return start_routed_case("globex", risk="high", groups=("kyc-senior",))


@pytest.fixture
def junior_case(db, clock):
    return start_routed_case("padaria", groups=("kyc", "kyc-senior"))
