"""Issue 17: the messages our errors carry to people are translated.

Every ApplicationError (ValidationFailed, PermissionDenied, ...) raised in the
application's Python code must take its message from gettext/ngettext/pgettext
(or a `%` of one), never from English written in place: a string literal or an
f-string would reach a Chinese reader in English. The errors whose message is stored
and read later (IngestRejected, SpecMismatch: dpportal.errors.RecordedError) are
raised with a msgid marked by gettext_noop and its named parameters instead, and
translated where they are shown; so is the privacy math's PrivacyParameterError, which
cannot import Django and marks its msgids with its own gettext_noop. The scan reads the
source with `ast`; a message held in a variable is trusted (it was built elsewhere, and
the scan sees where). The translations themselves are checked by test_i18n_catalogue.
"""

from __future__ import annotations

import ast
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.utils import translation
from django.utils.translation import gettext_noop

from budgets.selectors import role_required
from budgets.services import parse_epsilon
from datasets.ingest.common import IngestRejected
from datasets.services.codebook import parse_codebook
from dpportal import catalogues, messages
from dpportal.errors import ValidationFailed
from dpportal.privacy.errors import PrivacyParameterError
from dpportal.privacy.params import check_contribution_bound, check_epsilon
from releases import dp
from releases.retry import failure_reason
from releases.services.plan import ReleasePlan, StatisticPlan
from releases.services.plan_stats import parse_quantiles

ROOT = Path(__file__).resolve().parent.parent
#: the error classes whose message is shown to a person (dpportal.errors), translated
#: when raised
ERROR_CLASSES = {
    "ApplicationError",
    "ValidationFailed",
    "PermissionDenied",
    "NotFound",
    "InvalidTransition",
    "BudgetExceeded",
    "SelfApproval",
    "UploadTooLarge",
}
#: errors mostly raised in Celery workers and stored as a dataset's or a release's failure
#: reason: translating them when raised would fix the worker's language, not the reader's,
#: so they carry a gettext_noop msgid and its parameters (dpportal.errors.RecordedError)
RECORDED_CLASSES = {"RecordedError", "IngestRejected", "SpecMismatch"}
#: the privacy math's error (dpportal.privacy.errors): pure Python, so it cannot translate;
#: it carries a record the same way (its own gettext_noop marks the msgid), translated
#: where releases/ shows it
PRIVACY_CLASSES = {"PrivacyParameterError"}
TRANSLATE = {"gettext", "ngettext", "pgettext", "npgettext"}
SKIP = {".venv", "tests", "var", "node_modules", ".git", "migrations"}


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _plain_text(node: ast.expr) -> bool:
    """Is `node` English written in place (a literal, an f-string, or text made from one)?"""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Mod):  # "..." % x is plain; gettext("...") % x is not
            return _plain_text(node.left)
        return _plain_text(node.left) or _plain_text(node.right)
    if isinstance(node, ast.IfExp):
        return _plain_text(node.body) or _plain_text(node.orelse)
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("format", "join"):
            return _plain_text(node.func.value) and node.func.attr == "format"
        # gettext_noop only marks: the English would be shown as it is
        return _name(node.func) == "gettext_noop"
    return False


def _unrecorded(node: ast.expr) -> bool:
    """Is `node` not a msgid to keep (plain text, text translated or filled in already)?"""
    if isinstance(node, ast.Call) and _name(node.func) == "gettext_noop":
        return False
    if isinstance(node, ast.Call) and _name(node.func) in TRANSLATE:
        return True  # the raiser's language, stored for every reader
    if isinstance(node, ast.IfExp):
        return _unrecorded(node.body) or _unrecorded(node.orelse)
    return isinstance(node, ast.Constant | ast.JoinedStr | ast.BinOp) or _plain_text(node)


def _record_args(node: ast.expr) -> list[ast.expr]:
    """The msgids of record(...) calls (dpportal.messages) among prepared records."""
    if isinstance(node, ast.Call) and _name(node.func) == "record":
        return node.args[:1]
    return [node] if isinstance(node, ast.Constant | ast.JoinedStr | ast.BinOp) else []


