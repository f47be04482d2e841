"""Write static/vendor/plotly/plotly-global.css from the vendored plotly.js bundle.

plotly.js puts its global rules (modebar, hover, cursors, notifier) into a <style>
element it creates, which a Content-Security-Policy without 'unsafe-inline' in
style-src-elem blocks. It skips that when the page already has an element with id
`plotly.js-style-global` and class `no-inline-styles`: the pages that draw charts
link this file under that id. The rules are read from the bundle (the object whose
keys are selectors with X for `.js-plotly-plot .plotly` and Y for
`.plotly-notifier`) and written in the order plotly.js leaves them in its sheet (it
inserts each rule at index 0, so the last comes first). Rerun after rebuilding the
bundle: python scripts/plotly_global_css.py
"""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUNDLE = ROOT / "static" / "vendor" / "plotly" / "plotly-dpportal.min.js"
TARGET = ROOT / "static" / "vendor" / "plotly" / "plotly-global.css"
START = '={"X,X div":'
STRING = r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\''
PAIR = re.compile(rf"\s*({STRING}|[A-Za-z_$][\w$]*)\s*:\s*({STRING})\s*(,|}})")


def js_string(literal: str) -> str:
    if literal[0] not in "'\"":
        return literal  # an identifier used as a key
    body = literal[1:-1]
    if literal[0] == "'":
        body = body.replace('\\"', '"').replace("\\'", "'").replace('"', '\\"')
    return json.loads(f'"{body}"')


def rules(bundle: str) -> list[tuple[str, str]]:
    at = bundle.index(START) + len(START) - len('"X,X div":')
    pairs = []
    while True:
        match = PAIR.match(bundle, at)
        if match is None:
            raise ValueError(f"unexpected text in the rules at {at}: {bundle[at : at + 80]!r}")
        selector = js_string(match[1])
        selector = re.sub(r"^,", " ,", selector)
        selector = selector.replace("X", ".js-plotly-plot .plotly").replace("Y", ".plotly-notifier")
        pairs.append((selector, js_string(match[2])))
        at = match.end()
        if match[3] == "}":
            return pairs


def main() -> None:
    found = rules(BUNDLE.read_text())
    lines = [
        "/* plotly.js's global rules, read from plotly-dpportal.min.js by",
        "   scripts/plotly_global_css.py: linked as #plotly.js-style-global.no-inline-styles,",
        "   so plotly.js does not create an inline <style> element (CSP). */",
    ]
    lines += [f"{selector}{{{body}}}" for selector, body in reversed(found)]
    TARGET.write_text("\n".join(lines) + "\n")
    print(f"{TARGET.relative_to(ROOT)}: {len(found)} rules")


if __name__ == "__main__":
    main()
