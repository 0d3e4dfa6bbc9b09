"""An invoice can be voided while its reminders are pending (issue 13)."""
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [("processes", "0003_document_fetch_status")]

    operations = [
        migrations.AlterField(
            model_name="invoice", name="status",
            field=models.CharField(choices=[("open", "Open"), ("paid", "Paid"),
                                            ("escalated", "Escalated to finance"), ("voided", "Voided")],
                                   default="open", max_length=16)),
    ]
