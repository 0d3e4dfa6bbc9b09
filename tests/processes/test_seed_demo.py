"""The demo seeds companies, invoices and a batch at different stages, and can run twice."""
import pytest
from django.core.management import call_command

from durable.models import WorkflowRun
from processes.whatsapp.models import InboundMessage, OutboundMessage

pytestmark = pytest.mark.django_db


def stages() -> dict[str, str]:
    return dict(WorkflowRun.objects.values_list("id", "waiting_for"))


def test_seed_demo_leaves_runs_waiting_at_different_points_and_is_idempotent(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        call_command("seed_demo", stdout=open("/dev/null", "w"))
    first = stages()
    counts = (InboundMessage.objects.count(), OutboundMessage.objects.count())

    with django_capture_on_commit_callbacks(execute=True):
        call_command("seed_demo", stdout=open("/dev/null", "w"))

    assert stages() == first
    assert (InboundMessage.objects.count(), OutboundMessage.objects.count()) == counts
    assert sorted(w for w in first.values() if w) == [
        "signal:compliance_decision", "signal:documents_received", "signal:documents_received",
        "signal:paid", "sleep", "sleep"]
    assert InboundMessage.objects.filter(status="unsupported").count() == 1
