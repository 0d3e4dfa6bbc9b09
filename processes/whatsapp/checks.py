"""System checks of the WhatsApp channel: the templates' configuration, and templates Meta
stopped (with the database)."""

from django.core import checks
from django.db import DatabaseError

from processes import conf
from processes.whatsapp import templates
from processes.whatsapp.selectors import templates_blocked, templates_unconfirmed


def check_templates(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """System check: every purpose has a template with a name and a language, taking only
    parameters its sender provides."""
    problems = []
    configured = templates.configured()
    if not isinstance(configured, dict):
        return [
            checks.Error(
                "WHATSAPP_TEMPLATES must be a dict of purpose -> template", id="processes.E201"
            )
        ]
    for purpose in templates.PURPOSES:
        entry = configured.get(purpose)
        if not isinstance(entry, dict):
            problems.append(
                checks.Error(
                    f"WHATSAPP_TEMPLATES has no template for {purpose!r}",
                    hint="add {'name': ..., 'language': 'pt_BR', 'parameters': [...]}",
                    id="processes.E201",
                )
            )
            continue
        for key in ("name", "language"):
            if not isinstance(entry.get(key), str) or not entry[key].strip():
                problems.append(
                    checks.Error(
                        f"WHATSAPP_TEMPLATES[{purpose!r}] has no {key}", id="processes.E202"
                    )
                )
        parameters = entry.get("parameters", ("body",))
        if not isinstance(parameters, (list, tuple)):
            parameters = [parameters]
        unknown = [p for p in parameters if p not in templates.PURPOSES[purpose]]
        if unknown:
            problems.append(
                checks.Error(
                    f"WHATSAPP_TEMPLATES[{purpose!r}] takes "
                    f"{unknown}, which its sender does not provide",
                    hint=f"a {purpose} message provides {', '.join(templates.PURPOSES[purpose])}",
                    id="processes.E203",
                )
            )
    for purpose in configured.keys() - templates.PURPOSES.keys():
        problems.append(
            checks.Warning(
                f"WHATSAPP_TEMPLATES[{purpose!r}] is for no purpose the processes send",
                id="processes.W201",
            )
        )
    return problems


def check_template_statuses(
    app_configs=None, databases=None, **kwargs
) -> list[checks.CheckMessage]:
    """System check (with the database): a configured template Meta rejected, paused or
    disabled; and one Meta never reported approved, which may not exist at Meta at all (Meta
    reports a template's status when it changes: an approved template of an older deployment
    has no row until then, hence a warning, never an error)."""
    try:
        blocked = templates_blocked()
        # Only where messages go to Meta: the console backend (development, the demo) sends none.
        unconfirmed = (
            templates_unconfirmed()
            if conf.setting("WHATSAPP_BACKEND", "console") == "cloud_api"
            else []
        )
    except DatabaseError:  # migrate checks before it creates the tables
        return []
    problems = []
    if unconfirmed:
        listed = ", ".join(f"{name} ({language})" for name, language in unconfirmed)
        problems.append(
            checks.Warning(
                f"WhatsApp templates with no approval recorded from Meta: {listed}",
                hint=(
                    "make sure each exists and is approved in WhatsApp Manager, or name another in "
                    "WHATSAPP_TEMPLATE_<PURPOSE>; a template Meta does not know fails every send"
                ),
                id="processes.W203",
            )
        )
    return problems + [
        checks.Warning(
            f"WhatsApp template {row.name} ({row.language}) is {row.status}"
            + (f": {row.reason}" if row.reason else ""),
            hint="messages of its purpose outside the 24-hour window will fail; "
            "fix the template in WhatsApp Manager or configure another",
            id="processes.W202",
        )
        for row in blocked
    ]


def register_checks() -> None:
    checks.register(check_templates, "processes")
    checks.register(check_template_statuses, "processes", checks.Tags.database)
