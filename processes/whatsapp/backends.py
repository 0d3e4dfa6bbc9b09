"""Where outbound messages go: the console (default) or the WhatsApp Cloud API.

Backends are called from workflow steps only (never from a workflow body): their
network calls and answers are journaled like any other effect.
"""

import hashlib
import json
import logging
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field

from django.utils.module_loading import import_string

from processes import conf

log = logging.getLogger(__name__)


class ProviderError(Exception):
    """The provider refused or failed; the step's retry policy decides what happens next."""


class InteractiveUnsupported(ProviderError):
    """The customer's client cannot show an interactive message: send it again as text."""


class MediaRefused(ProviderError):
    """The provider named a media URL we do not fetch (scheme or host not allowed)."""


class MediaTooLarge(ProviderError):
    """The file is larger than DOCUMENT_MAX_BYTES: refused before or while reading it."""

    def __init__(self, message: str, *, size: int):
        super().__init__(message)
        self.size = size


def media_url_check(url: str) -> str:
    """Only the configured schemes (https in production) to the configured provider hosts:
    a media URL comes from the provider's answer, and ``file://`` or an internal host must
    never be fetched with our token."""
    parts = urllib.parse.urlsplit(str(url))
    schemes = [scheme.lower() for scheme in conf.setting("WHATSAPP_MEDIA_SCHEMES", ["https"])]
    hosts = [host.lower() for host in conf.setting("WHATSAPP_MEDIA_HOSTS", [])]
    try:
        port = parts.port
    except ValueError:  # a port that is no number, or out of range
        port = -1
    # A host listed bare is that host on its scheme's own port; another port must be listed.
    default = {"https": 443, "http": 80}.get(parts.scheme.lower())
    where = (
        (parts.hostname or "").lower()
        if port in (None, default)
        else f"{(parts.hostname or '').lower()}:{port}"
    )
    if parts.scheme.lower() not in schemes or where not in hosts:
        raise MediaRefused(
            f"media URL {str(url)[:200]!r} is not {'/'.join(schemes)} to one of "
            f"WHATSAPP_MEDIA_HOSTS {hosts}"
        )
    return url


class _MediaRedirects(urllib.request.HTTPRedirectHandler):
    """Follow a redirect only to an allowed URL, and carry the token only to the same origin
    (urllib never copies an unredirected header, so another host never sees it)."""

    max_redirections = 3

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        media_url_check(newurl)
        redirected = super().redirect_request(req, fp, code, msg, headers, newurl)
        token = req.unredirected_hdrs.get("Authorization")
        old, new = urllib.parse.urlsplit(req.full_url), urllib.parse.urlsplit(newurl)
        if (
            redirected is not None
            and token
            and (old.scheme, old.netloc) == (new.scheme, new.netloc)
        ):
            redirected.add_unredirected_header("Authorization", token)
        return redirected


_media_opener = urllib.request.build_opener(_MediaRedirects)
CHUNK_BYTES = 64 * 1024


@dataclass
class Media:
    content: bytes
    mime_type: str
    sha256: str


# The Cloud API's limits for interactive messages.
MAX_BUTTONS, BUTTON_TITLE_MAX = 3, 20
MAX_ROWS, ROW_TITLE_MAX, ROW_DESCRIPTION_MAX, LIST_BUTTON_MAX = 10, 24, 72, 20
INTERACTIVE_BODY_MAX, OPTION_ID_MAX = 1024, 200
# Errors by which the provider says the customer's client cannot show an interactive
# message (unsupported message type; undeliverable, e.g. an old WhatsApp version).
INTERACTIVE_UNSUPPORTED_CODES = {131051, 131026}


@dataclass(frozen=True)
class ReplyButton:
    """A reply button: ``id`` comes back in the customer's ``button_reply``."""

    id: str
    title: str


@dataclass(frozen=True)
class ListRow:
    """A row of a list message: ``id`` comes back in the customer's ``list_reply``."""

    id: str
    title: str
    description: str = ""


@dataclass(frozen=True)
class OptionList:
    """A list message: the button that opens it and its rows (one section)."""

    button: str
    rows: tuple[ListRow, ...]
    title: str = ""


def options_as_dict(buttons=(), list_: OptionList | None = None) -> dict:
    """How a message's options are stored (``OutboundMessage.options``); {} for none."""
    if buttons:
        return {"type": "buttons", "items": [{"id": b.id, "title": b.title} for b in buttons]}
    if list_ is not None:
        return {
            "type": "list",
            "button": list_.button,
            "title": list_.title,
            "items": [
                {"id": r.id, "title": r.title, "description": r.description} for r in list_.rows
            ],
        }
    return {}


