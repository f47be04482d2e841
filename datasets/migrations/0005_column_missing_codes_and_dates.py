from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("datasets", "0004_dataset_read_options"),
    ]

    operations = [
        migrations.AddField(
            model_name="column",
            name="missing_codes",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name="column",
            name="date",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
