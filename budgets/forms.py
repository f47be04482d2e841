"""Forms of the budget pages: shape only; the services validate the values."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from budgets.models import Membership
from budgets.services import COMMENT_MAX_LENGTH


class ProjectCreateForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=200)
    name_zh = forms.CharField(
        label=_("Name in Chinese"),
        max_length=200,
        required=False,
        widget=forms.TextInput(attrs={"lang": "zh-Hans"}),
        help_text=_("Readers of Chinese see these texts; the others see the English ones."),
    )
    slug = forms.SlugField(
        label=_("Address"),
        max_length=80,
        required=False,
        allow_unicode=True,
        help_text=_("Short name used in addresses; from the name."),
    )
    description = forms.CharField(
        label=_("Description"),
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=_("What the data is used for (public)."),
    )
    description_zh = forms.CharField(
        label=_("Description in Chinese"),
        widget=forms.Textarea(attrs={"rows": 3, "lang": "zh-Hans"}),
        required=False,
    )
    privacy_unit_description = forms.CharField(
        label=_("Privacy unit"),
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=_("Who is protected, e.g. 'one respondent of the 2026 survey' (public)."),
    )
    privacy_unit_description_zh = forms.CharField(
        label=_("Privacy unit in Chinese"),
        widget=forms.Textarea(attrs={"rows": 2, "lang": "zh-Hans"}),
        required=False,
    )
    # Text, not DecimalField: exact decimals are parsed and explained by the services.
    epsilon_cap = forms.CharField(label=_("Epsilon cap"), max_length=40, initial="1")
    delta_cap = forms.CharField(label=_("Delta cap"), max_length=40, initial="0")


class MemberAddForm(forms.Form):
    username = forms.CharField(label=_("Username"), max_length=150)
    role = forms.ChoiceField(label=_("Role"), choices=Membership.Role.choices)


class CapsForm(forms.Form):
    epsilon_cap = forms.CharField(label=_("Epsilon cap"), max_length=40)
    delta_cap = forms.CharField(label=_("Delta cap"), max_length=40)
    note = forms.CharField(label=_("Note"), max_length=500, required=False)


class DecisionForm(forms.Form):
    comment = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        max_length=COMMENT_MAX_LENGTH,
        error_messages={
            "max_length": _("The comment may be at most %(limit_value)s characters long.")
        },
    )
