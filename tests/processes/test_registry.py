"""The CNPJ registry clients: the fake one's table, and what a finding says of each answer."""
from processes.onboarding.registry import ACTIVE, FakeRegistry, HttpRegistry, case_findings, risk_reasons

DIGITS = "11222333000181"


def test_a_cnpj_the_fake_table_does_not_name_is_an_active_company_with_unknown_names(settings):
    settings.ONBOARDING_FAKE_REGISTRY = {}

    record = FakeRegistry().lookup(DIGITS)

    assert (record.found, record.status, record.legal_name) == (True, ACTIVE, "")
    assert risk_reasons(record.as_summary()) == []


def test_a_table_entry_fills_what_it_says_and_leaves_the_rest_active(settings):
    settings.ONBOARDING_FAKE_REGISTRY = {DIGITS: {"legal_name": "PADARIA BOA MASSA LTDA", "cnpj": "ignored",
                                                  "error": "ignored too"}}

    record = FakeRegistry().lookup(DIGITS)

    assert (record.cnpj, record.status, record.legal_name, record.error) == (DIGITS, ACTIVE, "PADARIA BOA MASSA LTDA", "")


def test_an_entry_found_false_is_a_cnpj_the_registry_lacks_and_a_high_risk_reason(settings):
    settings.ONBOARDING_FAKE_REGISTRY = {DIGITS: {"found": False}}

    record = FakeRegistry().lookup(DIGITS).as_summary()

    assert risk_reasons(record) == ["the CNPJ registry has no such CNPJ"]
    assert case_findings(record) == [{"check": "CNPJ registry", "result": "the CNPJ registry has no such CNPJ"}]


def test_the_http_registry_refuses_a_url_that_is_not_https_without_a_request(settings):
    settings.ONBOARDING_CNPJ_REGISTRY_URL = "http://registry.invalid"

    record = HttpRegistry().lookup(DIGITS)

    assert (record.found, record.error) == (False, "ONBOARDING_CNPJ_REGISTRY_URL is not an https URL")
