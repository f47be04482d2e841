from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("accounts.urls")),
    path("projects/", include("budgets.urls")),
    path("datasets/", include("datasets.urls")),
    path("releases/", include("releases.urls")),
    path("api/", include("dpportal.api_urls")),
    path("registry/", include("budgets.public_urls")),
    path("", include("releases.public_urls")),
]
