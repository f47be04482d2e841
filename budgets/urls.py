from django.urls import path

from budgets import views

app_name = "budgets"
urlpatterns = [
    path("new/", views.project_create_view, name="project_create"),
    path("inbox/", views.inbox_view, name="inbox"),
    path("<uslug:slug>/", views.project_detail_view, name="project_detail"),
    path("<uslug:slug>/budget/", views.project_budget_view, name="project_budget"),
    path("<uslug:slug>/members/", views.project_member_add_view, name="member_add"),
]
