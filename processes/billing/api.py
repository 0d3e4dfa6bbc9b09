"""Invoice operations over HTTP for operators' tools: void and a new due date, each sent to
the invoice's run (an update), answered at once when the run applies or refuses it."""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.permissions import BasePermission
from rest_framework.response import Response

from durable.surfaces.api import DurableAPIView, error_response, errors
from durable.surfaces.serializers import JSONText
from processes.billing.models import Invoice
from processes.billing.rules import REASON_MAX, due_at_from_text
from processes.billing.services import InvoiceSettled, invoice_due_date_change, invoice_void

OPERATION_STATUSES = ["applied", "stored"]

_OUTCOME = inline_serializer(
    "InvoiceOperationOutcome",
    {
        "invoice": serializers.CharField(),
        "status": serializers.ChoiceField(
            OPERATION_STATUSES,
            help_text=(
                "applied: the run did it; stored: it did not answer in time and will still do it"
            ),
        ),
        "invoice_status": serializers.CharField(help_text="The invoice's status after the call."),
    },
)


class CanChangeInvoices(BasePermission):
    def has_permission(self, request, view):
        return bool(
            request.user
            and request.user.is_authenticated
            and request.user.has_perm("processes.change_invoice")
        )


class VoidBody(serializers.Serializer):
    reason = JSONText(max_length=REASON_MAX, help_text="Why; kept in the run's journal and audit.")


class DueDateBody(serializers.Serializer):
    due_at = JSONText(
        max_length=64, help_text="ISO 8601 with its offset, in the future, within two years."
    )
    reason = JSONText(
        max_length=REASON_MAX,
        required=False,
        default="",
        help_text="Why (the renegotiation); kept in the run's journal and audit.",
    )

    def validate_due_at(self, value: str):
        try:
            return due_at_from_text(value)
        except ValueError as problem:
            raise serializers.ValidationError(str(problem)) from None


class InvoiceOperationView(DurableAPIView):
    """The engine API's authentication, body limits and error shape; the invoice permission."""

    permission_classes = [CanChangeInvoices]
    body_class: type[serializers.Serializer]

    def apply(self, invoice: Invoice, data: dict, **who) -> bool:
        raise NotImplementedError

    def post(self, request, number: str):
        body = self.body_class(data=request.data)
        body.is_valid(raise_exception=True)
        invoice = get_object_or_404(Invoice, number=number)
        try:
            applied = self.apply(invoice, body.validated_data, **self.audit())
        except InvoiceSettled as refused:
            return error_response(
                status.HTTP_409_CONFLICT, "invoice_settled", f"refused: {refused}"
            )
        invoice.refresh_from_db()
        return Response(
            {
                "invoice": invoice.number,
                "status": "applied" if applied else "stored",
                "invoice_status": invoice.status,
            },
            status=status.HTTP_200_OK if applied else status.HTTP_202_ACCEPTED,
        )


# 403: needs processes.change_invoice; 404: no invoice with that number; 409 (invoice_settled):
# refused, the invoice is paid, voided or escalated, or its reminders have ended.
_RESPONSES = {200: _OUTCOME, 202: _OUTCOME, **errors(400, 401, 403, 404, 409, 413, 415)}


class InvoiceVoidView(InvoiceOperationView):
    body_class = VoidBody

    @extend_schema(
        summary="Void an invoice (through its run)", request=VoidBody, responses=_RESPONSES
    )
    def post(self, request, number: str):
        return super().post(request, number)

    def apply(self, invoice, data, **who) -> bool:
        return invoice_void(invoice, reason=data["reason"], **who)


class InvoiceDueDateView(InvoiceOperationView):
    body_class = DueDateBody

    @extend_schema(
        summary="Give an invoice a new due date (through its run)",
        request=DueDateBody,
        responses=_RESPONSES,
    )
    def post(self, request, number: str):
        return super().post(request, number)

    def apply(self, invoice, data, **who) -> bool:
        return invoice_due_date_change(invoice, due_at=data["due_at"], reason=data["reason"], **who)
