"""REST API of datasets: upload, status and progress, the declaration, the owners' profile.

Reviewers see declared (public) domains only; the profile computed from the data
is for the project's owners. Errors are mapped in dpportal.api.
"""

from datasets.api.declarations import (
    DatasetCodebookApi,
    DatasetConfirmUnitApi,
    DatasetDeclareApi,
)
from datasets.api.profile import DatasetProfileApi
from datasets.api.reading import DatasetReadingApi
from datasets.api.register import DatasetRegisterApi
from datasets.api.uploads import (
    DatasetDeleteApi,
    DatasetDetailApi,
    DatasetListApi,
    DatasetStatusApi,
    DatasetUploadApi,
)

__all__ = [
    "DatasetCodebookApi",
    "DatasetConfirmUnitApi",
    "DatasetDeclareApi",
    "DatasetDeleteApi",
    "DatasetDetailApi",
    "DatasetListApi",
    "DatasetProfileApi",
    "DatasetReadingApi",
    "DatasetRegisterApi",
    "DatasetStatusApi",
    "DatasetUploadApi",
]