def untranslated_errors(source: str, filename: str = "<source>") -> list[str]:
    """`file:line` of each error raised with an untranslated message in `source`."""
    found = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if _name(func) in ERROR_CLASSES:
            texts = node.args[:1] + [k.value for k in node.keywords if k.arg == "message"]
            if any(_plain_text(m) for m in texts):
                found.append(f"{filename}:{node.lineno}")
        elif _name(func) in RECORDED_CLASSES | PRIVACY_CLASSES:
            if any(_unrecorded(m) for m in node.args[:1]):
                found.append(f"{filename}:{node.lineno}")
        elif (
            isinstance(func, ast.Attribute)
            and func.attr == "of"
            and _name(func.value) in RECORDED_CLASSES
        ):
            if any(_unrecorded(m) for arg in node.args for m in _record_args(arg)):
                found.append(f"{filename}:{node.lineno}")
    return found


def application_sources() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py") if not SKIP & set(p.relative_to(ROOT).parts))


def test_the_checker_catches_plain_text_and_passes_a_translation():
    bad = [
        'raise ValidationFailed("Pick a dataset.")',
        'raise ValidationFailed(f"Column {name} is excluded.")',
        'raise errors.NotFound("No such " + "release.")',
        'raise PermissionDenied("Hello %s" % name)',
        'raise InvalidTransition("{} cannot".format(x))',
        'raise ValidationFailed(gettext("a") if x else "b")',
        'raise BudgetExceeded(message=f"over by {x}")',
        'raise ValidationFailed(gettext_noop("Marked, never translated."))',
        'raise IngestRejected("The file is empty.")',
        'raise IngestRejected(f"The file is larger than {size}.")',
        'raise SpecMismatch("The release " + "changed.")',
        'raise IngestRejected(gettext("Translated in the worker\'s language."))',
        'raise IngestRejected(gettext_noop("Column %(n)s.") % {"n": n})',
        'raise IngestRejected.of(record("A line is too long."))',
        'raise IngestRejected.of(record(gettext_noop("Fine.")), record(f"Not {x}."))',
        'raise PrivacyParameterError("the category list must not be empty")',
        'raise PrivacyParameterError(f"{name} must be > 0, got {value!r}")',
        'raise PrivacyParameterError("lower must be <= " + "upper")',
    ]
    good = [
        'raise ValidationFailed(gettext("Pick a dataset."))',
        'raise ValidationFailed(gettext("Column %(name)s.") % {"name": name})',
        'raise ValidationFailed(ngettext("%(n)s row", "%(n)s rows", n) % {"n": n})',
        'raise ValidationFailed(gettext("a") if x else pgettext("c", "b"))',
        "raise ValidationFailed(problem)",
        'raise BudgetExceeded(fit.refusal(what="x"), extra={"a": "b"})',
        'raise ValueError("not shown to a person")',
        'raise IngestRejected(gettext_noop("The file is empty."))',
        'raise IngestRejected(gettext_noop("Larger than %(size)s."), size=human_size(n))',
        'raise SpecMismatch(gettext_noop("The release\'s spec changed."))',
        "raise IngestRejected.of(limits.row_message())",
        'raise IngestRejected.of(record(gettext_noop("A.")), *problems)',
        "raise IngestRejected(msgid, name=name)",
        'raise PrivacyParameterError(gettext_noop("the category list must not be empty"))',
        'raise PrivacyParameterError(gettext_noop("%(name)s must be > 0"), name=name)',
    ]
    for line in bad:
        assert untranslated_errors(line) == ["<source>:1"], line
    for line in good:
        assert untranslated_errors(line) == [], line


def test_the_scan_sees_the_services():
    names = {str(p.relative_to(ROOT)) for p in application_sources()}
    assert {
        "releases/services/plan.py",
        "budgets/services/validation.py",
        "dpportal/privacy/params.py",
    } <= names
    assert not any(n.startswith(("tests/", ".venv/")) for n in names)


