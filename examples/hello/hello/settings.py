"""A minimal Django project on the installed engine: SQLite, no broker, no Celery.

Runs advance in the process that starts or signals them (``DURABLE_DISPATCHER = "inline"``),
so the example needs no worker; a real project sets ``DURABLE_DISPATCHER = "celery"``.
"""

import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent

SECRET_KEY = os.environ.get("SECRET_KEY", "example-only-not-secret")
DEBUG = True
ALLOWED_HOSTS = ["localhost", "127.0.0.1"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "durable",
    "hello",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]

ROOT_URLCONF = "hello.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": BASE_DIR / "db.sqlite3",
    },
}

USE_TZ = True
TIME_ZONE = "UTC"
STATIC_URL = "static/"

# The engine's settings (durable/README.md lists them all).
DURABLE_DISPATCHER = "inline"
# hello/workflows.py is found by the app registry (every installed app's workflows module);
# DURABLE_WORKFLOW_MODULES lists workflow modules anywhere else.
DURABLE_VAR_DIR = BASE_DIR / "var"
