"""Who may open what: every URL of the reviewer UI, the API, the webhooks and the admin's
pages, asked by each role, answers as the tables in docs/approvals.md and docs/api.md say.

A cell reads ``ok`` (let in: the page, or the action's own answer to the empty or bad input
sent, such as 400 or 409), ``403`` (refused before anything is read), ``login`` (sent to
sign in: a redirect to a login page, or 401), or ``404`` / ``405`` where that is the answer
meant (no such name; a method the URL does not take), so a lost page is not read as "let in". Each
request runs in a savepoint rolled back after it, so one role's action never changes what the next
one is answered.
"""

import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from approvals import services
from approvals.management.commands.seed_approvals_demo import Command as SeedDemo
from durable import clock
from processes.onboarding.models import Document
from tests.approvals.conftest import PASSWORD, make_user, start_routed_case
from tests.approvals.test_browser import onboarding_waiting_for_compliance
from tests.processes.conftest import issued_invoice

pytestmark = pytest.mark.django_db

DOCS = Path(__file__).resolve().parent.parent / "docs"
ROLES = [
    "anonymous",
    "no role",
    "kyc",
    "kyc-senior",
    "supervisor",
    "auditor",
    "viewer",
    "operator",
    "superuser",
]


def documented(name: str) -> dict[tuple[str, str], dict[str, str]]:
    """The table between <!-- access-by-role --> markers: (method, URL) -> {role: answer}."""
    text = (DOCS / name).read_text(encoding="utf-8")
    block = text.split("<!-- access-by-role -->", 1)[1].split("<!-- /access-by-role -->", 1)[0]
    rows = [
        [cell.strip().strip("`") for cell in line.strip().strip("|").split("|")]
        for line in block.splitlines()
        if line.startswith("| ")
    ]
    header, *body = rows
    assert header[2:] == ROLES, header
    return {(row[0], row[1]): dict(zip(ROLES, row[2:], strict=True)) for row in body}


def people() -> dict[str, object]:
    """One user per role (anonymous: none)."""
    viewer = get_user_model().objects.create_user("vera", password=PASSWORD, is_staff=True)
    viewer.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label="durable", codename__in=["view_workflowrun", "view_schedule"]
        )
    )
    operator = get_user_model().objects.create_user("otto", password=PASSWORD, is_staff=True)
    operator.groups.add(SeedDemo()._operators())
    auditor = make_user("auditora", reviewer=False, groups=(services.AUDITOR_GROUP,))
    return {
        "anonymous": None,
        "no role": make_user("olga", reviewer=False),
        "kyc": make_user("ana", reviewer=True, groups=("kyc",)),
        "kyc-senior": make_user("carla", reviewer=True, groups=("kyc-senior",)),
        "supervisor": make_user("sofia", reviewer=False, groups=(services.SUPERVISOR_GROUP,)),
        "auditor": auditor,
        "viewer": viewer,
        "operator": operator,
        "superuser": get_user_model().objects.create_superuser("root", password=PASSWORD),
    }


def objects() -> dict[str, str]:
    """The ids the URL templates name: a kyc case with documents, a senior case, a run, an
    invoice."""
    kyc_case = onboarding_waiting_for_compliance()
    senior_case = start_routed_case("globex", risk="high", groups=("kyc-senior",))
    issued_invoice("NF-ROLE-1", clock.now() + timedelta(days=5))
    from durable.models import Schedule

    return {
        "<kyc case>": str(kyc_case.pk),
        "<senior case>": str(senior_case.pk),
        "<document>": str(
            Document.objects.filter(company__customer_id=kyc_case.subject_id).first().pk
        ),
        "<run>": kyc_case.run_id,
        "<invoice>": "NF-ROLE-1",
        "<schedule>": Schedule.objects.first().name,
        "<name>": "no-such-name",
    }


def answer(response) -> str:
    if response.status_code >= 500:
        return f"{response.status_code}!"
    location = response.get("Location", "")
    if response.status_code == 401 or (response.status_code == 302 and "login" in location):
        return "login"
    if response.status_code in (403, 404, 405):
        return str(response.status_code)
    return "ok"


def ask(user, method: str, path: str) -> str:
    client = Client()
    if user is not None:
        client.force_login(user)
    with transaction.atomic():
        response = client.generic(
            method, path, b"", content_type="application/x-www-form-urlencoded"
        )
        transaction.set_rollback(True)
    return answer(response)


@pytest.mark.parametrize("doc", ["approvals.md", "api.md"])
def test_every_role_is_answered_as_the_docs_table_says(doc):
    table = documented(doc)
    users, ids = people(), objects()

    def concrete(path: str) -> str:
        return re.sub(r"<[^>]+>", lambda match: ids[match.group(0)], path)

    actual = {
        row: {role: ask(users[role], row[0], concrete(row[1])) for role in ROLES} for row in table
    }

    assert actual == table


def _patterns(resolver: URLResolver, prefix: str = ""):
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            if str(entry.pattern) != "admin/":
                yield from _patterns(entry, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern)


def test_the_tables_name_every_url_outside_the_admin():
    """A new URL has to be put in a table: the test walks the URL configuration."""
    named = {
        re.sub(r"<[^>]+>", "<>", path)
        for doc in ("approvals.md", "api.md")
        for _, path in documented(doc)
    }
    routes = {"/" + re.sub(r"<[^>]+>", "<>", pattern) for pattern in _patterns(get_resolver())}
    routes -= {
        "/",
        "/favicon.ico",
        "/logout/",
    }  # a redirect, an icon, and signing out (asked of nobody)

    assert sorted(routes - named) == []
