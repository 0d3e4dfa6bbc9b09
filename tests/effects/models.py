from django.db import models


class Effect(models.Model):
    """One row per time a test step's body actually ran."""

    run_id = models.CharField(max_length=255)
    name = models.CharField(max_length=255)
    idempotency_key = models.CharField(max_length=255, blank=True, default="")
    worker = models.CharField(max_length=255, blank=True, default="")  # the Celery node that ran it
    created_at = models.DateTimeField(auto_now_add=True)


class Once(models.Model):
    """An effect that must happen exactly once: unique on its key."""

    key = models.CharField(max_length=255, unique=True)