def options_from_dict(options: dict) -> tuple[tuple[ReplyButton, ...], OptionList | None]:
    """The stored options back as (buttons, list)."""
    items = (options or {}).get("items") or []
    if (options or {}).get("type") == "buttons":
        return tuple(ReplyButton(id=i["id"], title=i["title"]) for i in items), None
    if (options or {}).get("type") == "list":
        rows = tuple(
            ListRow(id=i["id"], title=i["title"], description=i.get("description", ""))
            for i in items
        )
        return (), OptionList(
            button=options.get("button", ""), rows=rows, title=options.get("title", "")
        )
    return (), None


def numbered(titles: list[str], *, one_line: bool = False) -> str:
    """The options as the customer reads them in a text: "1. Confirmar", one a line (a
    template's parameter takes no line break: one line then)."""
    return ("; " if one_line else "\n").join(
        f"{n}. {title}" for n, title in enumerate(titles, start=1)
    )


@dataclass
class Outgoing:
    """What to send: free text inside the 24-hour window, a template outside it; reply
    buttons or a list inside the window unless ``as_text`` (the client cannot show them)."""

    to_wa_id: str
    to_user_id: str
    body: str
    template_name: str = ""
    template_language: str = ""
    # (parameter, text) in the template's order; named for templates with {{name}} variables.
    template_parameters: list[tuple[str, str]] = field(default_factory=list)
    template_named: bool = False
    buttons: tuple[ReplyButton, ...] = ()
    list_: OptionList | None = None
    as_text: bool = False

    @property
    def titles(self) -> list[str]:
        return [b.title for b in self.buttons] or [
            r.title for r in (self.list_.rows if self.list_ else ())
        ]

    @property
    def interactive(self) -> bool:
        return bool(self.titles) and not self.as_text and not self.template_name

    def text(self) -> str:
        """The body as sent in a text or a template: the options, if any, numbered after it."""
        if not self.titles:
            return self.body
        if self.template_name:
            return f"{self.body} {numbered(self.titles, one_line=True)}."
        return f"{self.body}\n\n{numbered(self.titles)}"


def interactive_check(outgoing: Outgoing) -> None:
    """Refuse options the Cloud API would refuse: a ValueError saying which limit. Called by
    ``message_send`` before the message is stored, so no backend is handed one."""
    if outgoing.buttons and outgoing.list_ is not None:
        raise ValueError("a message has reply buttons or a list, not both")
    if not outgoing.titles:
        if outgoing.list_ is not None:
            raise ValueError("a list needs at least one row")
        return
    if len(outgoing.body) > INTERACTIVE_BODY_MAX:
        raise ValueError(
            f"an interactive message's body is at most {INTERACTIVE_BODY_MAX} characters "
            f"(this one has {len(outgoing.body)})"
        )
    if len(outgoing.buttons) > MAX_BUTTONS:
        raise ValueError(f"at most {MAX_BUTTONS} reply buttons (got {len(outgoing.buttons)})")
    items = [*outgoing.buttons, *(outgoing.list_.rows if outgoing.list_ else ())]
    limit = BUTTON_TITLE_MAX if outgoing.buttons else ROW_TITLE_MAX
    for item in items:
        if not item.title or len(item.title) > limit:
            raise ValueError(f"option title {item.title!r} must be 1 to {limit} characters")
        if not item.id or len(item.id) > OPTION_ID_MAX:
            raise ValueError(f"option id {item.id!r} must be 1 to {OPTION_ID_MAX} characters")
    if len({item.id for item in items}) != len(items):
        raise ValueError("option ids must differ")
    if outgoing.list_ is not None:
        if len(outgoing.list_.rows) > MAX_ROWS:
            raise ValueError(f"at most {MAX_ROWS} list rows (got {len(outgoing.list_.rows)})")
        if not outgoing.list_.button or len(outgoing.list_.button) > LIST_BUTTON_MAX:
            raise ValueError(
                f"the list's button {outgoing.list_.button!r} "
                f"must be 1 to {LIST_BUTTON_MAX} characters"
            )
        for row in outgoing.list_.rows:
            if len(row.description) > ROW_DESCRIPTION_MAX:
                raise ValueError(
                    f"row description {row.description!r} is longer than {ROW_DESCRIPTION_MAX}"
                )


