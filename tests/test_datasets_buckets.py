"""No declared category may read like dpportal's own cells ("Other", "Missing"): refused
in every language and case, by the page's service, the codebook and the API."""

from __future__ import annotations

import pytest
from django.utils import translation

from datasets.services import dataset_declare, dataset_import_codebook
from dpportal.buckets import bucket_named, bucket_text
from dpportal.errors import ValidationFailed
from tests.test_api_access import client_for, error_of
from tests.test_datasets_declare import VALID, dataset, declared_state  # noqa: F401

pytestmark = pytest.mark.django_db

V1 = "/api/v1"


def with_sex(categories: str) -> dict:
    return {**VALID, "sex": {**VALID["sex"], "categories": categories}}


@pytest.mark.parametrize(
    ("category", "bucket"),
    [
        ("Other", "Other"),
        ("Missing", "Missing"),
        ("other", "Other"),
        ("OTHER", "Other"),
        ("  missing ", "Missing"),
        ("Ｏｔｈｅｒ", "Other"),  # full-width letters: the same after NFKC
        ("(Other)", "Other"),  # the form the pages write the bucket in
        ("其他", "Other"),
        ("缺失", "Missing"),
    ],
)
def test_a_category_named_like_a_bucket_is_refused_and_nothing_changes(
    dataset,  # noqa: F811
    owner,
    category,
    bucket,
):
    dataset_declare(dataset=dataset, actor=owner, columns=VALID, unit="row")
    before = declared_state(dataset)
    with pytest.raises(ValidationFailed) as raised:
        dataset_declare(
            dataset=dataset, actor=owner, columns=with_sex(f"female\n{category}\nmale"), unit="row"
        )
    assert "nothing was saved" in raised.value.message
    (problem,) = raised.value.extra["errors"]["sex"]
    assert f"reads like “{bucket}”" in problem
    assert "rename the category" in problem
    assert f"'{category.strip()} (as answered)'" in problem
    assert declared_state(dataset) == before


def test_the_refusal_names_the_bucket_in_the_owners_language(dataset, owner):  # noqa: F811
    with translation.override("zh-hans"), pytest.raises(ValidationFailed) as raised:
        dataset_declare(dataset=dataset, actor=owner, columns=with_sex("female\nOther"))
    (problem,) = raised.value.extra["errors"]["sex"]
    assert "其他" in problem


def test_a_renamed_category_is_accepted(dataset, owner):  # noqa: F811
    dataset = dataset_declare(
        dataset=dataset, actor=owner, columns=with_sex("female\nOther (as answered)\nmale")
    )
    assert dataset.columns.get(name="sex").categories == ["female", "Other (as answered)", "male"]


def test_the_bucket_names_cover_every_language_and_the_written_form():
    for text in ("Other", "other", "其他", "(其他)", "（其他）", "Missing", "缺失", "(Missing)"):
        assert bucket_named(text) is not None, text
    for text in ("Others", "Other (as answered)", "missing data", "其他人", "female"):
        assert bucket_named(text) is None, text
    with translation.override("zh-hans"):
        assert bucket_named(bucket_text("other")) == "other"


def test_the_codebook_refuses_a_bucket_name_and_saves_nothing(dataset, owner):  # noqa: F811
    dataset_declare(dataset=dataset, actor=owner, columns=VALID, unit="row")
    before = declared_state(dataset)
    content = b"column,kind,categories,missing\nsex,categorical,female|male|Missing,category\n"
    with pytest.raises(ValidationFailed) as raised:
        dataset_import_codebook(dataset=dataset, actor=owner, content=content)
    (problem,) = raised.value.extra["errors"]["__all__"]
    assert "column 'sex'" in problem and "reads like “Missing”" in problem
    assert declared_state(dataset) == before


def test_the_api_refuses_a_bucket_name_and_saves_nothing(dataset, owner):  # noqa: F811
    dataset_declare(dataset=dataset, actor=owner, columns=VALID, unit="row")
    before = declared_state(dataset)
    columns = {
        "person": {"kind": "excluded"},
        "age": {"kind": "numeric", "lower": "18", "upper": "90", "bin_edges": ["18", "90"]},
        "sex": {"kind": "categorical", "categories": ["female", "其他"]},
        "income": {"kind": "numeric", "lower": "0", "upper": "200000"},
        "score": {"kind": "excluded"},
    }
    response = client_for(owner).post(
        f"{V1}/datasets/{dataset.pk}/declare/", {"columns": columns}, format="json"
    )
    error = error_of(response, 400)
    assert "nothing was saved" in error["message"]
    (problem,) = error["details"]["errors"]["sex"]
    assert "reads like “Other”" in problem
    assert declared_state(dataset) == before
