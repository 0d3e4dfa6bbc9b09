"""The Celery entry points and the sender of their messages: what each message carries."""

import pytest

from durable import tasks


@pytest.mark.parametrize(
    ("queue", "advances", "expected"),
    [
        (None, None, ({}, {})),
        ("llm", None, ({"queue": "llm"}, {"queue": "llm"})),
        ("durable-takeover", 4, ({"advances": 4}, {"queue": "durable-takeover"})),
        (None, 2, ({"advances": 2}, {})),
    ],
    ids=["default", "own-queue", "takeover-lane", "sweep-copy"],
)
def test_an_advance_message_names_its_queue_and_the_sweep_s_count_only_when_it_has_them(
    monkeypatch, queue, advances, expected
):
    sent = []
    monkeypatch.setattr(
        tasks.advance,
        "apply_async",
        lambda args, kwargs, **options: sent.append((args, kwargs, options)),
    )

    tasks.send_advance("run-1", queue=queue, advances=advances)

    kwargs, route = expected
    assert sent == [(("run-1",), kwargs, {"countdown": None, "retry": False, **route})]