class ConsoleBackend:
    """Development default: log the message at INFO; the OutboundMessage row is the record.

    Logged, not printed: a Celery worker turns stdout into WARNING "celery.redirected".
    """

    name = "console"

    def send(self, outgoing: Outgoing, *, idempotency_key: str) -> str:
        mode = (
            f"template {outgoing.template_name} ({outgoing.template_language}) "
            f"{[text for _name, text in outgoing.template_parameters]}"
            if outgoing.template_name
            else ("buttons" if outgoing.buttons else "list")
            if outgoing.interactive
            else "text"
        )
        log.info(
            "[whatsapp -> %s] (%s) %s",
            outgoing.to_wa_id or outgoing.to_user_id,
            mode,
            outgoing.text()
            if not outgoing.interactive
            else f"{outgoing.body} [{' | '.join(f'{i}: {t}' for i, t in self._ids(outgoing))}]",
        )
        return f"console.{hashlib.sha256(idempotency_key.encode()).hexdigest()[:24]}"

    @staticmethod
    def _ids(outgoing: Outgoing) -> list[tuple[str, str]]:
        return [
            (item.id, item.title)
            for item in (*outgoing.buttons, *(outgoing.list_.rows if outgoing.list_ else ()))
        ]

    def download_media(
        self, media_id: str, *, max_bytes: int | None = None, mime_type: str = ""
    ) -> Media:
        """No provider to fetch from in development: a placeholder of the type the message
        claims (a one-page PDF, a PNG for an image, else bytes of no accepted type), so the
        flow, the checks and the reviewer's preview work as they do with real media."""
        from processes.whatsapp.samples import sample_pdf, sample_png

        if mime_type.startswith("image/"):
            content = sample_png()
        elif mime_type == "application/pdf":
            content = sample_pdf(f"media {media_id}")
        else:
            content = b"development placeholder of type " + mime_type.encode("ascii", "replace")
        return Media(
            content=content, mime_type=mime_type, sha256=hashlib.sha256(content).hexdigest()
        )


