"""``durable token create|list|revoke``: the REST API's tokens, over durable.features.tokens.

``create`` prints the secret once; nothing can show it again, ``list`` included.
"""

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from durable.features import tokens
from durable.models import TokenScope
from durable.surfaces.cli._common import USAGE_ERROR, table, when

help = "Create, list and revoke REST API tokens (stored as digests, scoped, expiring)."


def add_arguments(parser):
    actions = parser.add_subparsers(dest="token_action", metavar="ACTION")
    actions.required = True
    create = actions.add_parser("create", help="a new token for a user; prints its secret, once")
    create.add_argument("username")
    create.add_argument(
        "--scope",
        required=True,
        choices=TokenScope.values,
        help="read: GET, HEAD, OPTIONS only; operate: also start, signal, cancel, retry, ...",
    )
    create.add_argument(
        "--days",
        type=int,
        default=None,
        help="valid for this many days (default DURABLE_API_TOKEN_DAYS)",
    )
    create.add_argument("--name", default="", help="what the token is for, e.g. erp-sync")
    actions.add_parser(
        "list", help="every token: id, prefix, user, scope, dates and state (never a secret)"
    )
    revoke = actions.add_parser("revoke", help="refuse a token from now on")
    revoke.add_argument("id", type=int, help="the token's id, as listed")


def handle(options, out) -> int:
    action = options["token_action"]
    if action == "list":
        return _list(out)
    if action == "revoke":
        token = tokens.token_revoke(options["id"])
        owner = token.user.get_username()
        out.write(
            f"token {token.pk} ({token.prefix}…, {owner}) revoked at {when(token.revoked_at)}"
        )
        return 0
    users = get_user_model().objects
    try:
        user = users.get_by_natural_key(options["username"])
    except users.model.DoesNotExist:
        raise CommandError(
            f"no user named {options['username']!r}", returncode=USAGE_ERROR
        ) from None
    try:
        issued = tokens.token_create(
            user, scope=options["scope"], days=options["days"], name=options["name"]
        )
    except ValueError as error:
        raise CommandError(str(error), returncode=USAGE_ERROR) from None
    token = issued.token
    out.write(
        f"token {token.pk} for {user.get_username()}, scope "
        f"{token.scope}, expires {when(token.expires_at)}"
    )
    out.write(
        "The secret follows; it is shown this once and stored nowhere "
        "(send it as 'Authorization: Token <secret>'):"
    )
    out.write(issued.secret)
    return 0


def _list(out) -> int:
    rows = list(tokens.tokens_listed())
    if not rows:
        out.write("no API tokens")
        return 0
    out.write(
        table(
            [
                [
                    t.pk,
                    f"{t.prefix}…",
                    t.user.get_username(),
                    t.scope,
                    t.name,
                    when(t.created_at),
                    when(t.expires_at),
                    when(t.last_used_at),
                    tokens.token_state(t),
                ]
                for t in rows
            ],
            ["id", "prefix", "user", "scope", "name", "created", "expires", "last used", "state"],
        )
    )
    return 0
