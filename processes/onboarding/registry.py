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
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from typing import Protocol

from django.utils.module_loading import import_string

from processes import conf

ACTIVE = "ATIVA"
# What a FakeRegistry table entry may say; "found": false makes a CNPJ the registry lacks.
FAKE_FIELDS = ("legal_name", "trade_name", "status", "opened_on", "main_activity")


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
    "opened_on", "main_activity", "found"}}; what an entry leaves out is an active company's
    (status ATIVA, names unknown), and so is every CNPJ not in the table."""

    def lookup(self, cnpj_digits: str) -> RegistryRecord:
        known = (conf.setting("ONBOARDING_FAKE_REGISTRY", {}) or {}).get(cnpj_digits) or {}
        if known.get("found") is False:
            return RegistryRecord(cnpj=cnpj_digits, found=False)
        return RegistryRecord(cnpj=cnpj_digits, found=True, **{"status": ACTIVE, **{
            key: str(value) for key, value in known.items() if key in FAKE_FIELDS}})


class HttpRegistry:
    timeout = 10

    def lookup(self, cnpj_digits: str) -> RegistryRecord:
        base = str(conf.setting("ONBOARDING_CNPJ_REGISTRY_URL", "")).rstrip("/")
        if not base.startswith("https://"):
            return RegistryRecord(cnpj=cnpj_digits, found=False, error="ONBOARDING_CNPJ_REGISTRY_URL is not an https URL")
        request = urllib.request.Request(f"{base}/{cnpj_digits}", headers={"Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 (https only)
                body = json.loads(response.read(256 * 1024))
            if not isinstance(body, dict):
                raise ValueError("the answer is not a JSON object")
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return RegistryRecord(cnpj=cnpj_digits, found=False)
            return RegistryRecord(cnpj=cnpj_digits, found=False, error=f"the registry answered {exc.code}")
        except (OSError, ValueError) as exc:
            return RegistryRecord(cnpj=cnpj_digits, found=False, error=f"the registry could not be read: {exc}")
        return RegistryRecord(
            cnpj=cnpj_digits, found=True, legal_name=str(body.get("razao_social") or ""),
            trade_name=str(body.get("nome_fantasia") or ""),
            status=str(body.get("descricao_situacao_cadastral") or "").upper(),
            opened_on=str(body.get("data_inicio_atividade") or ""),
            main_activity=str(body.get("cnae_fiscal_descricao") or ""))


def registry() -> CnpjRegistry:
    return import_string(conf.setting("ONBOARDING_CNPJ_REGISTRY", "processes.onboarding.registry.FakeRegistry"))()


def risk_reasons(record: dict | None) -> list[str]:
    """What a reviewer must weigh from the registry's answer: each makes the case high risk."""
    if not record:
        return []
    if record.get("error"):
        return [f"the CNPJ registry could not be asked ({record['error']})"]
    if not record.get("found"):
        return ["the CNPJ registry has no such CNPJ"]
    if record.get("status") != ACTIVE:
        return [f"the CNPJ registry lists the company as {record.get('status') or 'of unknown status'}, not {ACTIVE}"]
    return []


def case_findings(record: dict | None) -> list[dict]:
    """The registry's answer as a finding on the case: status, names, opening, activity."""
    if not record:
        return []
    if record.get("error") or not record.get("found"):
        return [{"check": "CNPJ registry", "result": "; ".join(risk_reasons(record))}]
    names = " / ".join(name for name in (record.get("legal_name"), record.get("trade_name")) if name)
    parts = [record.get("status") or "?", names or "names not given",
             f"since {record['opened_on']}" if record.get("opened_on") else "",
             record.get("main_activity") or ""]
    return [{"check": "CNPJ registry", "result": " — ".join(part for part in parts if part)}]
