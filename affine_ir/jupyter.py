"""HTML rendering of MLIR text for Jupyter (``_repr_html_`` of ops and modules)."""

from __future__ import annotations

import html
import re

_TOKENS = re.compile(
    r"(?P<comment>//[^\n]*)|(?P<value>%[\w$.\-#]+)|(?P<symbol>@[\w$.\-]+)|(?P<alias>#[\w$.\-]+)"
    r"|(?P<op>\b[a-z_]+\.[a-z_.]+\b)|(?P<type>\b(?:index|i\d+|bf16|f16|f32|f64|memref|vector)\b)"
    r"|(?P<number>\b\d+(?:\.\d*)?(?:e[-+]?\d+)?\b)|(?P<keyword>\b(?:to|step|iter_args|max|min|else|"
    r"floordiv|ceildiv|mod|symbol|func|return|module)\b)"
)
_COLORS = {"comment": "#6a737d", "value": "#005cc5", "symbol": "#6f42c1", "alias": "#e36209", "op": "#d73a49",
           "type": "#22863a", "number": "#005cc5", "keyword": "#d73a49"}


def highlight_html(text: str) -> str:
    """``text`` as an HTML ``<pre>`` block with MLIR tokens colored; all text is escaped."""
    out = []
    pos = 0
    for m in _TOKENS.finditer(text):
        out.append(html.escape(text[pos : m.start()]))
        color = _COLORS[m.lastgroup]
        out.append(f'<span style="color:{color}">{html.escape(m.group())}</span>')
        pos = m.end()
    out.append(html.escape(text[pos:]))
    return '<pre style="font-family:monospace;line-height:1.3">' + "".join(out) + "</pre>"
