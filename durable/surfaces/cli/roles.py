"""``durable roles --app-role NAME [--apply]``: the GRANTs that let the app run as a role that
does not own its tables (PostgreSQL), printed, or applied as the owner."""

from django.db import transaction

from durable.features import db_roles

help = "Print (or, as the tables' owner, apply) the grants of the role the app runs as."


def add_arguments(parser):
    parser.add_argument("--app-role", required=True, help="the role in the app's DATABASE_URL")
    parser.add_argument(
        "--apply",
        action="store_true",
        help="run the statements now; DATABASE_URL must name the tables' owner",
    )


def handle(options, out) -> int:
    try:
        if options["apply"]:
            with transaction.atomic():
                statements = db_roles.apply_grants(options["app_role"])
        else:
            statements = db_roles.grant_statements(options["app_role"])
    except db_roles.RolesUnsupported as error:
        out.write(str(error))
        return 2
    out.write("\n".join(f"{statement};" for statement in statements))
    if options["apply"]:
        out.write(f"-- applied: {len(statements)} statement(s)")
    return 0
