from django.contrib.auth import views as auth_views
from django.contrib.auth.mixins import LoginRequiredMixin
from django.views.generic import TemplateView

from accounts.forms import ThrottledAuthenticationForm
from budgets.models import Membership
from budgets.selectors import budget_request_list_pending_for_reviewer


class LoginView(auth_views.LoginView):
    """Django's login page; a refused attempt answers 429 with the form, a message and
    Retry-After."""

    form_class = ThrottledAuthenticationForm

    def form_invalid(self, form):
        response = super().form_invalid(form)
        if form.throttled:
            response.status_code = 429
            response["Retry-After"] = str(form.refusal.seconds)
        return response


class HomeView(LoginRequiredMixin, TemplateView):
    """The signed-in landing page: my projects and my role in each."""

    template_name = "accounts/home.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["memberships"] = (
            Membership.objects.filter(user=self.request.user)
            .select_related("project")
            .order_by("project__name", "role")
        )
        context["pending_review_count"] = budget_request_list_pending_for_reviewer(
            user=self.request.user
        ).count()
        return context
