"""English dates and numbers as dpportal shows them (Django's FORMAT_MODULE_PATH).

Dates are ISO 8601 (2026-11-25): a statistics office's readers meet them in every
country, and Django's English default ("Nov. 25, 2026") reads as American. Numbers group
thousands with commas and mark decimals with a point (dpportal.formatting's own style).
"""

DATE_FORMAT = "Y-m-d"
SHORT_DATE_FORMAT = "Y-m-d"
DATETIME_FORMAT = "Y-m-d H:i"
SHORT_DATETIME_FORMAT = "Y-m-d H:i"
DECIMAL_SEPARATOR = "."
THOUSAND_SEPARATOR = ","
NUMBER_GROUPING = 3
