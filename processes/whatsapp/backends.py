"""Where outbound messages go: the console (default) or the WhatsApp Cloud API.

Backends are called from workflow steps only (never from a workflow body): their
network calls and answers are journaled like any other effect.
"""
import hashlib
import json
import logging
import urllib.error
import urllib.request
from dataclasses import dataclass

from django.utils.module_loading import import_string

from processes import conf

log = logging.getLogger(__name__)


class ProviderError(Exception):
    """The provider refused or failed; the step's retry policy decides what happens next."""


@dataclass
class Media:
    content: bytes
    mime_type: str
    sha256: str


@dataclass
class Outgoing:
    """What to send: free text inside the 24-hour window, a template outside it."""

    to_wa_id: str
    to_user_id: str
    body: str
    template_name: str = ""
    template_language: str = ""


class ConsoleBackend:
    """Development default: log the message at INFO; the OutboundMessage row is the record.

    Logged, not printed: a Celery worker turns stdout into WARNING "celery.redirected".
    """

    name = "console"

    def send(self, outgoing: Outgoing, *, idempotency_key: str) -> str:
        mode = f"template {outgoing.template_name}" if outgoing.template_name else "text"
        log.info("[whatsapp -> %s] (%s) %s", outgoing.to_wa_id or outgoing.to_user_id, mode,
                 outgoing.body)
        return f"console.{hashlib.sha256(idempotency_key.encode()).hexdigest()[:24]}"

    def download_media(self, media_id: str) -> Media | None:
        return None  # nothing to fetch in development: the document keeps its metadata only


class CloudAPIBackend:
    """Meta's WhatsApp Cloud API: ``POST /<phone-number-id>/messages`` with a bearer token."""

    name = "cloud_api"

    def __init__(self, *, base_url: str, token: str, phone_number_id: str, timeout: float = 15):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.phone_number_id = phone_number_id
        self.timeout = timeout

    def _request(self, url: str, *, body: dict | None = None) -> bytes:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, method="POST" if body is not None else "GET")
        request.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:500].decode(errors="replace")
            raise ProviderError(f"{exc.code} from {url}: {detail}") from None
        except (urllib.error.URLError, TimeoutError) as exc:
            raise ProviderError(f"cannot reach {url}: {exc}") from None

    def send(self, outgoing: Outgoing, *, idempotency_key: str) -> str:
        message = {"messaging_product": "whatsapp", "recipient_type": "individual"}
        if outgoing.to_wa_id:
            message["to"] = outgoing.to_wa_id
        else:
            message["recipient"] = outgoing.to_user_id  # business-scoped user id, no phone
        if outgoing.template_name:
            message.update(type="template", template={
                "name": outgoing.template_name,
                "language": {"code": outgoing.template_language},
                "components": [{"type": "body",
                                "parameters": [{"type": "text", "text": outgoing.body}]}]})
        else:
            message.update(type="text", text={"body": outgoing.body, "preview_url": False})
        answer = self._json(self._request(f"{self.base_url}/{self.phone_number_id}/messages", body=message))
        try:
            return answer["messages"][0]["id"]
        except (KeyError, IndexError, TypeError):
            raise ProviderError(f"unexpected answer to a send: {answer!r:.300}") from None

    def download_media(self, media_id: str) -> Media:
        """Media id -> a short-lived URL -> the bytes, checked against the provider's sha256."""
        meta = self._json(self._request(f"{self.base_url}/{media_id}"))
        if not meta.get("url"):
            raise ProviderError(f"no URL for media {media_id}: {meta!r:.300}")
        content = self._request(meta["url"])
        digest = hashlib.sha256(content).hexdigest()
        if meta.get("sha256") and meta["sha256"] != digest:
            raise ProviderError(f"media {media_id}: sha256 mismatch (expected {meta['sha256']}, got {digest})")
        return Media(content=content, mime_type=meta.get("mime_type", ""), sha256=digest)

    @staticmethod
    def _json(raw: bytes) -> dict:
        try:
            return json.loads(raw)
        except ValueError:
            raise ProviderError(f"the provider answered with something other than JSON: {raw[:200]!r}") from None


BACKENDS = {"console": ConsoleBackend, "cloud_api": CloudAPIBackend}


def get_backend():
    """The backend named by WHATSAPP_BACKEND (``console``, ``cloud_api`` or a dotted path)."""
    name = conf.setting("WHATSAPP_BACKEND", "console")
    if name == "cloud_api":
        return CloudAPIBackend(base_url=conf.setting("WHATSAPP_API_BASE_URL"),
                               token=conf.secret("WHATSAPP_ACCESS_TOKEN"),
                               phone_number_id=conf.secret("WHATSAPP_PHONE_NUMBER_ID"))
    cls = BACKENDS.get(name) or import_string(name)
    return cls()
