"""A published release over a Stata file with value labels, for the category label tests.

The file's `sex` column has English value labels (1 = Male, 2 = Female), its `region`
column Chinese ones (1 = 北方, 2 = 南方). The release is built through the real
services: declared, submitted, approved, computed in-process, published.
"""

from __future__ import annotations

from decimal import Decimal

import pandas as pd
import pyreadstat
from django.core.files.uploadedfile import SimpleUploadedFile

from datasets.models import Dataset
from datasets.services import dataset_create, dataset_declare, dataset_ingest
from releases import compute, lifecycle
from releases.models import Release
from tests.releases_support import submitted

ROWS = 400
STATISTICS = [
    {"kind": "histogram", "column": "sex", "label": "People by sex"},
    {"kind": "count", "column": "sex", "category": "2", "label": "Women"},
    {"kind": "histogram", "column": "sex", "column2": "region", "label": "Sex by region"},
    {"kind": "argmax", "column": "region", "label": "Largest region"},
]
#: with `age` declared numeric: a mean by group, its groups named by the labels too
GROUPED = {"kind": "grouped_mean", "column": "age", "group_by": "sex", "n_guess": 100,
           "label": "Mean age by sex"}  # fmt: skip


def stata_dataset(*, project, owner, tmp_path) -> Dataset:
    df = pd.DataFrame(
        {
            "sex": [1 + (i % 3 == 0) for i in range(ROWS)],
            "region": [1 + (i % 5 == 0) for i in range(ROWS)],
            "age": [20 + i % 50 for i in range(ROWS)],
        }
    )
    path = tmp_path / "labels.dta"
    pyreadstat.write_dta(
        df,
        path,
        variable_value_labels={"sex": {1: "Male", 2: "Female"}, "region": {1: "北方", 2: "南方"}},
    )
    dataset = dataset_create(
        project=project,
        name="labelled survey",
        uploaded_file=SimpleUploadedFile("labels.dta", path.read_bytes()),
        uploaded_by=owner,
        dispatch=False,
    )
    dataset_ingest(dataset_id=dataset.pk)
    dataset.refresh_from_db()
    assert dataset.status == Dataset.Status.READY, dataset.failure_reason
    return dataset


def declare_with_labels(dataset, owner) -> None:
    """The declaration the page makes from the value labels, a Chinese label typed for sex."""
    dataset_declare(
        dataset=dataset,
        actor=owner,
        columns={
            "sex": {
                "kind": "categorical",
                "categories": "1\n2",
                "category_labels_lines": {
                    "en": "1 = Male\n2 = Female",
                    "zh-hans": "1 = 男\n2 = 女",
                },
            },
            "region": {
                "kind": "categorical",
                "categories": "1\n2",
                "category_labels_lines": {"en": "", "zh-hans": "1 = 北方\n2 = 南方"},
            },
            "age": {"kind": "numeric", "lower": "0", "upper": "100"},
        },
        unit="row",
    )


def publish(*, project, owner, reviewer, dataset, statistics=STATISTICS) -> Release:
    project.epsilon_cap = Decimal("5")
    project.save(update_fields=["epsilon_cap"])
    release = submitted(
        project=project, owner=owner, dataset=dataset, statistics=statistics, epsilon="2"
    )
    lifecycle.release_approve(release=release, reviewer=reviewer, comment="fine")
    assert compute.release_compute(release_id=release.pk) == "computed"
    release = Release.objects.get(pk=release.pk)
    return lifecycle.release_publish(release=release, actor=owner)
