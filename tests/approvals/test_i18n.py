"""Portuguese first: the reviewer templates translate every word, the catalog answers every
string they use, and each user reads the language they chose."""

import ast
import gettext
import html
import io
import re
import tokenize
import zoneinfo
from pathlib import Path

import pytest
from django.conf import settings
from django.template import engines
from django.template.base import TextNode
from django.test import override_settings
from django.urls import reverse
from django.utils import translation
from django.utils.translation.template import templatize

from approvals.models import ReviewerPreference
from tests.approvals.test_views import signed_in

TEMPLATES = sorted([*Path(settings.BASE_DIR, "templates").rglob("*.html")])
GETTEXT_CALLS = {
    "gettext": (None, 0),
    "ngettext": (None, 0),
    "pgettext": (0, 1),
    "npgettext": (0, 1),
}


def messages_used(template: Path) -> set[tuple[str | None, str]]:
    """(context, msgid) of every string the template asks the catalog for, read from the
    gettext calls makemessages itself extracts (django.utils.translation.template.templatize)."""
    source = templatize(template.read_text(), origin=str(template))
    tokens = [
        token
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type in (tokenize.NAME, tokenize.STRING, tokenize.OP)
    ]
    found = set()
    for at, token in enumerate(tokens):
        if (
            token.type == tokenize.NAME
            and token.string in GETTEXT_CALLS
            and tokens[at + 1].string == "("
        ):
            strings = [
                ast.literal_eval(arg.string)
                for arg in tokens[at + 2 : at + 8]
                if arg.type == tokenize.STRING
            ]
            context_at, msgid_at = GETTEXT_CALLS[token.string]
            found.add((strings[context_at] if context_at is not None else None, strings[msgid_at]))
    return found


def words_outside_translate(template: Path) -> list[str]:
    """Letters in a template's literal text (tags, comments and attribute values aside) that no
    {% translate %} or {% blocktranslate %} covers."""
    nodelist = engines["django"].engine.from_string(template.read_text()).nodelist
    text = " ".join(node.s for node in nodelist.get_nodes_by_type(TextNode))
    text = re.sub(r"<[^>]*>", " ", text)  # markup, attribute values included
    # Not words to translate: proper names and codes shown as they are.
    text = re.sub(r"\b(CNPJ|WhatsApp)\b", " ", html.unescape(text))
    return re.findall(r"[^\W\d_]{2,}", text)


@pytest.mark.parametrize(
    "template", TEMPLATES, ids=lambda path: str(path.relative_to(settings.BASE_DIR))
)
def test_a_reviewer_template_has_no_word_outside_a_translate_tag(template):
    assert words_outside_translate(template) == []


@pytest.mark.parametrize(
    "template", TEMPLATES, ids=lambda path: str(path.relative_to(settings.BASE_DIR))
)
def test_every_string_a_reviewer_template_uses_has_a_portuguese_translation(template):
    catalog = translation.trans_real.translation("pt-br")._catalog

    untranslated = [
        msgid
        for context, msgid in messages_used(template)
        if not catalog.get(f"{context}\x04{msgid}" if context else msgid)
        and not catalog.get((f"{context}\x04{msgid}" if context else msgid, 0))
    ]

    assert untranslated == []


def test_the_project_speaks_portuguese_unless_the_environment_says_otherwise():
    source = Path(settings.BASE_DIR, "config", "settings.py").read_text()

    assert 'LANGUAGE_CODE = os.environ.get("LANGUAGE_CODE", "pt-br")' in source
    assert (
        'REVIEWER_TIME_ZONE = os.environ.get("REVIEWER_TIME_ZONE", "America/Sao_Paulo")' in source
    )


@override_settings(LANGUAGE_CODE="pt-br")
def test_a_reviewer_who_chose_nothing_reads_the_queue_in_portuguese(ana, case):
    page = signed_in(ana).get(reverse("approval_queue"), HTTP_ACCEPT_LANGUAGE="en-US")

    assert page["Content-Language"] == "pt-br"
    assert "Casos abertos" in page.content.decode() and "Open cases" not in page.content.decode()


@override_settings(LANGUAGE_CODE="pt-br")
def test_a_reviewer_who_chose_english_keeps_it_on_another_device(ana, case):
    signed_in(ana).post(
        reverse("set_language"), {"language": "en", "next": reverse("approval_queue")}
    )

    page = signed_in(ana).get(reverse("approval_case", args=[case.pk])).content.decode()

    assert ReviewerPreference.objects.get(user=ana).language == "en"
    assert "Decision" in page and "Decisão" not in page


def test_the_language_switch_refuses_an_unknown_language_and_a_foreign_next(ana):
    client = signed_in(ana)

    unknown = client.post(reverse("set_language"), {"language": "xx"})
    foreign = client.post(
        reverse("set_language"), {"language": "pt-br", "next": "https://evil.example/"}
    )

    assert unknown.status_code == 400
    assert foreign.status_code == 302 and foreign["Location"] == reverse("approval_queue")


