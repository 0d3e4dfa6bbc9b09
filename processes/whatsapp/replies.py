"""Replies to our buttons and lists: which option a customer chose, and which of our questions
it answers. The channel reads them; what an option id means is the routing process's business."""

import unicodedata
from dataclasses import dataclass

from django.db.models import Q

from durable import clock
from processes.whatsapp.models import InboundMessage, OutboundMessage

# Interactive replies that choose one of our options; a flow's reply (``nfm_reply``) and an
# order are not: they stay messages we do not read.
OPTION_REPLY_TYPES = ("button_reply", "list_reply")
# A typed answer ("1", "Confirmar") counts for the latest question only while it is this fresh.
TYPED_ANSWER_WINDOW_HOURS = 24
# Two open questions sent within this many seconds of each other: a typed "1" answers neither.
AMBIGUOUS_WITHIN_SECONDS = 600


@dataclass
class OptionReply:
    """The option a customer chose. ``question`` is our message it answers, when known;
    ``needs_question``: a reply to buttons or a list we sent (a template's quick reply
    comes from a template configured at Meta, which offers no options of ours)."""

    id: str
    title: str
    question: OutboundMessage | None = None
    needs_question: bool = True
    typed: bool = False


def option_reply(message: InboundMessage, *, company) -> OptionReply | None:
    """A button or list reply (or a template's quick reply) as the option it chose, with the
    question of ours it answers (the reply's ``context``); None for any other message."""
    body = (message.payload or {}).get("message") or {}
    content = body.get(message.message_type)
    if not isinstance(content, dict):
        return None
    if message.message_type == "interactive" and content.get("type") in OPTION_REPLY_TYPES:
        chosen = content.get(content["type"])
        if not isinstance(chosen, dict):
            return None
        reply = OptionReply(id=str(chosen.get("id") or ""), title=str(chosen.get("title") or ""))
    elif message.message_type == "button":
        reply = OptionReply(
            id=str(content.get("payload") or ""),
            title=str(content.get("text") or ""),
            needs_question=False,
        )
    else:
        return None
    context = body.get("context") if isinstance(body.get("context"), dict) else {}
    ours = _questions_to(company, message)
    if context.get("id"):
        reply.question = ours.filter(provider_message_id=str(context["id"])).first()
    elif reply.id:  # no context: the latest question of ours that offered this option
        reply.question = next(
            (q for q in ours.order_by("-created_at", "-pk")[:20] if reply.id in option_ids(q)), None
        )
    return reply


def option_typed(message: InboundMessage, text: str, *, company) -> OptionReply | None:
    """A text that answers a question of ours, still open and fresh, by its number ("1") or
    its option's title typed ("Confirmar"); None otherwise. The question is the one the text
    replies to (its ``context``, a swipe-reply), else the only open one: when two open
    questions were sent close together ("Qual documento é este?", then the missing documents,
    with the same titles), a bare "1" could answer either, and nothing is guessed."""
    now = clock.now()
    fresh = [
        question
        for question in _questions_to(company, message)
        .filter(answered_at__isnull=True)
        .order_by("-created_at", "-pk")[:10]
        if (now - question.created_at).total_seconds() <= TYPED_ANSWER_WINDOW_HOURS * 3600
    ]
    context = ((message.payload or {}).get("message") or {}).get("context")
    replied_to = str(context.get("id") or "") if isinstance(context, dict) else ""
    if replied_to:
        fresh = [question for question in fresh if question.provider_message_id == replied_to]
    elif (
        len(fresh) > 1
        and option_ids(fresh[0]) != option_ids(fresh[1])
        and (fresh[0].created_at - fresh[1].created_at).total_seconds() < AMBIGUOUS_WITHIN_SECONDS
    ):
        return None  # (the same options twice is one question sent again, as text)
    if not fresh:
        return None
    question = fresh[0]
    typed = plain(text)
    for number, item in enumerate(question.options.get("items") or [], start=1):
        if typed in (str(number), plain(item["title"])):
            return OptionReply(id=item["id"], title=item["title"], question=question, typed=True)
    return None


def option_ids(question: OutboundMessage) -> list[str]:
    return [item["id"] for item in (question.options or {}).get("items") or []]


def _questions_to(company, message: InboundMessage):
    """Our messages with options to this company (or, with none, to the sender's identity)."""
    questions = OutboundMessage.objects.filter(options__has_key="items")
    if company is not None:
        return questions.filter(company=company)
    who = Q(pk__in=[])
    if message.sender_wa_id:
        who |= Q(to_wa_id=message.sender_wa_id)
    if message.sender_user_id:
        who |= Q(to_user_id=message.sender_user_id)
    return questions.filter(who)


def plain(text: str) -> str:
    """A customer's short answer as words compare: accents, case, runs of spaces and the end
    punctuation dropped ("Desistír!" is "desistir", "bom  dia." is "bom dia")."""
    ascii_text = unicodedata.normalize("NFKD", str(text or "")).encode("ascii", "ignore").decode()
    return " ".join(ascii_text.split()).strip(".!?¡¿ ").casefold()
