"""Who and where an operator request came from, for the audit events the services write."""

import getpass
import socket


def request_audit(request, *, via: str) -> tuple[str, dict]:
    """Return (actor, audit detail) for a request: the user, IP, user agent and path.

    The IP is REMOTE_ADDR: a forwarded-for header is set by the client and proves nothing
    unless a trusted proxy rewrites it, so it is recorded beside it, never instead of it.
    """
    user = getattr(request, "user", None)
    actor = user.get_username() if user is not None and user.is_authenticated else "anonymous"
    meta = request.META
    detail = {
        "via": via,
        "user": actor,
        "ip": meta.get("REMOTE_ADDR", ""),
        "user_agent": meta.get("HTTP_USER_AGENT", "")[:500],
        "path": request.get_full_path()[:1000],
    }
    forwarded = meta.get("HTTP_X_FORWARDED_FOR")
    if forwarded:
        detail["forwarded_for"] = forwarded[:500]
    return actor, detail


def command_audit() -> dict:
    """Who ran a management command, for the audit event: the OS user and the host, as the
    services take them (``actor=``, ``audit=``)."""
    try:
        user = getpass.getuser()
    except Exception:
        user = "unknown"
    return {
        "actor": f"cli:{user}",
        "audit": {"via": "cli", "user": user, "host": socket.gethostname()},
    }
