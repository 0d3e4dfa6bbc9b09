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
        reply = OptionReply(id=str(content.get("payload") or ""), title=str(content.get("text") or ""),
                            needs_question=False)
    else:
        return None
    context = body.get("context") if isinstance(body.get("context"), dict) else {}
    ours = _questions_to(company, message)
    if context.get("id"):
        reply.question = ours.filter(provider_message_id=str(context["id"])).first()
    elif reply.id:   # no context: the latest question of ours that offered this option
        reply.question = next((q for q in ours.order_by("-created_at", "-pk")[:20]
                               if reply.id in option_ids(q)), None)
    return reply


def option_typed(message: InboundMessage, text: str, *, company) -> OptionReply | None:
    """A text that answers the latest question of ours, still open and fresh, by its number
    ("1") or its option's title typed ("Confirmar"); None otherwise."""
    question = _questions_to(company, message).order_by("-created_at", "-pk").first()
    if question is None or question.answered_at is not None \
            or (clock.now() - question.created_at).total_seconds() > TYPED_ANSWER_WINDOW_HOURS * 3600:
        return None
    items = question.options.get("items") or []
    typed = _plain(text)
    for number, item in enumerate(items, start=1):
        if typed in (str(number), _plain(item["title"])):
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


def _plain(text: str) -> str:
    plain = unicodedata.normalize("NFKD", str(text or "")).encode("ascii", "ignore").decode()
    return " ".join(plain.split()).strip(".!?¡¿ ").casefold()
