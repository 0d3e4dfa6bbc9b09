from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('processes', '0016_interactive_messages'),
    ]

    operations = [
        migrations.AddField(
            model_name='company',
            name='former_user_id',
            field=models.CharField(blank=True, max_length=128, verbose_name='previous business-scoped user id'),
        ),
        migrations.AddField(
            model_name='document',
            name='changes',
            field=models.JSONField(blank=True, default=list, verbose_name='changes by the customer'),
        ),
        migrations.AddField(
            model_name='document',
            name='withdrawn_at',
            field=models.DateTimeField(blank=True, null=True, verbose_name='deleted by the customer at'),
        ),
    ]
