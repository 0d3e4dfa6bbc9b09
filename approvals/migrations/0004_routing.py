"""Routing (candidate groups), follow-up dates, and the groups the reviewer workbench names."""
from django.db import migrations, models

GROUPS = ("kyc", "kyc-senior", "compliance-supervisor")


def create_groups(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    for name in GROUPS:
        Group.objects.get_or_create(name=name)


class Migration(migrations.Migration):

    dependencies = [
        ("approvals", "0003_audit_chain"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [
        migrations.AddField(
            model_name="approvalrequest",
            name="candidate_groups",
            field=models.ManyToManyField(blank=True, related_name="approval_requests", to="auth.group",
                                         verbose_name="candidate groups"),
        ),
        migrations.AddField(
            model_name="approvalrequest",
            name="follow_up_at",
            field=models.DateTimeField(blank=True, null=True, verbose_name="follow-up date"),
        ),
        migrations.RunPython(create_groups, migrations.RunPython.noop),
    ]