def test_case_times_read_in_the_reviewers_time_zone_in_the_locale_format(ana, case):
    ReviewerPreference.objects.create(user=ana, language="pt-br", updated_at=case.created_at)
    client = signed_in(ana)
    client.post(reverse("approval_claim", args=[case.pk]))
    case.refresh_from_db()

    page = client.get(reverse("approval_queue")).content.decode()

    local = case.due_at.astimezone(zoneinfo.ZoneInfo("America/Sao_Paulo"))
    assert f"{local:%d/%m/%Y %H:%M}" in page
    assert "Você assumiu o caso" in page


@pytest.mark.parametrize(
    "language, claimed, status",
    [("pt-br", "assumido", "Pendente → Assumido"), ("en", "claimed", "Pending → Claimed")],
)
def test_the_audit_trail_names_actions_and_statuses_in_the_readers_language(
    ana, case, language, claimed, status
):
    ReviewerPreference.objects.create(user=ana, language=language, updated_at=case.created_at)
    client = signed_in(ana)
    client.post(reverse("approval_claim", args=[case.pk]))

    page = client.get(reverse("approval_case", args=[case.pk])).content.decode()

    assert f"<td>{claimed} <span" in page
    assert status in page


def test_the_confirmation_after_an_approval_counts_the_approvals(ana, high_risk_case):
    client = signed_in(ana)

    page = client.post(
        reverse("approval_decide", args=[high_risk_case.pk]), {"outcome": "approve"}, follow=True
    )

    assert (
        f"You approved case #{high_risk_case.pk} (1 of 2). A second reviewer must approve it too."
        in (page.content.decode())
    )


def po_entries(path: Path) -> dict:
    """{msgid (with "context\\x04" before it, and (msgid, n) for plurals): msgstr} from a .po
    file."""
    entries = {}
    for block in path.read_text().split("\n\n"):
        fields: dict[str, str] = {}
        current = None
        for line in block.splitlines():
            if line.startswith("#"):
                continue
            match = re.match(r'^(msgctxt|msgid_plural|msgid|msgstr(?:\[\d+\])?) (".*")$', line)
            if match:
                current = match.group(1)
                fields[current] = ast.literal_eval(match.group(2))
            elif line.startswith('"') and current:
                fields[current] += ast.literal_eval(line)
        if not fields.get("msgid"):
            continue
        key = (
            f"{fields['msgctxt']}\x04{fields['msgid']}" if "msgctxt" in fields else fields["msgid"]
        )
        if "msgid_plural" in fields:
            entries.update({(key, n): fields[f"msgstr[{n}]"] for n in (0, 1)})
        else:
            entries[key] = fields["msgstr"]
    return entries


def test_the_committed_compiled_catalog_matches_the_po_file():
    locale = Path(settings.BASE_DIR, "locale", "pt_BR", "LC_MESSAGES")
    with open(locale / "django.mo", "rb") as compiled:
        catalog = gettext.GNUTranslations(compiled)._catalog

    assert {key: value for key, value in catalog.items() if key} == po_entries(
        locale / "django.po"
    ), "run scripts/messages --compile"


@override_settings(LANGUAGE_CODE="pt-br")
def test_the_admin_names_the_process_models_in_portuguese(admin_client, case):
    index = admin_client.get(reverse("admin:index")).content.decode()

    for label in (
        "Pedidos de aprovação",
        "Empresas",
        "Documentos",
        "Faturas",
        "Entregas de webhook",
    ):
        assert label in index


def test_money_and_process_names_read_in_portuguese(junior, settings):
    from approvals.models import ApprovalRequest
    from durable import services as durable_services
    from durable.testing import drive

    settings.LANGUAGE_CODE = "pt-br"
    run = durable_services.run_start(
        "limit_increase", "Padaria Boa Massa", 10_000, 30_000, id="li:money", actor="test"
    )
    drive(run.id)
    case = ApprovalRequest.objects.get(run_id=run.id)

    queue = signed_in(junior).get(reverse("approval_queue")).content.decode()
    page = signed_in(junior).get(reverse("approval_case", args=[case.pk])).content.decode()

    assert (
        "Aumentar o limite diário de PIX de Padaria Boa Massa de R$ 10.000,00 para R$ 30.000,00"
        in queue
    )
    assert "Aumento de limite PIX" in queue and ">limit_increase<" not in queue
    assert "Limite diário pedido" in page and "R$ 30.000,00" in page and "R$ 30,000" not in page


def test_the_audit_trail_names_the_system_and_the_customer_in_portuguese():
    from approvals.templatetags.approvals_tags import actor_label

    with translation.override("pt-br"):
        assert actor_label("system") == "o sistema"
        assert actor_label("system (re-check at opening)") == "o sistema (re-check at opening)"
        assert actor_label("whatsapp:5511988887777") == "o cliente (WhatsApp 5511988887777)"
        assert actor_label("ana") == "ana"
