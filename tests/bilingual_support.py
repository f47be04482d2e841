"""A project whose owner wrote some texts in English and Chinese, some in one language
only, and left some statistics unnamed; its release built through the real services
(draft from the API's {"en", "zh-hans"} form, submit, approve, compute in-process,
publish).

`proposed_chinese` puts the proposed Chinese of the names dpportal makes into the
zh-hans catalogue for a test, where the catalogue has none yet (it never replaces one
the catalogue has).
"""

from __future__ import annotations

from decimal import Decimal

from django.utils import translation
from django.utils.translation import trans_real

from releases import compute, lifecycle, services
from releases.models import Release
from tests.releases_support import builder_data, make_dataset

#: the proposed Simplified Chinese of the new msgids this work adds
PROPOSED_ZH = {
    "Rows": "行数",
    "All rows": "全部行",
    "Untitled release": "未命名的发布",
    "Rows with %(column)s = %(category)s": "%(column)s为%(category)s的行数",
    "%(first)s x %(second)s": "%(first)s × %(second)s",
    "Histogram of %(column)s": "%(column)s的直方图",
    "Sum of %(column)s": "%(column)s的总和",
    "Mean of %(column)s": "%(column)s的均值",
    "Most common %(column)s": "最常见的%(column)s",
    "Standard deviation of %(column)s": "%(column)s的标准差",
    "Variance of %(column)s": "%(column)s的方差",
    "Sum of %(column)s by %(groups)s": "按%(groups)s分组的%(column)s总和",
    "Mean of %(column)s by %(groups)s": "按%(groups)s分组的%(column)s均值",
    "Standard deviation of %(column)s by %(groups)s": "按%(groups)s分组的%(column)s标准差",
    "Variance of %(column)s by %(groups)s": "按%(groups)s分组的%(column)s方差",
    "Median of %(column)s": "%(column)s的中位数",
    "Median and quartiles of %(column)s": "%(column)s的中位数和四分位数",
    "Quantiles of %(column)s": "%(column)s的分位数",
}


def proposed_chinese(monkeypatch) -> None:
    """The zh-hans catalogue answers PROPOSED_ZH's msgids it does not translate itself."""
    with translation.override("zh-hans"):
        catalogue = trans_real.translation("zh-hans")
    own = catalogue.gettext

    def gettext(message: str) -> str:
        text = own(message)
        return PROPOSED_ZH.get(message, text) if text == message else text

    monkeypatch.setattr(catalogue, "gettext", gettext)


#: the release's statistics: unnamed (dpportal names them), in both languages, in one
STATISTICS = [
    {"kind": "count"},
    {"kind": "mean", "column": "age", "n_guess": 5000},
    {"kind": "grouped_mean", "column": "income", "group_by": "region", "n_guess": 500},
    {
        "kind": "histogram",
        "column": "region",
        "label": {"en": "Rows by region", "zh-hans": "各地区行数"},
        "description": {"en": "One bar per region.", "zh-hans": "每个地区一个条形。"},
    },
    {"kind": "sum", "column": "income", "label": {"zh-hans": "收入总和"}},
    {"kind": "argmax", "column": "region", "label": "The most common region"},
]


def bilingual_project(project):
    """The shared `project` fixture, named and described in both languages."""
    project.name, project.name_zh = "Census", "人口普查"
    project.description, project.description_zh = "Monthly census figures.", "每月的人口普查数据。"
    project.privacy_unit_description = "One respondent."
    project.privacy_unit_description_zh = ""  # English only: Chinese readers see it
    project.epsilon_cap = Decimal("5")
    project.save()
    return project


def bilingual_dataset(*, project, owner):
    dataset = make_dataset(project=project, owner=owner, rows=2000)
    dataset.name_zh = "调查"
    dataset.save(update_fields=["name_zh"])
    dataset.columns.filter(name="income").update(label="Yearly income", label_zh="年收入")
    dataset.columns.filter(name="region").update(label="Region", label_zh="地区")
    return dataset


def bilingual_release(*, project, owner, reviewer, publish: bool = True) -> Release:
    """A computed (and published) release with the texts above."""
    dataset = bilingual_dataset(project=project, owner=owner)
    data = builder_data(
        dataset,
        statistics=STATISTICS,
        epsilon="1",
        title={"en": "Census wave 1", "zh-hans": "人口普查第一轮"},
        description="Counts of the first wave.",
    )

    release = services.release_save_draft(project=project, actor=owner, data=data)
    release = lifecycle.release_submit(release=release, actor=owner)
    lifecycle.release_approve(release=release, reviewer=reviewer, comment="fine")
    assert compute.release_compute(release_id=release.pk) == "computed"
    release = Release.objects.get(pk=release.pk)
    if publish:
        release = lifecycle.release_publish(release=release, actor=owner)
    return release
