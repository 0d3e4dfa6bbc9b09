"""Webhooks for the WhatsApp Cloud API and the payment provider (HTTP for machines).

Both check an HMAC-SHA256 signature of the raw body before parsing it: a request with a
bad or missing signature gets 403 and nothing is stored. A correctly signed body is then
stored byte for byte (``WebhookDelivery``) before it is parsed, so nothing the provider
sent is ever lost and its signature can be checked again later. Machines carry no
session, so there is no CSRF token; the signature is their authentication.
"""

import json
import logging

from django.core.exceptions import ImproperlyConfigured
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from durable.runtime import tracing
from processes import conf, signing
from processes.billing.services import (
    PaymentFieldTooLong,
    PaymentPayloadInvalid,
    payment_event_receive,
)
from processes.webhooks.models import WebhookDelivery, WebhookSource
from processes.webhooks.services import delivery_outcome, delivery_store, item_quarantine
from processes.whatsapp.services import intake_accept, webhook_parts

log = logging.getLogger(__name__)

_DETAIL = inline_serializer("WebhookError", {"detail": serializers.CharField()})
_REFUSALS = {
    400: OpenApiResponse(
        _DETAIL,
        description="The body is not valid JSON (NaN and Infinity included), "
        "or not a payload we know; its bytes are kept.",
    ),
    403: OpenApiResponse(_DETAIL, description="Bad or missing signature: nothing was stored."),
    503: OpenApiResponse(_DETAIL, description="The webhook's secret is not configured."),
}


def _signed_post(header: str, receipt, summary: str):
    return extend_schema(
        summary=summary,
        request=OpenApiTypes.OBJECT,
        auth=[],
        parameters=[
            OpenApiParameter(
                header,
                OpenApiTypes.STR,
                OpenApiParameter.HEADER,
                description="sha256=<hex HMAC-SHA256 of the raw body>",
            )
        ],
        responses={200: receipt, **_REFUSALS},
    )


class SignedWebhook(APIView):
    """Checks the signature header against the raw body, then hands parsed JSON to ``receive``."""

    authentication_classes: list = []  # the HMAC signature is the authentication
    permission_classes = [AllowAny]
    secret_setting = ""
    signature_header = ""
    source = ""

    def post(self, request):
        body = request.body  # raw bytes: nothing is parsed before the signature is checked
        try:
            secret = conf.secret(self.secret_setting)
        except ImproperlyConfigured as exc:
            log.error("%s rejected a webhook: %s", type(self).__name__, exc)
            return Response(
                {"detail": "webhook not configured"}, status=status.HTTP_503_SERVICE_UNAVAILABLE
            )
        if not signing.is_valid(body, request.headers.get(self.signature_header), secret):
            log.warning(
                "%s: bad or missing %s from %s (%d bytes)",
                type(self).__name__,
                self.signature_header,
                request.META.get("REMOTE_ADDR"),
                len(body),
            )
            return Response(
                {"detail": f"invalid or missing {self.signature_header} signature"},
                status=status.HTTP_403_FORBIDDEN,
            )
        delivery = delivery_store(
            source=self.source,
            body=body,
            signature=request.headers.get(self.signature_header, ""),
            remote_addr=request.META.get("REMOTE_ADDR") or "",
        )
        try:
            payload = strict_json(body)
        except (ValueError, RecursionError) as exc:
            delivery_outcome(delivery, f"refused: not valid JSON: {exc}")
            return Response(
                {"detail": f"the body is not valid JSON: {exc}"}, status=status.HTTP_400_BAD_REQUEST
            )
        return self.receive(payload, delivery)

    def receive(self, payload, delivery: WebhookDelivery) -> Response:
        raise NotImplementedError


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    number = float(text)
    if number in (float("inf"), float("-inf")):
        raise ValueError(f"{text} does not fit a number")
    return number


def strict_json(body: bytes):
    """Parse JSON as the standard defines it: NaN, Infinity and 1e999 are refused, not read
    as floats that no database column or later ``json.dumps`` accepts."""
    return json.loads(body, parse_constant=_refuse_constant, parse_float=_finite_float)


