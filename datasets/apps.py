from django.apps import AppConfig


class DatasetsConfig(AppConfig):
    name = "datasets"

    def ready(self) -> None:
        from datasets import checks  # noqa: F401, PLC0415 - registers the system checks
