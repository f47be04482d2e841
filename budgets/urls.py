from django.urls import path  # noqa: F401

app_name = "budgets"
urlpatterns: list = []
