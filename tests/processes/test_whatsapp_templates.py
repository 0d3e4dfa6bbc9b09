"""Templates per purpose, and what Meta says of them and of the account: kept from their
signed webhooks, shown in the admin, exported on /metrics, failing `durable health`."""

import io
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.urls import reverse
from prometheus_client.parser import text_string_to_metric_families

from durable.runtime import sweep
from durable.testing import drive
from processes.onboarding.models import Company
from processes.webhooks.models import WebhookDelivery
from processes.whatsapp.checks import check_template_statuses, check_templates
from processes.whatsapp.models import AccountEvent, OutboundMessage, WhatsAppTemplate
from processes.whatsapp.services import message_send
from tests.processes.conftest import document, issued_invoice, whatsapp_webhook
from tests.processes.test_onboarding import open_case
from tests.processes.test_onboarding_decision_messages import decide_on_the_page

pytestmark = pytest.mark.django_db

MESSAGES = "/v21.0/PHONE-ID/messages"


def change(field: str, value: dict, *, time: int = 1767225600) -> dict:
    """A webhook as Meta sends template and account updates: one change, its field named."""
    return {
        "object": "whatsapp_business_account",
        "entry": [{"id": "WABA-ID", "time": time, "changes": [{"field": field, "value": value}]}],
    }


def template_status(
    event: str, *, name: str = "invoice_reminder", time: int = 1767225600, reason: str | None = None
) -> dict:
    return change(
        "message_template_status_update",
        {
            "event": event,
            "message_template_id": 12345678,
            "message_template_name": name,
            "message_template_language": "pt-BR",
            "reason": reason,
        },
        time=time,
    )


def template_quality(
    score: str, *, previous: str = "GREEN", name: str = "invoice_reminder"
) -> dict:
    return change(
        "message_template_quality_update",
        {
            "previous_quality_score": previous,
            "new_quality_score": score,
            "message_template_id": 12345678,
            "message_template_name": name,
            "message_template_language": "pt_BR",
        },
    )


def health() -> tuple[int, str]:
    out = io.StringIO()
    try:
        call_command("durable", "health", stdout=out)
    except SystemExit as exit:
        return exit.code, out.getvalue()
    return 0, out.getvalue()


@pytest.fixture
def sweep_just_ran():
    sweep.record_sweep(0.004, dispatched=0)


@pytest.fixture
def scrape(client, settings):
    settings.DURABLE_METRICS_TOKEN = "scrape-secret-for-tests"

    def get() -> dict:
        response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-secret-for-tests")
        assert response.status_code == 200
        return {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(response.content.decode())
            for sample in family.samples
        }

    return get


def test_a_rejected_template_reported_by_webhook_fails_the_health_check(
    signed_post, sweep_just_ran
):
    assert health()[0] == 0

    response = signed_post(template_status("REJECTED", reason="INCORRECT_CATEGORY"))

    assert response.status_code == 200
    template = WhatsAppTemplate.objects.get(name="invoice_reminder", language="pt_BR")
    assert (template.status, template.reason, template.template_id) == (
        "REJECTED",
        "INCORRECT_CATEGORY",
        "12345678",
    )
    code, out = health()
    assert code == 1
    assert (
        "FAIL whatsapp templates: invoice_reminder (pt_BR) is REJECTED: INCORRECT_CATEGORY" in out
    )


def test_the_delivery_says_what_was_applied(signed_post):
    signed_post(template_status("PAUSED"))

    assert (
        ", template invoice_reminder (pt_BR) status PAUSED,"
        in WebhookDelivery.objects.get().outcome
    )


def test_an_older_approval_arriving_late_does_not_undo_a_newer_rejection(signed_post):
    signed_post(template_status("REJECTED", time=1767225700))

    signed_post(template_status("APPROVED", time=1767225600))  # sent first, delivered last

    assert WhatsAppTemplate.objects.get().status == "REJECTED"
    assert (
        "older than the one kept, not applied"
        in WebhookDelivery.objects.order_by("pk").last().outcome
    )


def test_a_newer_approval_clears_the_health_failure(signed_post, sweep_just_ran):
    signed_post(template_status("REJECTED", time=1767225600, reason="INVALID_FORMAT"))

    signed_post(template_status("APPROVED", time=1767225700))

    assert (WhatsAppTemplate.objects.get().status, WhatsAppTemplate.objects.get().reason) == (
        "APPROVED",
        "",
    )
    assert health()[0] == 0


