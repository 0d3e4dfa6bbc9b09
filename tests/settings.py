"""Test settings: the project's settings plus a table for counting effects and test workflows."""

import os
import secrets

os.environ.setdefault("DURABLE_DISPATCHER", "none")
# The suite's assertions read English; the i18n tests ask for pt-BR explicitly and check the
# project's own default (pt-br) separately.
os.environ.setdefault("LANGUAGE_CODE", "en")
# The tests run with DEBUG off, as production does, so they bring a key of their own (one per
# session, in the environment so that worker subprocesses share it).
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
# Every client of the test database names itself (libpq reads PGAPPNAME), worker subprocesses
# included unless a test names them otherwise. Behind a pooler a server session keeps the
# application_name of its last client unless the next one sends its own, and the fault tests
# end the sessions named as their workers are: without a name of its own, the test process
# could end the session it was running on.
os.environ.setdefault("PGAPPNAME", "durable-tests")

from config.settings import *  # noqa: E402,F403
from config.settings import DURABLE_WORKFLOW_MODULES, INSTALLED_APPS  # noqa: E402

INSTALLED_APPS = [*INSTALLED_APPS, "tests.effects"]
DURABLE_WORKFLOW_MODULES = [
    *DURABLE_WORKFLOW_MODULES,
    "tests.durable.workflows",
    "tests.faults.workflows",
    "tests.durable.limited",
    "tests.topologies.workflows",
]
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
DURABLE_STRICT = True  # workflow bodies that break replay fail the tests

# Secrets for signed test webhooks (never used outside tests).
WHATSAPP_APP_SECRET = "test-app-secret"
WHATSAPP_VERIFY_TOKEN = "test-verify-token"
PAYMENTS_WEBHOOK_SECRET = "test-payments-secret"
WHATSAPP_BACKEND = "console"
# A delivery is processed at the webhook's commit, so a test sees its run at once; the
# worker path is tested with real workers (tests/processes/test_intake_on_workers.py).
WHATSAPP_INTAKE = os.environ.get("WHATSAPP_INTAKE", "inline")
DOCUMENT_CHECKER = "rules"
