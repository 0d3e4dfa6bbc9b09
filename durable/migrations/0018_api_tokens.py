"""API tokens stored as digests; the keys of DRF's authtoken table move in and the table goes.

An existing key keeps working (clients change nothing), as an ``operate`` token (what it
could do before) that now expires, MIGRATED_DAYS after the upgrade: time to issue scoped
tokens and retire it. Its plaintext is dropped with the table, whose app is no longer
installed; nothing is restored by reversing.
"""
import hashlib
from datetime import timedelta, timezone as utc_zone

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models
from django.db.migrations.recorder import MigrationRecorder
from django.utils import timezone
from django.utils.dateparse import parse_datetime

OLD_TABLE = "authtoken_token"
MIGRATED_DAYS = 90


def _aware(created):
    if isinstance(created, str):
        created = parse_datetime(created)
    if created is not None and timezone.is_naive(created):
        created = created.replace(tzinfo=utc_zone.utc)
    return created


def move_authtoken_keys(apps, connection):
    if OLD_TABLE not in connection.introspection.table_names():
        return
    ApiToken = apps.get_model("durable", "ApiToken")
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {quote('key')}, {quote('user_id')}, {quote('created')} FROM {quote(OLD_TABLE)}")
        rows = cursor.fetchall()
    now = timezone.now()
    ApiToken.objects.using(connection.alias).bulk_create([
        ApiToken(user_id=user_id, digest=hashlib.sha256(key.encode()).hexdigest(), prefix=key[:8],
                 scope="operate", name="authtoken, before scoped tokens", created_at=_aware(created) or now,
                 expires_at=now + timedelta(days=MIGRATED_DAYS))
        for key, user_id, created in rows])
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE {quote(OLD_TABLE)}")
    # As if the app had never been installed: adding it back would create its table afresh.
    MigrationRecorder(connection).migration_qs.filter(app="authtoken").delete()


def hash_authtoken_keys(apps, schema_editor):
    move_authtoken_keys(apps, schema_editor.connection)


class Migration(migrations.Migration):

    dependencies = [
        ('durable', '0017_labels'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='ApiToken',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('digest', models.CharField(max_length=64, unique=True)),
                ('prefix', models.CharField(max_length=8, verbose_name='prefix')),
                ('scope', models.CharField(choices=[('read', 'read'), ('operate', 'operate')], max_length=16, verbose_name='scope')),
                ('name', models.CharField(blank=True, default='', help_text='What the token is for, e.g. the client that holds it.', max_length=100, verbose_name='name')),
                ('created_at', models.DateTimeField(verbose_name='created at')),
                ('expires_at', models.DateTimeField(verbose_name='expires at')),
                ('last_used_at', models.DateTimeField(blank=True, null=True, verbose_name='last used')),
                ('revoked_at', models.DateTimeField(blank=True, null=True, verbose_name='revoked at')),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='api_tokens', to=settings.AUTH_USER_MODEL, verbose_name='user')),
            ],
            options={
                'verbose_name': 'API token',
                'verbose_name_plural': 'API tokens',
                'ordering': ['-created_at', '-id'],
            },
        ),
        migrations.RunPython(hash_authtoken_keys, migrations.RunPython.noop),
    ]
