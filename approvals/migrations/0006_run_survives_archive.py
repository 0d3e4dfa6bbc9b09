"""A case outlives its run's move to durable's archive: no database constraint on run_id."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('approvals', '0005_labels'),
        ('durable', '0009_archive'),
    ]

    operations = [
        migrations.AlterField(
            model_name='approvalrequest',
            name='run',
            field=models.ForeignKey(db_constraint=False, on_delete=django.db.models.deletion.PROTECT, related_name='approval_requests', to='durable.workflowrun'),
        ),
    ]
