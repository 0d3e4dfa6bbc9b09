"""Companies being onboarded, the documents they sent, and the account finally opened."""

import uuid

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _


def new_customer_id() -> str:
    return f"c-{uuid.uuid4().hex[:12]}"


class DocumentKind(models.TextChoices):
    ARTICLES = "articles_of_association", _("Articles of association")
    ADDRESS = "proof_of_address", _("Proof of address")
    SELFIE = "selfie", _("Selfie")
    UNKNOWN = "unknown", _("Unknown")


REQUIRED_KINDS = (DocumentKind.ARTICLES, DocumentKind.ADDRESS, DocumentKind.SELFIE)


class DocumentFetch(models.TextChoices):
    """Where a document's bytes stand. Only a ``stored`` document can count for validation."""

    PENDING = "pending", _("Not downloaded yet")
    STORED = "stored", _("Downloaded and stored")
    TOO_LARGE = "too_large", _("Refused: larger than the limit")
    REFUSED = "refused", _("Refused: not a PDF, JPEG or PNG, or an address we do not fetch")
    FAILED = "failed", _("Download failed")


class CompanyStatus(models.TextChoices):
    COLLECTING = "collecting", _("Collecting documents")
    IN_REVIEW = "in_review", _("In compliance review")
    APPROVED = "approved", _("Approved (account open)")
    REJECTED = "rejected", _("Rejected")
    CLOSED = "closed", _("Closed (deadline passed)")
    WITHDRAWN = "withdrawn", _("Withdrawn by the customer")


class Company(models.Model):
    """A business opening an account. Its onboarding run is ``onboarding:<customer_id>``, and
    ``onboarding:<customer_id>:<n>`` for its n-th application (one started after a
    withdrawal or a closure).

    A sender is known by phone (``wa_id``) or by business-scoped user id (``user_id``),
    since WhatsApp may deliver a message without a phone number.
    """

    customer_id = models.CharField(
        _("customer id"), max_length=64, unique=True, default=new_customer_id
    )
    cnpj = models.CharField(_("CNPJ"), max_length=18, blank=True)
    # The WhatsApp profile name, as the first message gave it: not the company's legal name.
    name = models.CharField(_("name"), max_length=200, blank=True)
    # The legal name (razão social) the customer wrote when asked for it; the registry's, when
    # it gives one, is on the case.
    legal_name = models.CharField(_("legal name given"), max_length=200, blank=True)
    legal_name_asked_at = models.DateTimeField(_("legal name asked at"), null=True, blank=True)
    wa_id = models.CharField(
        _("WhatsApp id (phone)"), max_length=128, null=True, blank=True, unique=True
    )
    user_id = models.CharField(
        _("business-scoped user id"), max_length=128, null=True, blank=True, unique=True
    )
    # The number the customer wrote from before WhatsApp reported their last number change.
    former_wa_id = models.CharField(_("previous WhatsApp id (phone)"), max_length=128, blank=True)
    # The business-scoped user id it had before WhatsApp reported its last change.
    former_user_id = models.CharField(
        _("previous business-scoped user id"), max_length=128, blank=True
    )
    status = models.CharField(
        _("status"), max_length=16, choices=CompanyStatus.choices, default=CompanyStatus.COLLECTING
    )
    status_reason = models.CharField(_("status reason"), max_length=200, blank=True)
    escalations = models.PositiveIntegerField(_("escalations"), default=0)
    # Which application this is: 1, then one more each time the customer writes again after
    # withdrawing or after the application closed for want of documents.
    application = models.PositiveIntegerField(_("application"), default=1)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("company")
        verbose_name_plural = _("companies")
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(wa_id__isnull=False) | Q(user_id__isnull=False),
                name="company_has_a_whatsapp_identity",
            ),
        ]
        # Every message's sender is looked up by its user id among the former ones too; the
        # hourly cap on new senders counts the companies of the last hour (admission.py).
        indexes = [
            models.Index(
                fields=["former_user_id"],
                name="company_former_user_id",
                condition=~Q(former_user_id=""),
            ),
            models.Index(fields=["created_at"], name="company_created_at"),
        ]

    def __str__(self):
        return self.name or self.cnpj or self.wa_id or self.user_id or self.customer_id

    @property
    def run_id(self) -> str:
        """The run of its current application."""
        return self.run_id_of(self.application)

    def run_id_of(self, application: int) -> str:
        """The run of its ``application``-th application (the first has no number)."""
        return f"onboarding:{self.customer_id}" + (f":{application}" if application > 1 else "")


class Document(models.Model):
    """A file the company sent. ``file`` is empty until the media is downloaded."""

    company = models.ForeignKey(
        Company, verbose_name=_("company"), on_delete=models.CASCADE, related_name="documents"
    )
    kind = models.CharField(
        _("kind"), max_length=32, choices=DocumentKind.choices, default=DocumentKind.UNKNOWN
    )
    media_id = models.CharField(_("media id"), max_length=128)
    mime_type = models.CharField(_("MIME type"), max_length=100, blank=True)
    sha256 = models.CharField(_("SHA-256"), max_length=128, blank=True)
    file_name = models.CharField(_("file name"), max_length=255, blank=True)
    caption = models.CharField(_("caption"), max_length=500, blank=True)
    size = models.PositiveBigIntegerField(_("size (bytes)"), null=True, blank=True)
    file = models.FileField(_("file"), upload_to="documents/%Y/%m/", blank=True)
    fetch_status = models.CharField(
        _("download"), max_length=16, choices=DocumentFetch.choices, default=DocumentFetch.PENDING
    )
    fetch_note = models.CharField(_("download note"), max_length=300, blank=True)
    message_id = models.CharField(_("WhatsApp message id"), max_length=128, blank=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    # The customer deleted the message that carried it: it stays on file, and no longer counts.
    withdrawn_at = models.DateTimeField(_("deleted by the customer at"), null=True, blank=True)
    # What the customer changed on WhatsApp after sending it (a caption edited, the message
    # deleted), oldest first: {"change", "at", "message_id", and "from"/"to" kinds or "caption"}.
    changes = models.JSONField(_("changes by the customer"), default=list, blank=True)

    class Meta:
        verbose_name = _("document")
        verbose_name_plural = _("documents")
        ordering = ["company", "created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["company", "media_id"], name="document_unique_media_per_company"
            )
        ]

    def __str__(self):
        return f"{self.get_kind_display()} ({self.file_name or self.media_id})"


class Account(models.Model):
    """The account opened at the end of onboarding: one per company, so creation is exactly once."""

    company = models.OneToOneField(
        Company, verbose_name=_("company"), on_delete=models.PROTECT, related_name="account"
    )
    number = models.CharField(_("number"), max_length=32, unique=True)
    idempotency_key = models.CharField(_("idempotency key"), max_length=255, unique=True)
    approved_by = models.CharField(_("approved by"), max_length=150, blank=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("account")
        verbose_name_plural = _("accounts")

    def __str__(self):
        return self.number
