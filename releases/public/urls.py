from django.urls import path

from releases.public import verify_views
from releases.public import views as public_views

app_name = "public"
urlpatterns = [
    path("", public_views.PublicHomeView.as_view(), name="home"),
    path("favicon.ico", public_views.FaviconView.as_view(), name="favicon"),
    path("verify/", verify_views.VerifyGuideView.as_view(), name="verify"),
    path(
        "verify/dpportal_verify.py", verify_views.VerifyScriptView.as_view(), name="verify-script"
    ),
    path(
        "schemas/release-record.schema.json",
        public_views.ReleaseRecordSchemaView.as_view(),
        name="release-record-schema",
    ),
    path("p/<uslug:slug>/", public_views.ProjectDashboardView.as_view(), name="project"),
    path(
        "p/<uslug:slug>/releases/<int:release_id>/",
        public_views.ReleasePageView.as_view(),
        name="release",
    ),
    path(
        "p/<uslug:slug>/releases/<int:release_id>/data.json",
        public_views.ReleaseDataJsonView.as_view(),
        name="release-json",
    ),
    path(
        "p/<uslug:slug>/releases/<int:release_id>/record.json",
        public_views.ReleaseRecordJsonView.as_view(),
        name="release-record",
    ),
    path(
        "p/<uslug:slug>/releases/<int:release_id>/data.csv",
        public_views.ReleaseDataCsvView.as_view(),
        name="release-csv",
    ),
]
