"""Route-specific additions to the site-wide Content-Security-Policy (settings.py)."""

from __future__ import annotations

from csp.decorators import csp_update

#: Pages that draw Plotly charts. plotly.js creates <style> elements for its hover,
#: modebar and cursor rules (one per chart, named after the chart's id, so they cannot
#: be shipped as a static sheet) and reads them back through CSSOM; blocked, they
#: report a CSP violation per chart and the modebar loses its layout. Scripts stay
#: 'self' only: markup injected from data still cannot run.
plotly_styles = csp_update({"style-src-elem": ["'unsafe-inline'"]})
