"""Simplified Chinese dates and numbers as dpportal shows them (Django's FORMAT_MODULE_PATH).

Dates in sentences are written the Chinese way (2026年11月25日, Django's own zh_Hans
DATE_FORMAT); in tables, ISO 8601 (2026-11-25), which Chinese statistical tables use too.

Numbers follow CLDR's zh locale, which is what Chinese readers see in Excel, in browsers
and in Windows' regional settings (#,##0.###): thousands grouped in threes with a comma,
a decimal point. Django's zh_Hans formats leave the separator out and group by four
(万), which would print 1234567 for a count of people; GB/T 15835-2011 (numbers in
publications) allows the comma grouping for non-specialist texts.
"""

DATE_FORMAT = "Y年n月j日"
SHORT_DATE_FORMAT = "Y-m-d"
DATETIME_FORMAT = "Y年n月j日 H:i"
SHORT_DATETIME_FORMAT = "Y-m-d H:i"
DECIMAL_SEPARATOR = "."
THOUSAND_SEPARATOR = ","
NUMBER_GROUPING = 3
