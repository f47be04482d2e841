"""A test-only number style (thin-space groups, decimal comma) for zh_Hans: proves the pages
take their separators from the active locale's formats, not from a fixed style."""

DECIMAL_SEPARATOR = ","
THOUSAND_SEPARATOR = "\u2009"
NUMBER_GROUPING = 3
DATE_FORMAT = "Y年n月j日"
