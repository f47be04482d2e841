"""The public epsilon registry: anonymous, stable addresses (HTML and JSON)."""

from django.urls import path

from budgets import views

app_name = "registry"
urlpatterns = [
    path("<slug:slug>.json", views.registry_json_view, name="project_json"),
    path("<slug:slug>/", views.registry_view, name="project"),
]
