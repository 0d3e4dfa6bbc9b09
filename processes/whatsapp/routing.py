"""Where an inbound message goes: the processes register routers, the channel imports none.

A router takes a stored ``InboundMessage`` and returns ``(status, note, company)``, or None
when the message is not its business; routers are asked in the order they registered
(``processes.apps`` registers onboarding's). As ``approvals.panels.register_case_panel``
does for case pages, this keeps the dependency one way: processes know the channel.
"""

from collections.abc import Callable

Router = Callable[[object], "tuple[str, str, object] | None"]

_routers: list[Router] = []
# Called with each message once its routing is saved, in the same transaction: what waited
# for that message (an edit that came before it) is routed with it, or not at all.
_after_routed: list = []


class NoRouter(LookupError):
    """No registered router took the message."""


def register_inbound_router(router: Router) -> Router:
    if router not in _routers:
        _routers.append(router)
    return router


def unregister_inbound_router(router: Router) -> None:
    if router in _routers:
        _routers.remove(router)


def register_after_routed(hook) -> None:
    if hook not in _after_routed:
        _after_routed.append(hook)


def routed(message) -> None:
    for hook in _after_routed:
        hook(message)


def route(message) -> tuple[str, str, object]:
    for router in _routers:
        routed = router(message)
        if routed is not None:
            return routed
    raise NoRouter(
        f"no process routes {message.message_type!r} messages "
        f"(routers: {', '.join(r.__qualname__ for r in _routers) or 'none registered'})"
    )
