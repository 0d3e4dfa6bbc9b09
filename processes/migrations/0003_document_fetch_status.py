"""Documents record whether their bytes were fetched (issue 13: nothing unfetched is counted);
a company can be withdrawn by its customer."""
from django.conf import settings
from django.db import migrations, models


def fetch_status_from_rows(apps, schema_editor):
    """A row with a file was stored; one whose recorded size passes the limit was refused for
    it; anything else has not been fetched yet (the next validation asks for it)."""
    Document = apps.get_model("processes", "Document")
    max_bytes = getattr(settings, "DOCUMENT_MAX_BYTES", 10 * 1024 * 1024)
    Document.objects.exclude(file="").update(fetch_status="stored")
    Document.objects.filter(file="", size__gt=max_bytes).update(fetch_status="too_large")


class Migration(migrations.Migration):

    dependencies = [("processes", "0002_webhook_deliveries_and_long_sender_ids")]

    operations = [
        migrations.AddField(
            model_name="document", name="fetch_status",
            field=models.CharField(choices=[
                ("pending", "Not downloaded yet"), ("stored", "Downloaded and stored"),
                ("too_large", "Refused: larger than the limit"),
                ("refused", "Refused: not a PDF, JPEG or PNG, or an address we do not fetch"),
                ("failed", "Download failed")], default="pending", max_length=16)),
        migrations.AddField(model_name="document", name="fetch_note",
                            field=models.CharField(blank=True, max_length=300)),
        migrations.RunPython(fetch_status_from_rows, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="company", name="status",
            field=models.CharField(choices=[
                ("collecting", "Collecting documents"), ("in_review", "In compliance review"),
                ("approved", "Approved (account open)"), ("rejected", "Rejected"),
                ("closed", "Closed (deadline passed)"), ("withdrawn", "Withdrawn by the customer")],
                default="collecting", max_length=16)),
    ]
