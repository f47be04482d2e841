"""The PUBLIC labels of a categorical column's codes, in English and Simplified Chinese.

A code ("1") stays what the data holds and what every computation matches; its
label ("Male", "男") is what a reader sees beside or instead of it. Labels are stored
in Column.category_labels as code -> {"en": ..., "zh-hans": ...} (dpportal.bilingual)
and come from three places, all validated here the same way:

- the API and a codebook: a mapping code -> text (taken as English) or
  {"en": ..., "zh-hans": ...};
- the declaration page: one line per code, "code = label", one box per language;
- a Stata or SPSS file's value labels (the page's "Use the value labels"): a label
  holding Chinese characters fills the Chinese box, any other the English one
  (`value_label_lines`); the owner may move or translate them before saving.

Rules: a label only for a declared code, at most LABEL_MAX_CHARS characters, no
invisible direction control (dpportal.bidi), and two codes may not share one label
in the same language (ignoring case and surrounding spaces), nor may a label be
another declared code: a reader could not tell the categories apart.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from django.utils.translation import gettext

from datasets.models import Column
from dpportal.bidi import bidi_controls_in, shown
from dpportal.bilingual import EN, LABEL_MAX_CHARS, ZH

LANGUAGES = (EN, ZH)
#: the CJK ideographs (and their punctuation): a value label holding one is Chinese
_CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")
MAX_LINE_ERRORS = 10


def is_chinese(text: str) -> bool:
    """True when `text` holds a CJK character (then it is taken as the Chinese label)."""
    return bool(_CJK.search(text or ""))


def value_label_lines(value_labels: list) -> dict[str, str]:
    """A file's value labels ([[code, label], ...]) as the page's two boxes of
    "code = label" lines: Chinese labels in the Chinese box, the others in the English."""
    boxes: dict[str, list[str]] = {EN: [], ZH: []}
    for code, label in value_labels or []:
        text = " ".join(str(label).split())
        if text:
            boxes[ZH if is_chinese(text) else EN].append(f"{code} = {text}")
    return {language: "\n".join(lines) for language, lines in boxes.items()}


def labels_as_lines(labels: Mapping | None, categories: list[str]) -> dict[str, str]:
    """Stored labels as the page's two boxes, in the order of the declared categories."""
    boxes: dict[str, list[str]] = {EN: [], ZH: []}
    for code in categories or []:
        entry = (labels or {}).get(str(code)) or {}
        for language in LANGUAGES:
            if entry.get(language):
                boxes[language].append(f"{code} = {entry[language]}")
    return {language: "\n".join(lines) for language, lines in boxes.items()}


def _parse_lines(text: object, language: str, errors: list[str]) -> dict[str, str]:
    """'code = label' lines (the first '=' splits them) as code -> label."""
    out: dict[str, str] = {}
    bad = []
    for raw in str(text or "").replace("\r", "").split("\n"):
        line = raw.strip()
        if not line:
            continue
        code, equals, label = line.partition("=")
        if not equals or not code.strip():
            bad.append(line)
            continue
        code = code.strip()
        if code in out:
            errors.append(
                gettext("the code '%(code)s' is given two labels in one language.")
                % {"code": shown(code[:50])}
            )
        out[code] = label.strip()
    if bad:
        errors.append(
            gettext("write each label as 'code = label' on its own line, not: %(lines)s.")
            % {"lines": "; ".join(shown(b[:50]) for b in bad[:MAX_LINE_ERRORS])}
        )
    return out


