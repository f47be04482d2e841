from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"

    def ready(self) -> None:
        # Configure the Celery app whenever Django starts, so that tasks enqueued from
        # the web process use the broker named in settings.
        import dpportal.celery  # noqa: F401
