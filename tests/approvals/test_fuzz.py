"""Property-based: whatever a reviewer or a supervisor posts to a case's actions, and
whatever the queue's and the archive's filters are given, the answer is never a 5xx and
the case is not broken for anyone after it (its page, the queue and the dashboard open).

Each example runs in a savepoint rolled back after it, so examples do not pile up state;
the number of examples is bounded for CI (APPROVALS_FUZZ_EXAMPLES).
"""

import os

import pytest
from django.db import transaction
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from approvals import services
from tests.approvals.conftest import make_user, start_routed_case

pytestmark = pytest.mark.django_db

EXAMPLES = int(os.environ.get("APPROVALS_FUZZ_EXAMPLES", "60"))
FUZZ = settings(
    max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)

# Any text a browser can send (lone surrogates cannot be encoded, so no request carries them).
texts = st.text(st.characters(exclude_categories=["Cs"]), max_size=30) | st.sampled_from(
    ["\x00", "a\x1fb", "ç" * 400, "x" * 5000, " ", "-1", "%ff"]
)
dates = texts | st.sampled_from(
    [
        "9999-12-31T23:59",
        "0001-01-01T00:00",
        "2026-13-40T25:61",
        "2027-01-01T10:00",
        "1970-01-01T00:00",
        "2026-12-31 12:00:00+99:00",
        "now",
    ]
)
ACTIONS = {
    "claim": {},
    "release": {},
    "note": {"reason": texts},
    "decide": {
        "outcome": texts | st.sampled_from(["approve", "reject", "more_documents"]),
        "reason": texts,
        "reason_key": texts,
        "customer_message_key": texts,
        "customer_message": texts,
    },
    "follow-up": {"follow_up_at": dates, "reason": texts, "clear": st.sampled_from(["", "1"])},
    "reassign": {"to": texts | st.sampled_from(["ana", "sofia", "nobody"]), "reason": texts},
    "unclaim": {"reason": texts},
    "extend": {"due_at": dates, "reason": texts},
    "override-hold": {"reason": texts, "hold": texts},
}
FILTERS = [
    "q",
    "risk",
    "workflow",
    "status",
    "group",
    "assignee",
    "sort",
    "page",
    "overdue",
    "waiting",
]


@pytest.fixture
def people():
    ana = make_user("ana", reviewer=True, groups=("kyc",))
    sofia = make_user("sofia", reviewer=True, groups=("kyc", services.SUPERVISOR_GROUP))
    carla = make_user(
        "carla", reviewer=True, groups=("kyc-senior",)
    )  # the case is not routed to her
    case = start_routed_case("acme")
    clients = {}
    for user in (ana, sofia, carla):
        clients[user.username] = Client()
        clients[user.username].force_login(user)
    return clients, case


def still_opens(client, case) -> dict:
    return {
        path: client.get(path).status_code
        for path in (
            f"/approvals/{case.pk}/",
            "/approvals/",
            "/approvals/dashboard/",
            "/approvals/archive/",
        )
    }


def test_no_posted_input_breaks_a_case(people):
    """Those the case is routed to get the action's own answers; someone it is not routed to
    is refused whatever they post (403; or the input guard's 400 for a control character,
    which comes first) and sees nothing of the case."""
    clients, case = people
    answers = {}

    @given(
        who=st.sampled_from(["ana", "sofia", "carla"]),
        action=st.sampled_from(sorted(ACTIONS)),
        data=st.data(),
    )
    @FUZZ
    def fuzz(who, action, data):
        fields = {
            name: data.draw(strategy, label=name) for name, strategy in ACTIONS[action].items()
        }
        with transaction.atomic():
            response = clients[who].post(f"/approvals/{case.pk}/{action}/", fields)
            answer, shown = (
                response.status_code,
                case.title in response.content.decode(errors="replace"),
            )
            after = still_opens(clients["sofia"], case)
            transaction.set_rollback(True)
        answers.setdefault(who, set()).add(answer)

        assert answer < 500, (who, action, fields)
        assert who != "carla" or (answer in (400, 403) and not shown), (action, fields, answer)
        assert after == dict.fromkeys(after, 200), (who, action, fields, after)

    fuzz()
    assert 403 in answers["carla"] and answers["ana"] - {403} and answers["sofia"] - {403}


def test_no_filter_breaks_the_queue_or_the_archive(people):
    clients, _ = people

    @given(
        path=st.sampled_from(["/approvals/", "/approvals/archive/", "/approvals/mine/"]),
        key=st.sampled_from(FILTERS),
        value=texts,
        others=st.dictionaries(st.sampled_from(FILTERS), texts, max_size=1),
    )
    @settings(
        max_examples=2 * EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def fuzz(path, key, value, others):
        query = {**others, key: value}  # mostly one filter alone: another one's 400 would hide it
        assert clients["ana"].get(path, query).status_code < 500, (path, query)

    fuzz()
