"""A compliance reviewer's view of an onboarding document: preview or download, permission-checked.

The document is found through the case (its subject is the company) and the company, never
through a path from the request; the stored file is opened through its storage, which
refuses any name outside MEDIA_ROOT.
"""

import logging
import os
import re

from django.core.exceptions import PermissionDenied, SuspiciousFileOperation
from django.http import FileResponse, Http404

from approvals.models import ApprovalRequest
from approvals.services import is_reviewer, may_open
from approvals.views import ReviewerView
from processes.onboarding.models import Document
from processes.onboarding.panels import PREVIEWABLE_TYPES

log = logging.getLogger(__name__)

SAFE_NAME = re.compile(r"[^\w.\- ]+")


def download_name(document: Document) -> str:
    """The customer's file name without directories or control characters."""
    name = SAFE_NAME.sub(
        "_", os.path.basename((document.file_name or "").replace("\\", "/"))
    ).strip(" .")
    if not name:
        name = f"{document.kind}-{document.pk}" + os.path.splitext(document.file.name)[1]
    return name[:150]


def case_document(case_pk: int, document_pk: int, user) -> Document:
    """The document, if ``user`` is a compliance reviewer who may open its case: a case routed
    to other groups is a 403, as its page is (approvals routing), and so is a supervisor who
    is not a reviewer (docs/approvals.md: documents are for reviewers)."""
    case = ApprovalRequest.objects.filter(
        pk=case_pk, workflow_name="onboarding", subject_type="company"
    ).first()
    if case is None:
        raise Http404("no onboarding case with this id")
    if not may_open(case, user):
        raise PermissionDenied("this case is routed to groups you are not in")
    if not is_reviewer(user):
        raise PermissionDenied("documents are opened by compliance reviewers only")
    document = (
        Document.objects.select_related("company")
        .filter(pk=document_pk, company__customer_id=case.subject_id)
        .first()
    )
    if document is None:
        raise Http404("this case has no such document")
    return document


class DocumentFileView(ReviewerView):
    """GET the stored file: ``preview`` inline for PDF/JPEG/PNG, ``download`` as an attachment."""

    http_method_names = ["get", "head"]
    disposition = "download"

    def get(self, request, case_pk: int, pk: int):
        response = document_file_response(
            case_document(case_pk, pk, request.user), preview=self.disposition == "preview"
        )
        log.info(
            "reviewer %s %s document %s of case %s",
            request.user.get_username(),
            self.disposition,
            pk,
            case_pk,
        )
        return response


def document_file_response(document: Document, *, preview: bool = False) -> FileResponse:
    """The stored file, opened through its storage: inline only for PDF/JPEG/PNG previews,
    else an attachment; never sniffed, never cached. Used by reviewers and the admin, so no
    link anywhere needs ``/media/``."""
    if not document.file:
        raise Http404("the file of this document was never downloaded from WhatsApp")
    try:
        handle = document.file.open("rb")
    except (FileNotFoundError, SuspiciousFileOperation) as exc:
        log.warning(
            "document %s: stored file %r cannot be served: %s", document.pk, document.file.name, exc
        )
        raise Http404("the stored file is missing") from None
    content_type = (
        document.mime_type
        if document.mime_type in PREVIEWABLE_TYPES
        else "application/octet-stream"
    )
    inline = preview and content_type in PREVIEWABLE_TYPES
    response = FileResponse(
        handle,
        content_type=content_type,
        as_attachment=not inline,
        filename=download_name(document),
    )
    response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = "private, no-store"
    return response
