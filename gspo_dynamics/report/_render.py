"""The report as a self-contained HTML page (`to_html`: inline CSS and SVG, no script, nothing fetched) and as
markdown for a pull request or an issue (`to_markdown`): the same facts, in the same order; the charts are the
page's alone."""

from __future__ import annotations

from html import escape

from gspo_dynamics import __version__
from gspo_dynamics.report._model import Report, Table

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto; max-width: 1320px;
       color: #222; line-height: 1.4; padding: 0 16px; }
#answer { background: #f4f6fa; border-left: 4px solid #1f77b4; padding: 8px 12px; font-family: monospace;
          white-space: pre-wrap; }
section { margin-top: 28px; }
ul.facts { font-family: monospace; font-size: 13px; padding-left: 18px; white-space: pre-wrap; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
.charts { display: flex; flex-wrap: wrap; gap: 8px; }
footer { margin-top: 32px; font-size: 12px; color: #777; }
"""


def _html_table(t: Table) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in t.headers)
    rows = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in t.rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def to_html(report: Report) -> str:
    """One HTML document: the answer first, then each section (`<section id=...>`) with its facts, tables, charts."""
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{escape(report.title)}</title><style>{STYLE}</style></head><body>",
             f"<h1>{escape(report.title)}</h1>", f'<div id="answer">{escape(chr(10).join(report.answer))}</div>']
    for s in report.sections:
        parts.append(f'<section id="{s.id}"><h2>{escape(s.title)}</h2>')
        if s.lines:
            parts.append('<ul class="facts">' + "".join(f"<li>{escape(ln)}</li>" for ln in s.lines) + "</ul>")
        parts += [_html_table(t) for t in s.tables]
        if s.charts:
            parts.append('<div class="charts">' + "".join(s.charts) + "</div>")
        parts.append("</section>")
    parts.append(f"<footer>gspo-dynamics {escape(__version__)} report (docs/report.md)</footer></body></html>")
    return "\n".join(parts)


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _md_table(t: Table) -> list[str]:
    return (["| " + " | ".join(_md_cell(h) for h in t.headers) + " |", "|" + "---|" * len(t.headers)]
            + ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in t.rows])


def to_markdown(report: Report) -> str:
    """The same facts as `to_html`, as markdown: the answer in a code block, each section's lines and tables."""
    out = [f"# {report.title}", "", "```", *report.answer, "```"]
    for s in report.sections:
        out += ["", f"## {s.title}", ""]
        out += [f"- `{ln}`" if "`" not in ln else f"- {ln}" for ln in s.lines]
        for t in s.tables:
            out += ["", *_md_table(t)]
    out += ["", f"<sub>gspo-dynamics {__version__} report (docs/report.md)</sub>", ""]
    return "\n".join(out)
