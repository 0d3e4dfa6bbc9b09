"""The CNPJ registry behind a small interface: what the Receita's public record says of a
company (legal name, trade name, registration status, opening date, main activity).

``FakeRegistry`` (the default) answers from a table in the settings, so development, the
demo and the tests run without a network; any other valid CNPJ is an active company whose
names it does not know. ``HttpRegistry`` reads a public registry over HTTPS at
``ONBOARDING_CNPJ_REGISTRY_URL`` (``<url>/<14 digits>`` answering JSON with the usual field
names: ``razao_social``, ``nome_fantasia``, ``descricao_situacao_cadastral``,
``data_inicio_atividade``, ``cnae_fiscal_descricao``). Choose with
``ONBOARDING_CNPJ_REGISTRY`` (a dotted path).
"""

import json
import re
import unicodedata
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from typing import Protocol

from django.utils.module_loading import import_string

from processes import conf
from processes.onboarding.findings import finding

ACTIVE = "ATIVA"
# What a FakeRegistry table entry may say; "found": false makes a CNPJ the registry lacks.
FAKE_FIELDS = ("legal_name", "trade_name", "status", "opened_on", "main_activity")
REGISTRY_CHECK, LEGAL_NAME_CHECK = "CNPJ registry", "legal name"
# The legal forms a company name may end with; they do not tell two companies apart.
LEGAL_FORMS = {"ltda", "limitada", "me", "epp", "eireli", "sa", "mei", "ss", "slu", "cia"}


@dataclass
class RegistryRecord:
    """The registry's answer; ``found`` False when it has no such CNPJ, ``error`` when it
    could not answer (the case then says the CNPJ was not checked)."""

    cnpj: str
    found: bool
    legal_name: str = ""
    trade_name: str = ""
    status: str = ""
    opened_on: str = ""
    main_activity: str = ""
    error: str = ""

    def as_summary(self) -> dict:
        return asdict(self)


class CnpjRegistry(Protocol):
    def lookup(self, cnpj_digits: str) -> RegistryRecord: ...


class FakeRegistry:
    """``ONBOARDING_FAKE_REGISTRY``: {digits: {"legal_name", "trade_name", "status",
    "opened_on", "main_activity", "found", "error"}} ("error": the registry could not be
    asked); what an entry leaves out is an active company's
    (status ATIVA, names unknown), and so is every CNPJ not in the table."""

    def lookup(self, cnpj_digits: str) -> RegistryRecord:
        known = (conf.setting("ONBOARDING_FAKE_REGISTRY", {}) or {}).get(cnpj_digits) or {}
        if known.get("found") is False or known.get("error"):
            return RegistryRecord(
                cnpj=cnpj_digits, found=False, error=str(known.get("error") or "")
            )
        return RegistryRecord(
            cnpj=cnpj_digits,
            found=True,
            **{
                "status": ACTIVE,
                **{key: str(value) for key, value in known.items() if key in FAKE_FIELDS},
            },
        )


class HttpRegistry:
    timeout = 10

    def lookup(self, cnpj_digits: str) -> RegistryRecord:
        base = str(conf.setting("ONBOARDING_CNPJ_REGISTRY_URL", "")).rstrip("/")
        if not base.startswith("https://"):
            return RegistryRecord(
                cnpj=cnpj_digits,
                found=False,
                error="ONBOARDING_CNPJ_REGISTRY_URL is not an https URL",
            )
        request = urllib.request.Request(
            f"{base}/{cnpj_digits}", headers={"Accept": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 (https only)
                body = json.loads(response.read(256 * 1024))
            if not isinstance(body, dict):
                raise ValueError("the answer is not a JSON object")
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return RegistryRecord(cnpj=cnpj_digits, found=False)
            return RegistryRecord(
                cnpj=cnpj_digits, found=False, error=f"the registry answered {exc.code}"
            )
        except (OSError, ValueError) as exc:
            return RegistryRecord(
                cnpj=cnpj_digits, found=False, error=f"the registry could not be read: {exc}"
            )
        return RegistryRecord(
            cnpj=cnpj_digits,
            found=True,
            legal_name=str(body.get("razao_social") or ""),
            trade_name=str(body.get("nome_fantasia") or ""),
            status=str(body.get("descricao_situacao_cadastral") or "").upper(),
            opened_on=str(body.get("data_inicio_atividade") or ""),
            main_activity=str(body.get("cnae_fiscal_descricao") or ""),
        )


def registry() -> CnpjRegistry:
    return import_string(
        conf.setting("ONBOARDING_CNPJ_REGISTRY", "processes.onboarding.registry.FakeRegistry")
    )()


def risk_reasons(record: dict | None) -> list[dict]:
    """What a reviewer must weigh from the registry's answer (findings): each makes the case high
    risk."""
    if not record:
        return []
    if record.get("error"):
        return [finding("risk", "registry_error", error=record["error"])]
    if not record.get("found"):
        return [finding("risk", "registry_not_found")]
    if record.get("status") != ACTIVE:
        return [
            finding("risk", "registry_inactive", status=record.get("status") or "?", active=ACTIVE)
        ]
    return []


def case_findings(record: dict | None) -> list[dict]:
    """The registry's answer as a finding on the case: status, names, opening, activity."""
    if not record:
        return []
    if record.get("error") or not record.get("found"):
        return [{**reason, "check": REGISTRY_CHECK} for reason in risk_reasons(record)]
    names, status = " / ".join(registry_names(record)), record.get("status") or "?"
    found = [
        finding(REGISTRY_CHECK, "registry_record", status=status, names=names)
        if names
        else finding(REGISTRY_CHECK, "registry_record_unnamed", status=status)
    ]
    if record.get("opened_on"):
        found.append(finding(REGISTRY_CHECK, "registry_opened", opened_on=record["opened_on"]))
    if record.get("main_activity"):
        found.append(finding(REGISTRY_CHECK, "registry_activity", activity=record["main_activity"]))
    return found


def legal_name_key(name: str) -> str:
    """A company name reduced to what identifies it: accents, case, punctuation and the legal
    form (LTDA, ME, EIRELI, S.A. ...) dropped, so "Floricultura Jardim" matches
    "FLORICULTURA JARDIM LTDA" and "Floricultura Jardim Ltda." alike."""
    plain = unicodedata.normalize("NFKD", name or "").encode("ascii", "ignore").decode().casefold()
    words = re.sub(r"[^a-z0-9]+", " ", plain.replace("s/a", "sa").replace("s.a.", "sa")).split()
    while words and words[-1] in LEGAL_FORMS:
        words.pop()
    return " ".join(words)


def registry_names(record: dict | None) -> list[str]:
    return [
        name
        for name in ((record or {}).get("legal_name"), (record or {}).get("trade_name"))
        if name
    ]


def legal_name_risk(given: str, record: dict | None) -> list[dict]:
    """The legal name the customer gave against the registry's legal and trade names: a
    mismatch makes the case high risk."""
    names = registry_names(record)
    if not given or not names or legal_name_key(given) in {legal_name_key(name) for name in names}:
        return []
    return [finding("risk", "legal_name_mismatch", given=given, registry=names[0])]


def legal_name_notes(given: str, record: dict | None) -> list[dict]:
    """What the case says of the legal name when the registry does not give one: the name the
    customer gave (unconfirmed), or that it is not known yet. Shown, not weighed."""
    if registry_names(record):
        return []
    if given:
        return [finding(LEGAL_NAME_CHECK, "legal_name_unconfirmed", given=given)]
    return [finding(LEGAL_NAME_CHECK, "legal_name_missing")]
