"""What every API view shares, one module per concern.

* `errors`: the one error shape and the exception handler (settings name it);
* `views`: the base views (`ApiView`, `PublicApiView`), input, pagination;
* `authentication`: token and session authentication; `throttling`: rate limits;
* `fields`: exact decimals and user references; `schema`: JSON Schema in OpenAPI.

The apps' APIs import these names from `dpportal.api` itself.
"""

from dpportal.api.errors import (
    MEMBER_ERRORS,
    ErrorSerializer,
    error_responses,
    exception_handler,
)
from dpportal.api.fields import (
    AmountField,
    BilingualOutputField,
    BilingualTextField,
    FailureReasonField,
    UserRefSerializer,
    WarningsField,
    decimal_text,
)
from dpportal.api.schema import openapi_from_json_schema
from dpportal.api.views import (
    PAGINATION_PARAMETERS,
    ApiPagination,
    ApiView,
    PublicApiView,
    paginated,
    paginated_response,
    validated_input,
)

__all__ = [
    "MEMBER_ERRORS",
    "PAGINATION_PARAMETERS",
    "AmountField",
    "BilingualOutputField",
    "BilingualTextField",
    "ApiPagination",
    "ApiView",
    "ErrorSerializer",
    "FailureReasonField",
    "WarningsField",
    "PublicApiView",
    "UserRefSerializer",
    "decimal_text",
    "error_responses",
    "exception_handler",
    "openapi_from_json_schema",
    "paginated",
    "paginated_response",
    "validated_input",
]
