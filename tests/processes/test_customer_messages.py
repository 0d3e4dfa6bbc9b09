"""docs/processes.md lists what customers read, as sent; the list and the code agree both ways
(every message a process test sends is checked against it in tests/processes/conftest.py)."""

import re
from decimal import Decimal
from pathlib import Path

import pytest

from processes.billing.steps import money_pt
from tests.languages import strings_of_the_other_language
from tests.processes.customer_messages import documented, undocumented

SOURCE = "\n".join(
    path.read_text(encoding="utf-8")
    for path in (Path(__file__).resolve().parents[2] / "processes").rglob("*.py")
)


@pytest.mark.parametrize("section", ["customer-messages", "customer-problems"])
def test_every_word_of_a_listed_message_is_still_in_the_code(section):
    """A reworded or removed message leaves words the code no longer has (messages are built
    from pieces and names, so the check is by word, not by whole sentence)."""
    stale = {}
    for line in documented(section):
        words = re.findall(r"\w{5,}", re.sub(r"<[^>]+>", " ", line))
        gone = [word for word in words if word not in SOURCE]
        if gone:
            stale[line] = gone

    assert documented(section) and stale == {}


@pytest.mark.parametrize("section", ["customer-messages", "customer-problems"])
def test_every_listed_message_is_portuguese(section):
    english = {
        line: found
        for line in documented(section)
        if (found := strings_of_the_other_language(re.sub(r"<[^>]+>", " ", line), "pt-br"))
    }

    assert documented(section) and english == {}


def test_an_english_problem_in_a_message_is_found():
    assert strings_of_the_other_language(
        "Problemas: selfie.pdf: application/pdf is not accepted.", "pt-br"
    ) == ["is", "not"]


def test_a_message_the_list_does_not_hold_is_found():
    assert undocumented("Hello! Send your documents.") == ["Hello! Send your documents."]
    assert undocumented(
        "Ainda falta: selfie do responsável. Problemas: selfie.pdf: not accepted."
    ) == ["selfie.pdf: not accepted"]
    assert undocumented("Ainda falta: selfie do responsável.") == []


@pytest.mark.parametrize(
    "amount, currency, shown",
    [
        (Decimal("350"), "BRL", "R$ 350,00"),
        (Decimal("10000.5"), "BRL", "R$ 10.000,50"),
        (Decimal("1234567.891"), "BRL", "R$ 1.234.567,89"),
        (Decimal("99.9"), "USD", "USD 99,90"),
    ],
)
def test_an_amount_reads_as_a_brazilian_customer_writes_it(amount, currency, shown):
    assert money_pt(amount, currency) == shown
