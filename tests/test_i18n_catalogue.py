"""Issue 17 acceptance: user-visible template text is marked for translation, the zh-hans
catalogue has no untranslated or fuzzy entry, and it uses the glossary's terms.

Every template is scanned (the third-party pages overridden for the API browser and Swagger
UI aside): none may keep unmarked visible text.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "templates"
PO = ROOT / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"
GLOSSARY = ROOT / "locale" / "glossary.csv"

#: third-party templates overridden for their own pages (the API browser, Swagger UI)
THIRD_PARTY = {"drf_spectacular/swagger_ui.html", "rest_framework/api.html"}
#: message contexts where an English glossary word means something else: a ledger entry's
#: "Release" gives reserved budget back (释放), it is not a statistics release (发布)
GLOSSARY_EXEMPT_CONTEXTS = {"ledger entry"}
#: words that stay as they are in every language
ALLOWED = {"dpportal", "CSV", "JSON", "API", "ID"}

_STRIP = [
    re.compile(r"{#.*?#}", re.S),
    re.compile(r"{%\s*comment\s*%}.*?{%\s*endcomment\s*%}", re.S),
    re.compile(r"<script\b.*?</script>", re.S | re.I),
    re.compile(r"<style\b.*?</style>", re.S | re.I),
    # commands and file names a reader types as they are: code, never prose
    re.compile(r"<code\b.*?</code>", re.S | re.I),
    re.compile(r"{%\s*blocktranslate\b.*?{%\s*endblocktranslate\s*%}", re.S),
]
_ATTRIBUTE = re.compile(r'\b(?:title|aria-label|placeholder|alt)="([^"]*)"')


def unmarked_text(source: str) -> list[str]:
    """The user-visible English left in a template: text nodes and visible attributes."""
    for pattern in _STRIP:
        source = pattern.sub(" ", source)
    source = re.sub(r"{%.*?%}", " ", source, flags=re.S)
    source = re.sub(r"{{.*?}}", " ", source, flags=re.S)
    found = [value for value in _ATTRIBUTE.findall(source)]
    found += re.sub(r"<[^>]*>", "\n", source).splitlines()
    words = []
    for chunk in found:
        for word in re.findall(r"[A-Za-z][A-Za-z']+", chunk):
            if word not in ALLOWED:
                words.append(chunk.strip())
                break
    return words


def all_templates() -> set[str]:
    return {str(p.relative_to(TEMPLATES)) for p in TEMPLATES.rglob("*.html")}


def test_the_scanner_finds_unmarked_text_and_passes_marked_text():
    assert unmarked_text("<p>Hello there</p>") == ["Hello there"]
    assert unmarked_text('<a title="Open it" href="/">{% translate "x" %}</a>') == ["Open it"]
    assert unmarked_text('<p>{% translate "Hello" %} {{ name }}</p>') == []
    assert unmarked_text("{% blocktranslate %}Hi {{ x }}{% endblocktranslate %}") == []
    assert unmarked_text("<script>var words = 1;</script><p>CSV · JSON</p>") == []


def test_the_scan_sees_the_templates():
    assert {"base.html", "releases/builder.html", "budgets/request_detail.html"} <= all_templates()
    assert THIRD_PARTY <= all_templates()


@pytest.mark.parametrize("name", sorted(all_templates() - THIRD_PARTY))
def test_templates_mark_every_visible_string(name):
    assert unmarked_text((TEMPLATES / name).read_text()) == []


def _catalogue():
    with PO.open("rb") as handle:
        return read_po(handle, locale="zh_Hans")


def test_zh_hans_has_no_untranslated_or_fuzzy_entry():
    catalogue = _catalogue()
    assert not catalogue.fuzzy
    bad = [m.id for m in catalogue if m.id and ("fuzzy" in m.flags or not all(_strings(m)))]
    assert bad == []


def test_zh_hans_keeps_every_placeholder():
    for message in _catalogue():
        if not message.id:
            continue
        ids = message.id if isinstance(message.id, tuple) else (message.id,)
        wanted = sorted(re.findall(r"%\(\w+\)[sd]|\{\w*\}", ids[-1]))
        for text in _strings(message):
            assert sorted(re.findall(r"%\(\w+\)[sd]|\{\w*\}", text)) == wanted, message.id


def _strings(message) -> tuple[str, ...]:
    return message.string if isinstance(message.string, tuple) else (message.string,)


def _glossary() -> list[tuple[str, str]]:
    with GLOSSARY.open(encoding="utf-8") as handle:
        return [(row["english"], row["chinese"]) for row in csv.DictReader(handle)]


def test_glossary_has_the_issue_terms():
    terms = dict(_glossary())
    assert terms["differential privacy"] == "差分隐私"
    assert terms["privacy budget"] == "隐私预算"
    assert terms["Laplace mechanism"] == "拉普拉斯机制"
    assert terms["Gaussian mechanism"] == "高斯机制"


def glossary_misses(pairs) -> list[tuple[str, str, str]]:
    """(msgid, term, word) wherever the English names a glossary term the Chinese lacks."""
    misses = []
    for english, translations in pairs:
        english = re.sub(r"%\(\w+\)[sd]|<[^>]*>", " ", english)  # placeholders and tags
        for term, chinese in _glossary():
            if re.search(r"\b" + re.escape(term.lower()) + r"s?\b", english.lower()):
                if not all(chinese in text for text in translations):
                    misses.append((english, term, chinese))
    return misses


def test_the_glossary_check_catches_a_wrong_term():
    assert glossary_misses([("The privacy budget left", ("剩余的隐私额度",))]) == [
        ("The privacy budget left", "privacy budget", "隐私预算")
    ]
    assert glossary_misses([("The privacy budget left", ("剩余的隐私预算",))]) == []
    assert glossary_misses([("by %(reviewer)s", ("由 %(reviewer)s",))]) == []


def test_zh_hans_uses_the_glossary_terms():
    """Where the English names a glossary term, the Chinese uses the glossary's word."""
    pairs = [
        (m.id if isinstance(m.id, str) else m.id[0], _strings(m))
        for m in _catalogue()
        if m.id and m.context not in GLOSSARY_EXEMPT_CONTEXTS
    ]
    assert glossary_misses(pairs) == []


def duplicate_msgids(text: str) -> list[str]:
    """msgids (with their context) that appear more than once in a .po file's text."""
    seen: dict[tuple[str, str], int] = {}
    context = ""
    for block in re.split(r"\n\s*\n", text):
        context_match = re.search(r'^msgctxt "(.*)"$', block, re.M)
        context = context_match.group(1) if context_match else ""
        match = re.search(r'^msgid "(.*)"\n((?:".*"\n?)*)', block, re.M)
        if match:
            msgid = match.group(1) + "".join(re.findall(r'^"(.*)"$', match.group(2), re.M))
            if msgid:
                seen[(context, msgid)] = seen.get((context, msgid), 0) + 1
    return [msgid for (_, msgid), count in seen.items() if count > 1]


def test_the_duplicate_check_finds_a_repeated_msgid():
    entry = 'msgid "Save"\nmsgstr "保存"\n'
    assert duplicate_msgids(entry + "\n" + entry) == ["Save"]
    assert duplicate_msgids(entry + '\nmsgctxt "verb"\n' + entry) == []


def test_zh_hans_has_each_msgid_once():
    """Branches append to the catalogue in parallel (merged by union): a string added by two
    of them would be there twice, and Babel would silently keep only one translation."""
    assert duplicate_msgids(PO.read_text(encoding="utf-8")) == []
