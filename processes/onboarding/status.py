"""The bot's answer when a customer asks "status": read from their run by a query
(``progress``, registered by the workflow), said in the customer's language."""

import logging

from durable import services
from durable.errors import DurableError, RunNotFound
from processes.onboarding.steps import KIND_NAMES_PT

log = logging.getLogger(__name__)

# A text that is one of these words alone (case, accents and end punctuation ignored) asks.
STATUS_WORDS = {"status", "situacao", "andamento"}

STAGE_TEXTS = {
    "starting": "Recebemos a sua mensagem: o seu pedido de conta PJ está começando.",
    "awaiting documents": "O seu pedido de conta PJ aguarda os documentos.",
    "awaiting more documents": (
        "O seu pedido de conta PJ aguarda os documentos que a equipe de análise pediu."
    ),
    "awaiting CNPJ": "O seu pedido de conta PJ aguarda o CNPJ da empresa: escreva-o aqui.",
    "in review": "Os seus documentos estão em análise pela nossa equipe.",
    "approved": "A sua conta PJ foi aberta.",
    "rejected": "Não foi possível abrir a sua conta PJ.",
    "expired": (
        "O seu pedido de conta PJ foi encerrado por falta de documentos. Escreva para recomeçar."
    ),
    "withdrawn": "O seu pedido de conta PJ foi encerrado, como pediu. Escreva para recomeçar.",
}
UNKNOWN_TEXT = "O seu pedido de conta PJ está em andamento."
NO_RUN_TEXT = "Não encontramos um pedido de conta PJ deste número. Escreva para começar."


def status_text(progress: dict) -> str:
    """What the customer reads: the stage in words, and what is still missing."""
    missing = [KIND_NAMES_PT.get(kind, kind) for kind in progress.get("missing") or []]
    if missing and str(progress.get("stage", "")).startswith("awaiting"):
        return f"O seu pedido de conta PJ aguarda: {', '.join(missing)}."
    return STAGE_TEXTS.get(progress.get("stage"), UNKNOWN_TEXT)


def status_answer(run_id: str) -> tuple[str, str]:
    """(the reply, a note for the inbound message) for the run ``run_id``."""
    try:
        progress = services.run_query(run_id, "progress")
    except RunNotFound:
        return NO_RUN_TEXT, f"status: no run {run_id}"
    except DurableError as exc:  # the query is not there, or failed: say something true
        log.warning("status of %s: the progress query failed: %s", run_id, exc)
        return UNKNOWN_TEXT, f"status: {exc}"[:300]
    return status_text(progress), f"status: answered from the run ({progress.get('stage')})"
