from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"

    def ready(self) -> None:
        # Configure the Celery app whenever Django starts, so that tasks enqueued from
        # the web process use the broker named in settings.
        from django.contrib import admin

        import dpportal.celery  # noqa: F401
        from accounts.forms import ThrottledAdminAuthenticationForm

        # The admin's login page is limited like ours.
        admin.site.login_form = ThrottledAdminAuthenticationForm
