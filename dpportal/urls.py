from django.contrib import admin
from django.urls import include, path, register_converter
from django.views.decorators.csrf import csrf_exempt
from django.views.i18n import set_language

from dpportal.converters import UnicodeSlugConverter

# before the apps' URLconfs are included: they name project slugs <uslug:...>
register_converter(UnicodeSlugConverter, "uslug")

urlpatterns = [
    path("admin/", admin.site.urls),
    # The language switcher on every page POSTs here (Django's set_language sets the
    # language cookie, then returns to `next` if it is on this site). CSRF-exempt on
    # purpose: the switcher sits on cached public pages, which cannot carry a per-reader
    # token, and a forged POST can only change the language a page is shown in.
    path("i18n/setlang/", csrf_exempt(set_language), name="set_language"),
    path("accounts/", include("accounts.urls")),
    # a budget request's page and decision (releases: they show and move the release)
    path("projects/requests/", include("releases.review.urls")),
    path("projects/", include("budgets.urls")),
    path("datasets/", include("datasets.urls")),
    path("releases/", include("releases.urls")),
    path("api/", include("dpportal.api_urls")),
    path("registry/", include("budgets.public_urls")),
    path("", include("releases.public.urls")),
]
