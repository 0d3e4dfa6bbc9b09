from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("effects", "0001_initial")]

    operations = [
        migrations.AddField(model_name="effect", name="worker",
                            field=models.CharField(blank=True, default="", max_length=255)),
    ]
