"""Django finds the models of every process here; each lives in its process's package."""

from processes.billing.models import FinanceTicket, Invoice, PaymentEvent  # noqa: F401
from processes.onboarding.models import Account, Company, Document  # noqa: F401
from processes.reconciliation.models import BankStatementLine, LedgerEntry, ReconciliationBatch  # noqa: F401
from processes.webhooks.models import QuarantinedItem, WebhookDelivery  # noqa: F401
from processes.whatsapp.models import (  # noqa: F401
    AccountEvent,
    InboundMessage,
    OutboundMessage,
    PendingStatus,
    WhatsAppTemplate,
)
