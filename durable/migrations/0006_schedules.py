"""Schedules as rows (durable/schedule_models.py) and their append-only, hash-chained audit trail."""

import django.db.models.deletion
from django.db import migrations, models

from durable import chain


class Migration(migrations.Migration):

    dependencies = [
        ('durable', '0005_run_attributes'),
    ]

    operations = [
        migrations.CreateModel(
            name='Schedule',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.SlugField(max_length=100, unique=True)),
                ('workflow_name', models.CharField(max_length=200)),
                ('cron', models.CharField(help_text="Five fields: minute hour day-of-month month day-of-week, e.g. '30 0 * * *'.", max_length=100)),
                ('timezone', models.CharField(default='UTC', help_text="IANA name; the cron and the id's {date} are read in it.", max_length=64)),
                ('id_template', models.CharField(help_text="The run id of an occurrence, e.g. 'reconcile:{date}'. The run id is the occurrence: it never runs twice.", max_length=255)),
                ('args', models.JSONField(blank=True, default=list)),
                ('kwargs', models.JSONField(blank=True, default=dict)),
                ('catch_up', models.CharField(choices=[('all', 'all: each missed occurrence once'), ('latest', 'latest: only the most recent missed occurrence'), ('skip', 'skip: none missed, only from now on')], default='all', max_length=8)),
                ('paused', models.BooleanField(default=False)),
                ('next_fire_at', models.DateTimeField(blank=True, null=True)),
                ('last_fired_at', models.DateTimeField(blank=True, help_text='The occurrence (scheduled time) fired last.', null=True)),
                ('last_run_id', models.CharField(blank=True, default='', max_length=255)),
                ('last_error', models.TextField(blank=True, default='')),
                ('created_at', models.DateTimeField()),
                ('updated_at', models.DateTimeField()),
            ],
            options={
                'ordering': ['name'],
                'permissions': [('operate_schedule', 'Can pause and resume schedules')],
                'indexes': [models.Index(condition=models.Q(('next_fire_at__isnull', False)), fields=['next_fire_at'], name='durable_schedule_due')],
            },
        ),
        migrations.CreateModel(
            name='ScheduleEvent',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('chain_seq', models.PositiveBigIntegerField(default=0, editable=False)),
                ('prev_hash', models.CharField(default='', editable=False, max_length=64)),
                ('row_hash', models.CharField(default='', editable=False, max_length=64)),
                ('action', models.CharField(max_length=32)),
                ('actor', models.CharField(default='system', max_length=255)),
                ('detail', models.JSONField(blank=True, default=dict)),
                ('created_at', models.DateTimeField()),
                ('schedule', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='events', to='durable.schedule')),
            ],
            options={
                'ordering': ['created_at', 'id'],
                'constraints': [models.UniqueConstraint(fields=('schedule', 'chain_seq'), name='durable_schedule_event_chain_seq')],
            },
        ),
        chain.append_only_operation("durable_scheduleevent"),
    ]
