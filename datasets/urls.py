from django.urls import path

from datasets import codebook_views, declare_views, reading_views, register_views, views

app_name = "datasets"
urlpatterns = [
    path("upload/<uslug:project_slug>/", views.DatasetUploadView.as_view(), name="upload"),
    path(
        "register/<uslug:project_slug>/",
        register_views.DatasetRegisterView.as_view(),
        name="register",
    ),
    path("project/<uslug:project_slug>/", views.DatasetListView.as_view(), name="list"),
    path("<int:pk>/", views.DatasetDetailView.as_view(), name="detail"),
    path("<int:pk>/reading/", reading_views.DatasetReadingView.as_view(), name="reading"),
    path("<int:pk>/status.json", views.DatasetStatusView.as_view(), name="status"),
    path("<int:pk>/declare/", declare_views.DatasetDeclareView.as_view(), name="declare"),
    path("<int:pk>/codebook/", codebook_views.DatasetCodebookView.as_view(), name="codebook"),
    path(
        "<int:pk>/codebook.csv",
        codebook_views.DatasetCodebookExportView.as_view(),
        name="codebook_export",
    ),
    path("<int:pk>/confirm-unit/", views.DatasetConfirmUnitView.as_view(), name="confirm_unit"),
    path("<int:pk>/delete/", views.DatasetDeleteView.as_view(), name="delete"),
    path("<int:pk>/texts/", views.DatasetTextsView.as_view(), name="texts"),
]
