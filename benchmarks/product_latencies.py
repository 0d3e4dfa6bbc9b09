"""What a customer and a reviewer wait for, measured on the product bench's stack (product.py).

- **Webhook**: a signed delivery offered at a fixed rate (open loop) -> its 200.
- **Greeting**: a new customer's first message -> the greeting at the fake Graph API, at a
  fixed rate of new conversations.
- **Approval -> message**: a compliance reviewer's approval (``approval_decide``, what the
  case page's POST calls) -> the next message to that customer at the fake Graph API.

Every time is read from outside the app: the poster's clock when a POST began and ended, the
fake provider's clock when a send arrived (one process, one clock). Nothing is asserted.
"""

import time
from concurrent.futures import ThreadPoolExecutor

from benchmarks.report import pct


def figures(latencies: list[float]) -> dict:
    """p50 and p99 in milliseconds, and how many."""
    if not latencies:
        return {"count": 0, "p50_ms": None, "p99_ms": None}
    return {
        "count": len(latencies),
        "p50_ms": pct(latencies, 50) * 1000,
        "p99_ms": pct(latencies, 99) * 1000,
    }


def offer(poster, rate: float, seconds: float, first: int, prefix: str, body=None) -> list[str]:
    """Deliveries at ``rate`` a second for ``seconds``, each from a new number (open loop: one
    is sent when it is due, whether the last was answered or not); the numbers used."""
    numbers, count = [], int(rate * seconds)
    with ThreadPoolExecutor(max_workers=64) as pool:
        began = time.monotonic()
        for n in range(first, first + count):
            wait = began + (n - first) / rate - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            number = f"{prefix}{n:09d}"
            numbers.append(number)
            pool.submit(poster.post, number, n, *([body(number, n)] if body else []))
    return numbers


def wait_for(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def webhook_at(poster, rate: float, seconds: float, first: int) -> dict:
    """The webhook's answer at ``rate`` deliveries a second (workers running meanwhile)."""
    start = len(poster.answers)
    offer(poster, rate, seconds, first, "5531")
    answers = poster.answers[start:]
    return {
        "rate": rate,
        **figures([s for _, status, s in answers if status == 200]),
        "errors": sum(1 for _, status, _ in answers if status != 200),
    }


def greeting_at(poster, fake, rate: float, seconds: float, first: int, timeout: float) -> dict:
    """New conversations at ``rate`` a second: first message sent -> greeting received."""
    numbers = offer(poster, rate, seconds, first, "5541")
    all_greeted = wait_for(lambda: set(numbers) <= fake.greeted().keys(), timeout)
    greeted = fake.greeted()
    latencies = [
        greeted[number] - poster.first_post[number] for number in numbers if number in greeted
    ]
    return {
        "rate": rate,
        **figures(latencies),
        "offered": len(numbers),
        "all_greeted": all_greeted,
    }


def approval_to_message(poster, fake, customers: int, first: int, timeout: float) -> dict:
    """``customers`` new customers send their greeting, then their three documents in one
    delivery; once every case is open, a reviewer approves them one at a time, a second
    apart: each approval -> the customer's next message."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.db import connection

    from approvals.models import ApprovalRequest
    from approvals.services import approval_decide, compliance_group_ensure
    from processes.onboarding.models import Company

    numbers = offer(poster, 5, customers / 5, first, "5551", body=hello_with_cnpj)
    if not wait_for(lambda: set(numbers) <= fake.greeted().keys(), timeout):
        return {"error": "not every customer was greeted"}
    offer(poster, 5, customers / 5, first, "5551", body=documents)

    def cases() -> dict[str, int]:
        connection.close()  # a fresh connection each poll: the bench outlives idle timeouts
        runs = {
            company.run_id: company.wa_id for company in Company.objects.filter(wa_id__in=numbers)
        }
        return {
            runs[run_id]: pk
            for run_id, pk in ApprovalRequest.objects.filter(
                run_id__in=runs, status="pending"
            ).values_list("run_id", "pk")
        }

    if not wait_for(lambda: len(cases()) == len(numbers), timeout):
        return {"error": f"{len(cases())} of {len(numbers)} cases opened", "customers": customers}
    reviewer, _ = get_user_model().objects.get_or_create(username="bench-reviewer")
    reviewer.groups.add(compliance_group_ensure(), *Group.objects.all())
    approved_at = {}
    for number, pk in sorted(cases().items()):
        approved_at[number] = time.time()
        approval_decide(pk, actor=reviewer, outcome="approve")
        time.sleep(1)

    def answered() -> dict[str, float]:
        """Each approved customer's first message after the approval, in one pass."""
        first: dict[str, float] = {}
        for at, to, _ in list(fake.sends):
            if to in approved_at and at >= approved_at[to]:
                first[to] = min(first.get(to, at), at)
        return first

    wait_for(lambda: len(answered()) == len(approved_at), timeout)
    sent = answered()
    return {
        **figures([sent[to] - approved_at[to] for to in sent]),
        "approved": len(approved_at),
        "all_answered": len(sent) == len(approved_at),
    }


def hello_with_cnpj(number: str, n: int) -> list[dict]:
    """A first message that gives a valid CNPJ of the customer's own (one shared by two
    companies would hold both for a senior's second look)."""
    from processes.onboarding.cnpj import cnpj_format, cnpj_valid

    base = f"{int(number[-8:]):08d}0001"
    cnpj = cnpj_format(next(base + f"{d:02d}" for d in range(100) if cnpj_valid(base + f"{d:02d}")))
    return [
        {
            "from": number,
            "id": f"wamid.HELLO.{n}",
            "timestamp": str(int(time.time())),
            "type": "text",
            "text": {"body": f"Oi! Quero abrir uma conta PJ, CNPJ {cnpj}"},
        }
    ]


def documents(number: str, n: int) -> list[dict]:
    """The three documents a customer sends in one delivery (the fake provider serves them)."""

    def media(kind: str, message_type: str, caption: str, mime_type: str, **extra) -> dict:
        return {
            "from": number,
            "id": f"wamid.DOC.{kind}.{n}",
            "timestamp": str(int(time.time())),
            "type": message_type,
            message_type: {
                "id": f"media-{kind}-{n}",
                "mime_type": mime_type,
                "caption": caption,
                **extra,
            },
        }

    return [
        media("contract", "document", "Contrato social", "application/pdf", filename="c.pdf"),
        media(
            "address", "document", "comprovante de endereço", "application/pdf", filename="l.pdf"
        ),
        media("selfie", "image", "selfie", "image/png"),
    ]
