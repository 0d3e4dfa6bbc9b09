"""The CNPJ registry clients: the fake one's table, and what a finding says of each answer."""

import pytest

from processes.onboarding.registry import (
    ACTIVE,
    FakeRegistry,
    HttpRegistry,
    case_findings,
    legal_name_risk,
    risk_reasons,
)

DIGITS = "11222333000181"


def test_a_cnpj_the_fake_table_does_not_name_is_an_active_company_with_unknown_names(settings):
    settings.ONBOARDING_FAKE_REGISTRY = {}

    record = FakeRegistry().lookup(DIGITS)

    assert (record.found, record.status, record.legal_name) == (True, ACTIVE, "")
    assert risk_reasons(record.as_summary()) == []


def test_a_table_entry_fills_what_it_says_and_leaves_the_rest_active(settings):
    settings.ONBOARDING_FAKE_REGISTRY = {
        DIGITS: {"legal_name": "PADARIA BOA MASSA LTDA", "cnpj": "ignored", "colour": "ignored too"}
    }

    record = FakeRegistry().lookup(DIGITS)

    assert (record.cnpj, record.status, record.legal_name, record.error) == (
        DIGITS,
        ACTIVE,
        "PADARIA BOA MASSA LTDA",
        "",
    )


def test_an_entry_found_false_is_a_cnpj_the_registry_lacks_and_a_high_risk_reason(settings):
    settings.ONBOARDING_FAKE_REGISTRY = {DIGITS: {"found": False}}

    record = FakeRegistry().lookup(DIGITS).as_summary()

    assert [reason["result"] for reason in risk_reasons(record)] == [
        "the CNPJ registry has no such CNPJ"
    ]
    assert [(f["check"], f["result"]) for f in case_findings(record)] == [
        ("CNPJ registry", "the CNPJ registry has no such CNPJ")
    ]


def test_an_entry_with_an_error_is_a_registry_that_could_not_be_asked(settings):
    settings.ONBOARDING_FAKE_REGISTRY = {DIGITS: {"error": "timed out"}}

    record = FakeRegistry().lookup(DIGITS).as_summary()

    assert [reason["result"] for reason in risk_reasons(record)] == [
        "the CNPJ registry could not be asked (timed out)"
    ]


@pytest.mark.parametrize(
    "given, matches",
    [
        ("Floricultura Jardim", True),
        ("FLORICULTURA JARDIM LTDA.", True),
        ("floricultura jardim eireli", True),
        ("Flores & Cia", True),  # the trade name
        ("Joana Silva", False),
        ("Floricultura Jardim Botânico", False),
    ],
)
def test_a_legal_name_matches_the_registry_whatever_its_case_accents_and_legal_form(given, matches):
    record = {
        "found": True,
        "status": ACTIVE,
        "legal_name": "FLORICULTURA JARDIM LTDA",
        "trade_name": "Flores & Cia",
    }

    risk = legal_name_risk(given, record)

    assert (risk == []) is matches
    if not matches:
        assert risk[0]["result"] == (
            f"the legal name the customer gave ({given}) does not match the registry's "
            "(FLORICULTURA JARDIM LTDA)"
        )


def test_a_finding_is_shown_in_the_readers_language_with_its_recorded_params():
    from django.utils import translation

    from processes.onboarding.findings import finding_shown

    reason = risk_reasons({"found": True, "status": "BAIXADA"})[0]
    with translation.override("pt-br"):
        shown = finding_shown(reason)

    assert shown["check"] == "risco"
    assert shown["result"] == "o cadastro de CNPJ lista a empresa como BAIXADA, não ATIVA"
    assert (
        reason["result"] == "the CNPJ registry lists the company as BAIXADA, not ATIVA"
    )  # the record stays


def test_the_http_registry_refuses_a_url_that_is_not_https_without_a_request(settings):
    settings.ONBOARDING_CNPJ_REGISTRY_URL = "http://registry.invalid"

    record = HttpRegistry().lookup(DIGITS)

    assert (record.found, record.error) == (
        False,
        "ONBOARDING_CNPJ_REGISTRY_URL is not an https URL",
    )
