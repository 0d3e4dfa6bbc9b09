# Limit tickets: a run's place at a concurrency or rate limit (durable.limit).

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('durable', '0006_schedules'),
    ]

    operations = [
        migrations.CreateModel(
            name='LimitTicket',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('limit_name', models.CharField(max_length=100)),
                ('limit_key', models.CharField(blank=True, default='', max_length=255)),
                ('position', models.PositiveIntegerField()),
                ('state', models.CharField(choices=[('waiting', 'Waiting'), ('held', 'Held'), ('released', 'Released')], max_length=16)),
                ('fencing_token', models.PositiveBigIntegerField(default=0)),
                ('queue', models.CharField(blank=True, default='', max_length=200)),
                ('queued_at', models.DateTimeField()),
                ('wake_at', models.DateTimeField(blank=True, null=True)),
                ('granted_at', models.DateTimeField(blank=True, null=True)),
                ('released_at', models.DateTimeField(blank=True, null=True)),
                ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='limit_tickets', to='durable.workflowrun')),
            ],
            options={
                'ordering': ['queued_at', 'id'],
                'indexes': [models.Index(fields=['limit_name', 'limit_key', 'state'], name='durable_ticket_limit')],
                'constraints': [models.UniqueConstraint(condition=models.Q(('state__in', ['waiting', 'held'])), fields=('run', 'position'), name='durable_ticket_run_position')],
            },
        ),
    ]
