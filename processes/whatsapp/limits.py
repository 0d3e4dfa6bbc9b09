"""What every worker shares of scarce things the processes use (``durable.limit``): declared at
import.

WhatsApp: the Cloud API takes so many messages a second per business phone number
(``WHATSAPP_SEND_RATE``, 20); a step that sends waits its turn instead of being refused.
The language model: ``LLM_CONCURRENCY`` (4) document checks at once across all workers.
"""

from durable import limit, seconds
from processes import conf

SEND = limit("whatsapp-send", rate=int(conf.setting("WHATSAPP_SEND_RATE", 20)), per=seconds(1))
LLM = limit("llm", concurrency=int(conf.setting("LLM_CONCURRENCY", 4)))
# The Celery queue of document checks: 5 to 30 s on the model, kept apart from the
# workers that send messages (``celery -A config worker -Q llm``).
LLM_QUEUE = "llm"
