"""Fetching a customer's document from the WhatsApp provider into onboarding's record.

Onboarding's, not the channel's: it writes a ``Document`` and its ``DocumentFetch`` outcome;
the channel only lends the backend and the check of what the bytes are.
"""

import logging
import re

from django.core.files.base import ContentFile

from processes import conf
from processes.onboarding.models import DocumentFetch
from processes.whatsapp.backends import MediaRefused, MediaTooLarge, get_backend
from processes.whatsapp.services import DETECTED_TYPES, stored_extension

log = logging.getLogger(__name__)


def media_download(document) -> bool:
    """Fetch a document's bytes through the backend and record the outcome on the document
    (``fetch_status``); True when a file of an accepted type is stored.

    Too large (its size is recorded) or refused (an address we do not fetch) is final: a
    retry could not help, so the checker asks the customer for another file. Bytes that are
    not a PDF, JPEG or PNG are stored as ``.bin`` for the record and refused. The type is
    what the bytes are, never what the message claims. Other provider errors raise, for the
    step's retry policy.
    """
    if document.file and document.fetch_status == DocumentFetch.STORED:
        return True
    max_bytes = conf.setting("DOCUMENT_MAX_BYTES", 10 * 1024 * 1024)
    try:
        media = get_backend().download_media(
            document.media_id, max_bytes=max_bytes, mime_type=document.mime_type
        )
    except (MediaTooLarge, MediaRefused) as exc:
        log.warning("document %s not stored: %s", document.pk, exc)
        too_large = isinstance(exc, MediaTooLarge)
        document.size = exc.size if too_large else document.size
        document.fetch_status = DocumentFetch.TOO_LARGE if too_large else DocumentFetch.REFUSED
        document.fetch_note = str(exc)[:300]
        document.save(update_fields=["size", "fetch_status", "fetch_note"])
        return False
    # Stored under a name we choose: the customer's file name ("../x.pdf", "a/b.pdf") is
    # kept in file_name for display and download only.
    safe_id = re.sub(r"[^A-Za-z0-9_.-]", "_", str(document.media_id))[:100] or "media"
    extension = stored_extension(media.content)
    document.file.save(f"{safe_id}{extension}", ContentFile(media.content), save=False)
    document.size, document.sha256 = len(media.content), media.sha256
    detected = DETECTED_TYPES.get(extension)
    if detected:
        document.mime_type, document.fetch_status, document.fetch_note = (
            detected,
            DocumentFetch.STORED,
            "",
        )
    else:
        document.fetch_status = DocumentFetch.REFUSED
        document.fetch_note = "the file is not a PDF, JPEG or PNG"
    document.save(
        update_fields=["file", "size", "sha256", "mime_type", "fetch_status", "fetch_note"]
    )
    return detected is not None
