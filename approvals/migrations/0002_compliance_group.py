"""The compliance group: reviewers who may claim and decide approval requests."""
from django.contrib.auth.management import create_permissions
from django.db import migrations


def create_group(apps, schema_editor):
    # Permissions are normally created after all migrations; make ours exist now.
    app_config = apps.get_app_config("approvals")
    app_config.models_module = True
    create_permissions(app_config, apps=apps, verbosity=0)
    app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    permission = Permission.objects.get(content_type__app_label="approvals",
                                        codename="decide_approvalrequest")
    group, _ = Group.objects.get_or_create(name="compliance")
    group.permissions.add(permission)


def remove_group(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name="compliance").delete()


class Migration(migrations.Migration):
    dependencies = [
        ("approvals", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_group, remove_group)]