def _given(spec: Mapping[str, object], errors: list[str]) -> dict[str, dict[str, str]]:
    """code -> {language: text} from the spec's mapping (API, codebook) or its lines (page)."""
    out: dict[str, dict[str, str]] = {}
    mapping = spec.get("category_labels")
    if mapping not in (None, "", {}):
        if not isinstance(mapping, Mapping):
            errors.append(
                gettext(
                    'category labels must map each code to a label or to {"en": ..., '
                    '"zh-hans": ...}.'
                )
            )
            return out
        for code, value in mapping.items():
            if isinstance(value, Mapping):
                extra = sorted(str(k) for k in value if k not in LANGUAGES)
                if extra:
                    errors.append(
                        gettext("a category label may have only the languages: %(languages)s.")
                        % {"languages": ", ".join(LANGUAGES)}
                    )
                    continue
                texts = {lang: value.get(lang) for lang in LANGUAGES}
            else:
                texts = {EN: value, ZH: None}
            if any(t is not None and not isinstance(t, str) for t in texts.values()):
                errors.append(
                    gettext("the label of '%(code)s' must be text.") % {"code": shown(str(code))}
                )
                continue
            out[str(code).strip()] = {lang: (t or "").strip() for lang, t in texts.items()}
    lines = spec.get("category_labels_lines")
    if isinstance(lines, Mapping):
        for language in LANGUAGES:
            for code, text in _parse_lines(lines.get(language), language, errors).items():
                out.setdefault(code, {EN: "", ZH: ""})[language] = text
    return out


def _integer(code: str) -> str:
    try:
        return str(int(code))
    except ValueError:
        return code


def set_category_labels(column: Column, spec: Mapping[str, object], errors: list[str]) -> None:
    """Validate the labels `spec` gives for the column's declared categories and store
    them in column.category_labels (empty when none, or when the column is not
    categorical); append the problems to `errors`.

    Labels sent for a column of another kind are refused, except the page's boxes,
    which a column declared numeric, date or excluded leaves unused (ignored)."""
    column.category_labels = {}
    if column.kind != Column.Kind.CATEGORICAL or column.date:
        if spec.get("category_labels") not in (None, "", {}):
            errors.append(gettext("category labels apply to a categorical column's codes only."))
        return
    problems: list[str] = []
    given = _given(spec, problems)
    if not given:
        errors += problems
        return
    categories = [str(c) for c in column.categories or []]
    if column.suggested_type == Column.Type.INTEGER:  # "01" names the declared code "1"
        given = {_integer(code): texts for code, texts in given.items()}
    declared = set(categories)
    unknown = [code for code in given if code not in declared]
    if unknown:
        problems.append(
            gettext("a label is given for a code that is not a declared category: %(codes)s.")
            % {"codes": ", ".join(shown(c[:50]) for c in unknown[:MAX_LINE_ERRORS])}
        )
    for code, texts in given.items():
        for text in texts.values():
            if len(text) > LABEL_MAX_CHARS:
                problems.append(
                    gettext("the label of '%(code)s' is longer than %(limit)s characters.")
                    % {"code": shown(code[:50]), "limit": LABEL_MAX_CHARS}
                )
            controls = bidi_controls_in(text)
            if controls:
                problems.append(
                    gettext(
                        "the label of '%(code)s' holds the invisible direction control "
                        "%(controls)s, which changes how the text around it is displayed: "
                        "remove it."
                    )
                    % {"code": shown(code[:50]), "controls": ", ".join(controls)}
                )
    for language in LANGUAGES:
        owners: dict[str, str] = {}
        for code in categories:
            text = (given.get(code) or {}).get(language) or ""
            key = text.casefold()
            if not key:
                continue
            if key in owners:
                problems.append(
                    gettext(
                        "the codes '%(first)s' and '%(second)s' have the same label "
                        "'%(label)s': give each category its own label."
                    )
                    % {"first": shown(owners[key][:50]), "second": shown(code[:50]),
                       "label": shown(text[:50])}
                )  # fmt: skip
            owners[key] = code
            if text in declared and text != code:
                problems.append(
                    gettext(
                        "the label of '%(code)s' is '%(label)s', another declared code: "
                        "readers could not tell the two apart."
                    )
                    % {"code": shown(code[:50]), "label": shown(text[:50])}
                )
    errors += problems
    if problems:
        return
    column.category_labels = {
        code: {EN: given[code][EN], ZH: given[code][ZH]}
        for code in categories
        if code in given and (given[code][EN] or given[code][ZH])
    }
