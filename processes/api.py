"""Webhooks for the WhatsApp Cloud API and the payment provider (HTTP for machines).

Both check an HMAC-SHA256 signature of the raw body before parsing it: a request with a
bad or missing signature gets 403 and nothing is stored. Machines carry no session, so
there is no CSRF token; the signature is their authentication.
"""
import json
import logging

from django.core.exceptions import ImproperlyConfigured
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from processes import conf, signing
from processes.billing.services import PaymentPayloadInvalid, payment_event_receive
from processes.whatsapp.services import PayloadInvalid, webhook_receive

log = logging.getLogger(__name__)

_DETAIL = inline_serializer("WebhookError", {"detail": serializers.CharField()})
_REFUSALS = {
    400: OpenApiResponse(_DETAIL, description="The body is not valid JSON, or not a payload we know."),
    403: OpenApiResponse(_DETAIL, description="Bad or missing signature: nothing was stored."),
    503: OpenApiResponse(_DETAIL, description="The webhook's secret is not configured."),
}


def _signed_post(header: str, receipt, summary: str):
    return extend_schema(
        summary=summary, request=OpenApiTypes.OBJECT, auth=[],
        parameters=[OpenApiParameter(header, OpenApiTypes.STR, OpenApiParameter.HEADER,
                                     description="sha256=<hex HMAC-SHA256 of the raw body>")],
        responses={200: receipt, **_REFUSALS})


class SignedWebhook(APIView):
    """Checks the signature header against the raw body, then hands parsed JSON to ``receive``."""

    authentication_classes: list = []   # the HMAC signature is the authentication
    permission_classes = [AllowAny]
    secret_setting = ""
    signature_header = ""

    def post(self, request):
        body = request.body   # raw bytes: nothing is parsed before the signature is checked
        try:
            secret = conf.secret(self.secret_setting)
        except ImproperlyConfigured as exc:
            log.error("%s rejected a webhook: %s", type(self).__name__, exc)
            return Response({"detail": "webhook not configured"}, status=status.HTTP_503_SERVICE_UNAVAILABLE)
        if not signing.is_valid(body, request.headers.get(self.signature_header), secret):
            log.warning("%s: bad or missing %s from %s (%d bytes)", type(self).__name__,
                        self.signature_header, request.META.get("REMOTE_ADDR"), len(body))
            return Response({"detail": f"invalid or missing {self.signature_header} signature"},
                            status=status.HTTP_403_FORBIDDEN)
        try:
            payload = json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            return Response({"detail": f"the body is not valid JSON: {exc}"}, status=status.HTTP_400_BAD_REQUEST)
        return self.receive(payload)

    def receive(self, payload) -> Response:
        raise NotImplementedError


class WhatsAppWebhook(SignedWebhook):
    """``GET``: Meta's verification handshake. ``POST``: messages and statuses, stored first."""

    secret_setting = "WHATSAPP_APP_SECRET"
    signature_header = "X-Hub-Signature-256"

    @extend_schema(
        summary="Meta's verification handshake", auth=[],
        parameters=[OpenApiParameter(name, OpenApiTypes.STR, OpenApiParameter.QUERY)
                    for name in ("hub.mode", "hub.verify_token", "hub.challenge")],
        responses={200: OpenApiResponse(OpenApiTypes.STR, description="hub.challenge, as text/plain"),
                   403: OpenApiResponse(_DETAIL), 503: OpenApiResponse(_DETAIL)})
    def get(self, request):
        params = request.query_params
        try:
            token = conf.secret("WHATSAPP_VERIFY_TOKEN")
        except ImproperlyConfigured:
            return Response({"detail": "webhook not configured"}, status=status.HTTP_503_SERVICE_UNAVAILABLE)
        given = params.get("hub.verify_token", "")
        if params.get("hub.mode") != "subscribe" or not signing.same_secret(given, token):
            return Response({"detail": "verification failed"}, status=status.HTTP_403_FORBIDDEN)
        # The challenge goes back verbatim as plain text, as Meta expects.
        return HttpResponse(params.get("hub.challenge", ""), content_type="text/plain")

    @_signed_post("X-Hub-Signature-256", summary="Inbound WhatsApp messages and statuses", receipt=inline_serializer(
        "WhatsAppReceipt", {"messages": serializers.IntegerField(), "new": serializers.IntegerField(),
                            "statuses": serializers.IntegerField()}))
    def post(self, request):
        return super().post(request)

    def receive(self, payload) -> Response:
        try:
            receipt = webhook_receive(payload)
        except PayloadInvalid as exc:
            return Response({"detail": f"not a WhatsApp webhook: {exc}"}, status=status.HTTP_400_BAD_REQUEST)
        return Response({"messages": receipt.messages, "new": len(receipt.new_message_ids),
                         "statuses": receipt.statuses})


class PaymentWebhook(SignedWebhook):
    """Payment provider events; a payment sends ``paid`` to the invoice's reminder run."""

    secret_setting = "PAYMENTS_WEBHOOK_SECRET"
    signature_header = "X-Signature-256"

    @_signed_post("X-Signature-256", summary="Payment provider events", receipt=inline_serializer(
        "PaymentReceipt", {"event": serializers.CharField(), "status": serializers.CharField(),
                           "duplicate": serializers.BooleanField()}))
    def post(self, request):
        return super().post(request)

    def receive(self, payload) -> Response:
        try:
            event, created = payment_event_receive(payload)
        except PaymentPayloadInvalid as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response({"event": event.event_id, "status": event.status, "duplicate": not created})
