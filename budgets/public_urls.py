"""The public epsilon registry: anonymous, stable addresses (HTML and JSON)."""

from django.urls import path

from budgets import views

app_name = "registry"
urlpatterns = [
    path("<uslug:slug>.json", views.registry_json_view, name="project_json"),
    path(
        "<uslug:slug>/deployment.json",
        views.registry_deployment_view,
        name="project_deployment",
    ),
    path("<uslug:slug>/", views.registry_view, name="project"),
]
