"""dpportal's own cells in a release's public data: marked by their place on the frozen
spec's axes, never by their names (an old declaration may name a category "Other")."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse
from django.utils import translation

from dpportal.buckets import axis_marks, bucket_text, cell_marks
from dpportal.catalogues import compile_all
from tests.public_builders import build_release
from tests.test_e2e_buckets import DECLARED, _old_declaration

pytestmark = pytest.mark.django_db


def test_axis_marks_follow_the_cells_compute_gives():
    cat = {"kind": "categorical", "categories": ["a", "Other"], "missing": "category"}
    assert axis_marks(cat) == ["", "", "other", "missing"]
    assert axis_marks({**cat, "missing": "drop"}) == ["", "", "other"]
    binned = {"kind": "numeric", "bin_edges": ["0", "10", "20"], "missing": "category"}
    assert axis_marks(binned) == ["", "", "missing"]
    assert cell_marks([cat, binned], cells=12, shape=[4, 3])["cell_buckets"] == [
        "", "", "missing", "", "", "missing", "other", "other", "other",
        "missing", "missing", "missing",
    ]  # fmt: skip
    # a count of one category, or cells that are not the axis's: nothing is claimed
    assert cell_marks([cat], cells=1, shape=None) == {}
    assert cell_marks([cat], cells=3, shape=None) == {}


def test_the_json_download_marks_the_buckets_by_place(client, project, owner, reviewer):
    release = build_release(project=project, owner=owner, reviewer=reviewer)
    _old_declaration(release)
    url = reverse("public:release-json", args=[project.slug, release.pk])
    record = json.loads(client.get(url).content)
    hist = record["statistics"][1]
    assert [c["cell"] for c in hist["cells"]] == [*DECLARED, "Other", "Missing"]
    assert [c["bucket"] for c in hist["cells"]] == [None] * 4 + ["other", "missing"]


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_page_writes_each_bucket_once_apart_from_the_categories(
    client, project, owner, reviewer, language
):
    compile_all()
    with translation.override(language):
        buckets = [bucket_text("other"), bucket_text("missing")]
    assert not set(buckets) & {"Other", "Missing", "其他", "缺失"}
    release = build_release(project=project, owner=owner, reviewer=reviewer)
    _old_declaration(release)
    client.cookies["django_language"] = language
    url = reverse("public:release", args=[project.slug, release.pk])
    html = client.get(url).content.decode()
    body = html[html.index('id="table-body-1"') :]
    body = body[: body.index("</tbody>")]
    heads = re.findall(r'<th scope="row"( class="bucket" title="[^"]+")?>([^<]*)</th>', body)
    assert [name for _, name in heads] == [*DECLARED, *buckets]
    assert [bool(bucket) for bucket, _ in heads] == [False] * 4 + [True] * 2