def test_a_template_the_processes_do_not_use_does_not_fail_health(signed_post, sweep_just_ran):
    signed_post(template_status("REJECTED", name="old_campaign"))

    assert health()[0] == 0


def test_quality_yellow_then_red_is_kept_and_exported(signed_post, scrape):
    signed_post(template_quality("YELLOW"))
    assert WhatsAppTemplate.objects.get().quality == "YELLOW"

    signed_post(template_quality("RED", previous="YELLOW"))

    qualities = {
        dict(labels)["quality"]: value
        for (name, labels), value in scrape().items()
        if name == "whatsapp_template_quality" and dict(labels)["name"] == "invoice_reminder"
    }
    assert qualities == {"RED": 1}


def test_template_status_is_exported_with_whether_it_is_configured(signed_post, scrape):
    signed_post(template_status("DISABLED"))

    metrics = scrape()

    assert (
        metrics[
            (
                "whatsapp_template_status",
                (
                    ("configured", "true"),
                    ("language", "pt_BR"),
                    ("name", "invoice_reminder"),
                    ("status", "DISABLED"),
                ),
            )
        ]
        == 1
    )
    assert metrics[("whatsapp_account_restricted", ())] == 0


def test_an_account_restriction_fails_health_and_is_exported(
    signed_post, scrape, sweep_just_ran, clock
):
    expires = int(clock.now().timestamp()) + 86400
    restriction = change(
        "account_update",
        {
            "event": "ACCOUNT_RESTRICTION",
            "restriction_info": [
                {"restriction_type": "RESTRICTED_BIZ_INITIATED_MESSAGING", "expiration": expires}
            ],
        },
    )

    signed_post(restriction)
    signed_post(restriction)  # Meta retries

    assert AccountEvent.objects.get().event == "ACCOUNT_RESTRICTION"
    code, out = health()
    assert code == 1
    assert "FAIL whatsapp account: restricted: RESTRICTED_BIZ_INITIATED_MESSAGING" in out
    assert scrape()[("whatsapp_account_restricted", ())] == 1


def test_an_expired_restriction_no_longer_fails_health(signed_post, sweep_just_ran, clock):
    signed_post(
        change(
            "account_update",
            {
                "event": "ACCOUNT_RESTRICTION",
                "restriction_info": [
                    {
                        "restriction_type": "RESTRICTED_BIZ_INITIATED_MESSAGING",
                        "expiration": int(clock.now().timestamp()) - 1,
                    }
                ],
            },
        )
    )

    assert health()[0] == 0


def test_a_disabled_account_fails_health_until_it_is_reinstated(signed_post, sweep_just_ran):
    signed_post(
        change(
            "account_update",
            {
                "event": "DISABLED_UPDATE",
                "ban_info": {"waba_ban_state": "DISABLE", "waba_ban_date": "April 17, 2025"},
            },
            time=1767225600,
        )
    )
    assert "FAIL whatsapp account: disabled: DISABLE" in health()[1]

    signed_post(
        change(
            "account_update",
            {
                "event": "DISABLED_UPDATE",
                "ban_info": {"waba_ban_state": "REINSTATE", "waba_ban_date": "April 18, 2025"},
            },
            time=1767225700,
        )
    )

    assert health()[0] == 0
    assert AccountEvent.objects.count() == 2


def test_a_template_change_without_a_name_is_quarantined_not_lost(signed_post):
    signed_post(change("message_template_status_update", {"event": "REJECTED"}))

    delivery = WebhookDelivery.objects.get()
    assert delivery.quarantined.get().reason == "message_template_name is missing or not text"
    assert not WhatsAppTemplate.objects.exists()


def test_outside_the_window_a_billing_reminder_goes_out_as_its_template_with_its_parameters(
    cloud_api, clock
):
    message_send(
        to_wa_id="5511955554444",
        body="Lembrete 1: a fatura F-1 de R$ 10,00 venceu em 01/01/2027.",
        idempotency_key="test:billing:1",
        purpose="billing_reminder",
        parameters={"number": 1, "invoice": "F-1", "amount": "R$ 10,00", "due_date": "01/01/2027"},
    )

    template = cloud_api.json_bodies("POST", MESSAGES)[0]["template"]
    assert (template["name"], template["language"]) == ("invoice_reminder", {"code": "pt_BR"})
    assert [p["text"] for p in template["components"][0]["parameters"]] == [
        "1",
        "F-1",
        "R$ 10,00",
        "01/01/2027",
    ]
    sent = OutboundMessage.objects.get()
    assert (sent.purpose, sent.template_name, sent.template_language) == (
        "billing_reminder",
        "invoice_reminder",
        "pt_BR",
    )
    assert sent.template_parameters[1] == {"name": "invoice", "text": "F-1"}