class WhatsAppWebhook(SignedWebhook):
    """``GET``: Meta's verification handshake. ``POST``: messages and statuses, stored first."""

    secret_setting = "WHATSAPP_APP_SECRET"
    signature_header = "X-Hub-Signature-256"
    source = WebhookSource.WHATSAPP

    @extend_schema(
        summary="Meta's verification handshake",
        auth=[],
        parameters=[
            OpenApiParameter(name, OpenApiTypes.STR, OpenApiParameter.QUERY)
            for name in ("hub.mode", "hub.verify_token", "hub.challenge")
        ],
        responses={
            200: OpenApiResponse(OpenApiTypes.STR, description="hub.challenge, as text/plain"),
            403: OpenApiResponse(_DETAIL),
            503: OpenApiResponse(_DETAIL),
        },
    )
    def get(self, request):
        params = request.query_params
        try:
            token = conf.secret("WHATSAPP_VERIFY_TOKEN")
        except ImproperlyConfigured:
            return Response(
                {"detail": "webhook not configured"}, status=status.HTTP_503_SERVICE_UNAVAILABLE
            )
        given = params.get("hub.verify_token", "")
        if params.get("hub.mode") != "subscribe" or not signing.same_secret(given, token):
            return Response({"detail": "verification failed"}, status=status.HTTP_403_FORBIDDEN)
        # The challenge goes back verbatim as plain text, as Meta expects.
        return HttpResponse(params.get("hub.challenge", ""), content_type="text/plain")

    @_signed_post(
        "X-Hub-Signature-256",
        summary="Inbound WhatsApp messages and statuses",
        receipt=inline_serializer(
            "WhatsAppReceipt",
            {
                "delivery": serializers.IntegerField(
                    help_text=(
                        "The stored delivery; its messages and "
                        "statuses are processed by a worker, in order."
                    )
                )
            },
        ),
    )
    def post(self, request):
        # The trace of a delivery starts here; the intake task, the signals it sends and the
        # advances they cause carry it on (durable.tasks puts it in the messages' headers).
        with tracing.span("whatsapp.webhook"):
            return super().post(request)

    def receive(self, payload, delivery: WebhookDelivery) -> Response:
        """200 as soon as the delivery is stored: a worker stores its messages, applies its
        statuses and routes them, in order (``intake_accept``). Meta retries anything else
        forever; the parts the intake cannot take are quarantined for an operator."""
        if tracing.recording():
            messages = sum(part.kind == "message" for part in webhook_parts(payload))
            tracing.note({"whatsapp.delivery_id": delivery.pk, "whatsapp.message_count": messages})
        intake_accept(delivery)
        return Response({"delivery": delivery.pk})


class PaymentWebhook(SignedWebhook):
    """Payment provider events; a payment sends ``paid`` to the invoice's reminder run."""

    secret_setting = "PAYMENTS_WEBHOOK_SECRET"
    signature_header = "X-Signature-256"
    source = WebhookSource.PAYMENTS

    @_signed_post(
        "X-Signature-256",
        summary="Payment provider events",
        receipt=inline_serializer(
            "PaymentReceipt",
            {
                "event": serializers.CharField(),
                "status": serializers.CharField(
                    help_text=(
                        "applied, unmatched or ignored; quarantined: a field is longer "
                        "than we store, kept for an operator (the event is empty then)"
                    )
                ),
                "duplicate": serializers.BooleanField(),
                "detail": serializers.CharField(
                    required=False, help_text="Why it was quarantined."
                ),
            },
        ),
    )
    def post(self, request):
        return super().post(request)

    def receive(self, payload, delivery: WebhookDelivery) -> Response:
        try:
            event, created = payment_event_receive(payload)
        except PaymentFieldTooLong as exc:  # a 400 would bring the same bytes back forever
            item_quarantine(delivery=delivery, where=exc.where, kind="payment", reason=str(exc))
            delivery_outcome(delivery, f"quarantined: {exc}")
            return Response(
                {"event": "", "status": "quarantined", "duplicate": False, "detail": str(exc)}
            )
        except PaymentPayloadInvalid as exc:
            delivery_outcome(delivery, f"refused: {exc}")
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        delivery_outcome(
            delivery,
            f"event {event.event_id}: {event.status}{' (a redelivery)' if not created else ''}",
        )
        return Response({"event": event.event_id, "status": event.status, "duplicate": not created})