class CloudAPIBackend:
    """Meta's WhatsApp Cloud API: ``POST /<phone-number-id>/messages`` with a bearer token."""

    name = "cloud_api"

    def __init__(self, *, base_url: str, token: str, phone_number_id: str, timeout: float = 15):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.phone_number_id = phone_number_id
        self.timeout = timeout

    def _request(self, url: str, *, body: dict | None = None, interactive: bool = False) -> bytes:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            url, data=data, method="POST" if body is not None else "GET"
        )
        # Unredirected: urllib copies ordinary headers to a redirect's target, any host at all.
        request.add_unredirected_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return response.read()
        except urllib.error.HTTPError as exc:
            raw = exc.read()[:8000]
            detail = raw[:500].decode(errors="replace")
            if interactive and _error_code(raw) in INTERACTIVE_UNSUPPORTED_CODES:
                raise InteractiveUnsupported(f"{exc.code} from {url}: {detail}") from None
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
            template = {
                "name": outgoing.template_name,
                "language": {"code": outgoing.template_language},
            }
            if outgoing.template_parameters:
                template["components"] = [
                    {
                        "type": "body",
                        "parameters": [
                            {
                                "type": "text",
                                "text": text,
                                **({"parameter_name": name} if outgoing.template_named else {}),
                            }
                            for name, text in outgoing.template_parameters
                        ],
                    }
                ]
            message.update(type="template", template=template)
        elif outgoing.interactive:
            message.update(type="interactive", interactive=self._interactive(outgoing))
        else:
            message.update(type="text", text={"body": outgoing.text(), "preview_url": False})
        answer = self._json(
            self._request(
                f"{self.base_url}/{self.phone_number_id}/messages",
                body=message,
                interactive=outgoing.interactive,
            )
        )
        try:
            return answer["messages"][0]["id"]
        except (KeyError, IndexError, TypeError):
            raise ProviderError(f"unexpected answer to a send: {answer!r:.300}") from None

    @staticmethod
    def _interactive(outgoing: Outgoing) -> dict:
        if outgoing.buttons:
            return {
                "type": "button",
                "body": {"text": outgoing.body},
                "action": {
                    "buttons": [
                        {"type": "reply", "reply": {"id": b.id, "title": b.title}}
                        for b in outgoing.buttons
                    ]
                },
            }
        rows = [
            {
                "id": r.id,
                "title": r.title,
                **({"description": r.description} if r.description else {}),
            }
            for r in outgoing.list_.rows
        ]
        return {
            "type": "list",
            "body": {"text": outgoing.body},
            "action": {
                "button": outgoing.list_.button,
                "sections": [
                    {
                        **({"title": outgoing.list_.title} if outgoing.list_.title else {}),
                        "rows": rows,
                    }
                ],
            },
        }

    def download_media(
        self, media_id: str, *, max_bytes: int | None = None, mime_type: str = ""
    ) -> Media:
        """Media id -> a short-lived URL -> the bytes, checked against the provider's sha256.
        (``mime_type``, what the message claims, is not needed: the provider says its own.)

        The id is quoted into one path segment; the URL must pass ``media_url_check``; a
        file the provider says (``file_size``), the server says (Content-Length) or the
        stream shows is larger than ``max_bytes`` is refused without being read whole.
        """
        media_id = str(media_id)
        if media_id in ("", ".", ".."):
            raise MediaRefused(f"{media_id!r} is not a media id")
        max_bytes = (
            max_bytes
            if max_bytes is not None
            else conf.setting("DOCUMENT_MAX_BYTES", 10 * 1024 * 1024)
        )
        meta = self._json(self._request(f"{self.base_url}/{urllib.parse.quote(media_id, safe='')}"))
        if not isinstance(meta, dict) or not isinstance(meta.get("url"), str) or not meta["url"]:
            raise ProviderError(f"no URL for media {media_id}: {meta!r:.300}")
        declared = meta.get("file_size")
        if (
            isinstance(declared, (int, str))
            and str(declared).isdigit()
            and int(declared) > max_bytes
        ):
            raise MediaTooLarge(
                f"media {media_id} is {int(declared)} bytes; the limit is {max_bytes}",
                size=int(declared),
            )
        content = self._fetch_capped(media_url_check(meta["url"]), max_bytes=max_bytes)
        digest = hashlib.sha256(content).hexdigest()
        if meta.get("sha256") and meta["sha256"] != digest:
            raise ProviderError(
                f"media {media_id}: sha256 mismatch (expected {meta['sha256']}, got {digest})"
            )
        return Media(content=content, mime_type=str(meta.get("mime_type") or ""), sha256=digest)

    def _fetch_capped(self, url: str, *, max_bytes: int) -> bytes:
        request = urllib.request.Request(url, method="GET")
        request.add_unredirected_header("Authorization", f"Bearer {self.token}")
        chunks, total = [], 0
        try:
            with _media_opener.open(request, timeout=self.timeout) as response:
                length = response.headers.get("Content-Length") or ""
                if length.isdigit() and int(length) > max_bytes:
                    raise MediaTooLarge(
                        f"{url[:200]} is {length} bytes; the limit is {max_bytes}", size=int(length)
                    )
                while chunk := response.read(CHUNK_BYTES):
                    total += len(chunk)
                    if total > max_bytes:
                        raise MediaTooLarge(
                            f"{url[:200]} is more than {max_bytes} bytes", size=total
                        )
                    chunks.append(chunk)
        except urllib.error.HTTPError as exc:
            raise ProviderError(f"{exc.code} from {url[:200]}") from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise ProviderError(f"cannot fetch {url[:200]}: {exc}") from None
        return b"".join(chunks)

    @staticmethod
    def _json(raw: bytes) -> dict:
        try:
            return json.loads(raw)
        except ValueError:
            raise ProviderError(
                f"the provider answered with something other than JSON: {raw[:200]!r}"
            ) from None


def _error_code(raw: bytes) -> int | None:
    """The Graph API error's code in an error answer, if it has one."""
    try:
        code = json.loads(raw)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return None
    return code if isinstance(code, int) else None


BACKENDS = {"console": ConsoleBackend, "cloud_api": CloudAPIBackend}


def get_backend():
    """The backend named by WHATSAPP_BACKEND (``console``, ``cloud_api`` or a dotted path)."""
    name = conf.setting("WHATSAPP_BACKEND", "console")
    if name == "cloud_api":
        return CloudAPIBackend(
            base_url=conf.setting("WHATSAPP_API_BASE_URL"),
            token=conf.secret("WHATSAPP_ACCESS_TOKEN"),
            phone_number_id=conf.secret("WHATSAPP_PHONE_NUMBER_ID"),
        )
    cls = BACKENDS.get(name) or import_string(name)
    return cls()