def test_named_parameters_go_out_with_their_names(cloud_api, clock, settings):
    settings.WHATSAPP_TEMPLATES = {
        **settings.WHATSAPP_TEMPLATES,
        "decision_more_documents": {
            "name": "more_documents",
            "language": "pt_BR",
            "parameters": ["request"],
            "parameter_format": "named",
        },
    }

    message_send(
        to_wa_id="5511955554445",
        body="Precisamos do contrato.",
        idempotency_key="more:1",
        purpose="decision_more_documents",
        parameters={"request": "o contrato social assinado"},
    )

    parameters = cloud_api.json_bodies("POST", MESSAGES)[0]["template"]["components"][0][
        "parameters"
    ]
    assert parameters == [
        {"type": "text", "text": "o contrato social assinado", "parameter_name": "request"}
    ]


def test_a_template_without_parameters_sends_no_components(cloud_api, clock):
    message_send(
        to_wa_id="5511955554446",
        body="Lembrete: ainda precisamos dos documentos.",
        idempotency_key="remind:1",
        purpose="document_reminder",
    )

    template = cloud_api.json_bodies("POST", MESSAGES)[0]["template"]
    assert template["name"] == "onboarding_document_reminder" and "components" not in template


def test_inside_the_window_a_message_with_a_purpose_is_free_text(cloud_api, signed_post, clock):
    signed_post(whatsapp_webhook(document("wamid.IN", "contrato")))
    company = Company.objects.get()

    sent = message_send(
        company=company, body="Lembrete", idempotency_key="remind:2", purpose="document_reminder"
    )

    body = cloud_api.json_bodies("POST", MESSAGES)[0]
    assert body["type"] == "text" and body["text"]["body"] == "Lembrete"
    assert (sent.template_name, sent.template_parameters) == ("", [])


def test_a_missing_parameter_leaves_the_message_queued(cloud_api, clock):
    with pytest.raises(ValueError, match="invoice_reminder.*invoice"):
        message_send(
            to_wa_id="5511955554447",
            body="Lembrete",
            idempotency_key="test:billing:2",
            purpose="billing_reminder",
            parameters={"number": 1, "amount": "R$ 1,00", "due_date": "x"},
        )

    assert OutboundMessage.objects.get().status == "queued"
    assert cloud_api.json_bodies("POST", MESSAGES) == []


def test_the_system_check_errors_on_a_purpose_without_a_template(settings):
    settings.WHATSAPP_TEMPLATES = {
        k: v for k, v in settings.WHATSAPP_TEMPLATES.items() if k != "decision_rejected"
    }

    errors = check_templates()

    assert [(e.id, e.msg) for e in errors] == [
        ("processes.E201", "WHATSAPP_TEMPLATES has no template for 'decision_rejected'")
    ]


def test_the_system_check_errors_on_a_template_without_a_language_or_with_an_unknown_parameter(
    settings,
):
    settings.WHATSAPP_TEMPLATES = {
        **settings.WHATSAPP_TEMPLATES,
        "greeting": {"name": "hello", "language": ""},
        "decision_rejected": {"name": "no", "language": "pt_BR", "parameters": ["account"]},
    }

    assert sorted(e.id for e in check_templates()) == ["processes.E202", "processes.E203"]


def test_the_configured_templates_pass_the_system_check():
    assert check_templates() == []


def test_the_system_check_warns_of_a_configured_template_meta_rejected(signed_post):
    signed_post(template_status("REJECTED", name="onboarding_greeting"))

    assert [w.id for w in check_template_statuses() if w.id == "processes.W202"] == [
        "processes.W202"
    ]


def test_the_system_check_warns_of_a_configured_template_meta_never_reported_approved(
    signed_post, settings
):
    settings.WHATSAPP_BACKEND = "cloud_api"
    signed_post(template_status("APPROVED", name="onboarding_greeting"))

    [unconfirmed] = [w.msg for w in check_template_statuses() if w.id == "processes.W203"]

    assert unconfirmed.startswith("WhatsApp templates with no approval recorded from Meta: ")
    assert "invoice_reminder (pt_BR)" in unconfirmed and "onboarding_greeting" not in unconfirmed


