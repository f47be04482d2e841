"""The one exception the privacy math raises for bad parameters, and its message record.

The math is pure Python (no Django), but its messages reach data owners, who may read
Chinese. So an error keeps its message as a record: the English msgid, with named
%(name)s placeholders, and the values to fill in, [msgid, {name: value}] (the shape of
dpportal.messages' records). The msgid is marked with `gettext_noop` below, a no-op that
extraction tools (makemessages, Babel, xgettext) find by its name; the application
translates the record where it shows it. `str(error)` is the English sentence.
"""

from __future__ import annotations

__all__ = ["PrivacyParameterError", "gettext_noop", "record"]

#: [msgid, {placeholder: value}]; a value is text, or itself a record (a phrase with its own
#: translation, put into words with the sentence)
Record = list


def gettext_noop(message: str) -> str:
    """Mark `message` for extraction and return it unchanged (Django's gettext_noop,
    without importing Django)."""
    return message


def record(msgid: str, /, **params: object) -> Record:
    """A record of `msgid` (marked with gettext_noop where written) and its parameters."""
    return [msgid, params]


def _english(rec: Record) -> str:
    msgid, params = rec
    if not params:
        return msgid
    return msgid % {
        name: _english(value) if isinstance(value, list) else value
        for name, value in params.items()
    }


class PrivacyParameterError(ValueError):
    """A privacy parameter is outside the range where the math is valid.

    Raised for: epsilon <= 0, NaN or infinite; delta outside [0, 1), or 0 where
    the Gaussian mechanism needs delta > 0; confidence outside (0, 1);
    lower > upper; an empty category list; a contribution bound L < 1; a cell
    count k < 1; a granularity that is not a positive power of two; and any
    other parameter that would make a stated guarantee false. The message
    names the parameter and the value received, so it can be shown to a data
    owner, translated from its record: raise it with a msgid marked by
    gettext_noop and its named parameters, already formatted as text (or a phrase
    as a `record`), `PrivacyParameterError(gettext_noop("%(name)s must be > 0,
    got %(value)s"), name=name, value=repr(value))`.
    """

    def __init__(self, msgid: str, /, **params: object) -> None:
        self.msgid = msgid
        self.params = params
        #: the English sentence, as logs and str() show it
        self.message = _english([msgid, params])
        super().__init__(self.message)

    @property
    def record(self) -> Record:
        """[msgid, {name: value}], as dpportal.messages.record makes it."""
        return [self.msgid, dict(self.params)]

    @property
    def records(self) -> list[Record]:
        """The message as a list of records (one sentence), as RecordedError keeps it."""
        return [self.record]