def test_every_error_message_goes_through_gettext():
    found = []
    for path in application_sources():
        found += untranslated_errors(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert found == []


@pytest.fixture
def chinese():
    catalogues.compile_all()
    with translation.override("zh-hans"):
        yield


def _message(call) -> str:
    with pytest.raises(ValidationFailed) as caught:
        call()
    return caught.value.message


def test_service_errors_come_out_in_chinese(chinese):
    assert _message(lambda: parse_epsilon("0", field=None)) == "ε 必须大于 0。"
    assert _message(lambda: parse_quantiles("0.5, 2")) == (
        "分位数必须严格介于 0 与 1 之间（或 0 % 与 100 %）；收到的是 2。"
    )
    assert _message(lambda: parse_codebook(b"column,kind\nscore,numeric,1\n")) == (
        "编码簿第 2 行有 3 个单元格，而表头有 2 个。"
    )


def test_a_refusal_names_the_role_in_chinese(chinese):
    assert role_required({"owner"}).message == "此操作需要项目中的“所有者”角色。"
    assert role_required({"owner", "reviewer"}).message == (
        "此操作需要项目中的以下角色之一：所有者、审核人。"
    )


def test_service_errors_stay_english_by_default():
    with translation.override("en"):
        assert _message(lambda: parse_epsilon("0")) == "epsilon must be greater than 0."


def test_a_stored_refusal_keeps_its_english_and_translates_when_read(chinese):
    """The worker's language does not matter: the record is put into words when read."""
    with translation.override("en"):  # as in a worker
        error = IngestRejected(
            gettext_noop("Column '%(name)s' mixes numbers and text."), name="年龄"
        )
    assert error.message == "Column '年龄' mixes numbers and text."
    assert error.records == [["Column '%(name)s' mixes numbers and text.", {"name": "年龄"}]]
    assert error.reader_message() == "列“年龄”中数字和文本混杂。"
    assert messages.reader_text(error.records, fallback="old") == "列“年龄”中数字和文本混杂。"
    assert messages.reader_text([], fallback="old English") == "old English"


def test_a_reason_of_several_sentences_is_translated_sentence_by_sentence(chinese):
    reason = failure_reason(MemoryError(), attempts=6)
    assert messages.english(reason) == (
        "The computation ran out of memory. It was tried 6 times (MemoryError)."
    )
    assert messages.translated(reason) == "计算时内存不足。已尝试 6 次（MemoryError）。"


def _zero_epsilon_preview() -> str:
    """The preview of a count given epsilon 0: the privacy math refuses it, releases/
    shows its message inside the statistic's frame."""
    plan = ReleasePlan(
        project=None,
        dataset=SimpleNamespace(contribution_bound=1),
        title="t",
        description="",
        mechanism="laplace",
        confidence=Decimal("0.95"),
        epsilon=Decimal(1),
        delta=Decimal(0),
    )
    stat = StatisticPlan(position=0, kind="count", label="n", epsilon=Decimal(0))
    return _message(lambda: dp.statistic_accuracy(plan=plan, stat=stat))


def test_a_privacy_error_keeps_its_english_and_its_record():
    with pytest.raises(PrivacyParameterError) as caught:
        check_epsilon(0)
    assert str(caught.value) == caught.value.message == "epsilon must be > 0, got 0"
    assert caught.value.records == [["epsilon must be > 0, got %(value)s", {"value": "0"}]]
    with pytest.raises(PrivacyParameterError) as caught:
        check_contribution_bound(0)
    assert str(caught.value) == "contribution_bound (rows per person L) must be >= 1, got 0"


def test_a_privacy_error_comes_out_in_chinese_where_releases_shows_it(chinese):
    assert _zero_epsilon_preview() == "统计量 1：ε 必须 > 0，收到的是 Decimal('0')"
    with pytest.raises(PrivacyParameterError) as caught:
        check_contribution_bound(0)
    assert messages.translated(caught.value.records) == (
        "contribution_bound（每人行数 L）必须 >= 1，收到的是 0"
    )


def test_a_privacy_error_stays_english_by_default():
    with translation.override("en"):
        assert _zero_epsilon_preview() == "Statistic 1: epsilon must be > 0, got Decimal('0')"
