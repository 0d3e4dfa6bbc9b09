#!/usr/bin/env python3
"""Play the customer (or the payment provider) against the running app: post a correctly
signed webhook, as WhatsApp's Cloud API or the payment provider would.

  scripts/play_customer.py text "Oi, quero abrir uma conta PJ" --from 5511900000005
  scripts/play_customer.py document "comprovante de endereço" --from 5511900000002
  scripts/play_customer.py image --from 5511900000002            # the selfie
  scripts/play_customer.py pay NF-DEMO-001                        # the payment provider

The app is looked for at --base-url (default: $APP_URL, else http://127.0.0.1:$PORT, else
port 8000): pass it when ./scripts/run was started with --port or PORT in another shell.
The secrets default to the development values of config/settings.py (DEBUG only); set
WHATSAPP_APP_SECRET / PAYMENTS_WEBHOOK_SECRET to what the app was started with.
"""

import argparse
import hashlib
import hmac
import json
import os
import sys
import time
import urllib.error
import urllib.request
import uuid


def post(url: str, payload: dict, secret: str, header: str) -> int:
    body = json.dumps(payload).encode()
    signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", header: signature},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            print(response.status, response.read().decode())
            return 0
    except urllib.error.HTTPError as exc:
        print(exc.code, exc.read().decode(), file=sys.stderr)
        return 1
    except (urllib.error.URLError, OSError) as exc:  # refused, unknown host, timeout
        reason = getattr(exc, "reason", exc)
        print(
            f"cannot reach the app at {url} ({reason}): is ./scripts/run running there? "
            "Pass --base-url (or set APP_URL) if it listens on another port.",
            file=sys.stderr,
        )
        return 2


def default_base_url() -> str:
    return f"http://127.0.0.1:{os.environ.get('PORT') or 8000}"


def whatsapp_payload(options) -> dict:
    message = {
        "id": f"wamid.PLAY.{uuid.uuid4().hex}",
        "timestamp": str(int(time.time())),
        "type": options.kind,
    }
    if options.wa_id:
        message["from"] = options.wa_id
    if options.user_id:
        message["from_user_id"] = options.user_id
    if options.kind == "text":
        message["text"] = {"body": options.words or "Oi!"}
    else:
        media = {
            "id": f"media-{uuid.uuid4().hex[:12]}",
            "caption": options.words or "",
            "mime_type": "application/pdf" if options.kind == "document" else "image/jpeg",
            "sha256": "",
        }
        if options.kind == "document":
            media["filename"] = options.filename or "documento.pdf"
        message[options.kind] = media
    contact = {"profile": {"name": options.name}}
    contact.update({k: v for k, v in (("wa_id", options.wa_id), ("user_id", options.user_id)) if v})
    return {
        "object": "whatsapp_business_account",
        "entry": [
            {
                "id": "PLAY",
                "changes": [
                    {
                        "field": "messages",
                        "value": {
                            "messaging_product": "whatsapp",
                            "metadata": {"phone_number_id": "PLAY"},
                            "contacts": [contact],
                            "messages": [message],
                        },
                    }
                ],
            }
        ],
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    parser.add_argument("kind", choices=["text", "document", "image", "pay"])
    parser.add_argument(
        "words",
        nargs="?",
        default="",
        help="the text, the document's caption, or the invoice number to pay",
    )
    parser.add_argument(
        "--from", dest="wa_id", default="5511900000005", help="sender phone (wa_id)"
    )
    parser.add_argument(
        "--user-id", default="", help="business-scoped user id (instead of or with a phone)"
    )
    parser.add_argument("--name", default="Cliente Demo", help="the profile name")
    parser.add_argument("--filename", default="")
    parser.add_argument(
        "--base-url",
        default=os.environ.get("APP_URL") or default_base_url(),
        help="where the app listens (default: %(default)s)",
    )
    options = parser.parse_args()
    options.base_url = options.base_url.rstrip("/")
    if options.kind == "pay":
        payload = {
            "id": f"evt_{uuid.uuid4().hex[:16]}",
            "type": "payment.succeeded",
            "data": {"invoice": options.words},
        }
        secret = os.environ.get("PAYMENTS_WEBHOOK_SECRET", "dev-payments-secret")
        return post(
            f"{options.base_url}/api/webhooks/payments/", payload, secret, "X-Signature-256"
        )
    secret = os.environ.get("WHATSAPP_APP_SECRET", "dev-whatsapp-app-secret")
    return post(
        f"{options.base_url}/api/webhooks/whatsapp/",
        whatsapp_payload(options),
        secret,
        "X-Hub-Signature-256",
    )


if __name__ == "__main__":
    sys.exit(main())
