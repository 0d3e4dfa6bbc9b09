"""The client's address as far as we can trust it: REMOTE_ADDR, or the hop our own proxies saw."""

from django.conf import settings


def client_ip(request) -> str:
    """With TRUSTED_PROXY_COUNT proxies in front, the address the outermost of them saw.

    Each proxy appends the peer it saw to X-Forwarded-For, so the last N entries are ours;
    anything before them was written by the client and proves nothing.
    """
    count = settings.TRUSTED_PROXY_COUNT
    if count:
        hops = [
            hop.strip()
            for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")
            if hop.strip()
        ]
        if len(hops) >= count:
            return hops[-count]
    return request.META.get("REMOTE_ADDR", "")
