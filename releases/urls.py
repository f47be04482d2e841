from django.urls import path

from releases import views

app_name = "releases"
urlpatterns = [
    path("new/<uslug:project_slug>/", views.release_builder_view, name="new"),
    path("preview/<uslug:project_slug>/", views.release_preview_view, name="preview"),
    path("check/<uslug:project_slug>/", views.release_private_check_view, name="private_check"),
    path("<int:release_id>/", views.release_detail_view, name="detail"),
    path("<int:release_id>/edit/", views.release_edit_view, name="edit"),
    path("<int:release_id>/status.json", views.release_status_view, name="status"),
    path("<int:release_id>/opendp.py", views.release_opendp_view, name="opendp"),
    path("<int:release_id>/submit/", views.release_submit_view, name="submit"),
    path("<int:release_id>/withdraw/", views.release_withdraw_view, name="withdraw"),
    path("<int:release_id>/publish/", views.release_publish_view, name="publish"),
    path(
        "<int:release_id>/declare-bounds/",
        views.release_declare_bounds_view,
        name="declare_bounds",
    ),
    path("<int:release_id>/clone/", views.release_clone_view, name="clone"),
    path(
        "<int:release_id>/declare-keys/",
        views.release_declare_keys_view,
        name="declare_keys",
    ),
    path("<int:release_id>/approve/", views.release_approve_view, name="approve"),
    path("<int:release_id>/reject/", views.release_reject_view, name="reject"),
]