def test_a_deployment_that_sends_nothing_to_meta_is_not_warned_of_its_templates(settings):
    settings.WHATSAPP_BACKEND = "console"

    assert [w for w in check_template_statuses() if w.id == "processes.W203"] == []


def test_a_deployment_names_its_own_template_for_a_purpose(monkeypatch):
    monkeypatch.setenv("WHATSAPP_TEMPLATE_BILLING_REMINDER", "lembrete_fatura_v2")

    from config.settings import whatsapp_template

    assert (
        whatsapp_template("billing_reminder", "invoice_reminder", ["number"])["name"]
        == "lembrete_fatura_v2"
    )


def test_a_reviewers_message_with_line_breaks_goes_out_as_one_line_meta_accepts(cloud_api, clock):
    message_send(
        to_wa_id="5511955554448",
        body="Precisamos de mais documentos.",
        idempotency_key="more:2",
        purpose="decision_more_documents",
        parameters={"request": "Envie o contrato.\n\nE o comprovante\t de     endereço."},
    )

    parameters = cloud_api.json_bodies("POST", MESSAGES)[0]["template"]["components"][0][
        "parameters"
    ]
    assert parameters == [
        {"type": "text", "text": "Envie o contrato. E o comprovante de endereço."}
    ]


@pytest.mark.parametrize("model", [WhatsAppTemplate, AccountEvent])
def test_the_admin_lists_templates_and_account_events_for_staff(client, signed_post, model):
    signed_post(template_status("REJECTED"))
    signed_post(
        change(
            "account_update",
            {"event": "ACCOUNT_VIOLATION", "violation_info": {"violation_type": "ADULT"}},
        )
    )
    user = User.objects.create_user("operator", password="pw-unused-123", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename=f"view_{model._meta.model_name}"))
    client.force_login(user)

    response = client.get(reverse(f"admin:processes_{model._meta.model_name}_changelist"))

    assert response.status_code == 200
    assert (
        "invoice_reminder" if model is WhatsAppTemplate else "ACCOUNT_VIOLATION"
    ) in response.content.decode()


def test_the_billing_reminder_step_sends_the_invoice_reminder_template_with_the_invoices_figures(
    clock,
):
    invoice = issued_invoice(
        "NF-2001", clock.now() - timedelta(hours=1)
    )  # due: the first reminder goes

    sent = OutboundMessage.objects.get(idempotency_key=f"{invoice.run_id}:1")

    assert (sent.purpose, sent.template_name) == ("billing_reminder", "invoice_reminder")
    assert [p["text"] for p in sent.template_parameters][:3] == ["1", "NF-2001", "R$ 350,00"]


def test_a_rejection_a_day_after_the_customers_last_message_goes_out_as_the_rejection_template(
    client, ana, in_review, clock
):
    clock.advance(timedelta(hours=25))

    decide_on_the_page(
        client, ana, open_case(in_review.id), "reject", reason="signatures do not match"
    )
    drive(in_review.id)

    sent = OutboundMessage.objects.get(idempotency_key=f"{in_review.id}:rejected")
    assert (sent.purpose, sent.template_name, sent.template_parameters) == (
        "decision_rejected",
        "onboarding_rejected",
        [],
    )


def test_a_change_of_a_field_we_do_not_act_on_is_kept_as_an_account_event_not_dropped(signed_post):
    signed_post(
        change(
            "phone_number_quality_update",
            {
                "display_phone_number": "551130000000",
                "event": "FLAGGED",
                "current_limit": "TIER_1K",
            },
        )
    )

    event = AccountEvent.objects.get()
    assert event.event == "phone_number_quality_update:FLAGGED"
    assert (
        event.detail["field"] == "phone_number_quality_update"
        and event.detail["current_limit"] == "TIER_1K"
    )
    assert "account phone_number_quality_update:FLAGGED" in WebhookDelivery.objects.get().outcome


def test_a_change_of_an_unknown_field_with_no_event_is_kept_under_the_fields_name(signed_post):
    signed_post(
        change("user_preferences", {"contacts": [], "user_preferences": [{"value": "stop"}]})
    )

    assert AccountEvent.objects.get().event == "user_preferences"


def test_every_purpose_a_process_sends_for_has_a_label_for_the_admin():
    from processes.whatsapp.models import MessagePurpose
    from processes.whatsapp.templates import PURPOSES

    assert set(MessagePurpose.values) == set(PURPOSES)
