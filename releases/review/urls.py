"""The reviewer's pages of a budget request, under /projects/requests/ (dpportal/urls.py)."""

from django.urls import path

from releases.review import views as review_views

app_name = "review"
urlpatterns = [
    path("<int:pk>/", review_views.request_detail_view, name="request_detail"),
    path("<int:pk>/approve/", review_views.request_approve_view, name="request_approve"),
    path("<int:pk>/reject/", review_views.request_reject_view, name="request_reject"),
]
