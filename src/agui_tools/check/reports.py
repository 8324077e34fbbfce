"""Reports of a :class:`~agui_tools.check.CheckReport` (JSON: :meth:`CheckReport.to_json`).

* :func:`print_report` — a rich table per section, for a terminal;
* :func:`junit_xml` — for CI: a ``testsuite`` per section, a ``testcase`` per case, ``fail``
  a ``failure`` (``warn`` too under ``strict``), ``not exercised`` ``skipped``;
* :func:`html_report` — one self-contained page (no script, no external asset): verdicts,
  rule text, expected vs observed, the transcript with the offending event highlighted,
  everything the agent sent escaped.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from typing import Any
from xml.etree import ElementTree as ET

import orjson

from .._text import html_text, terminal_text
from ._progress import CaseProgress
from ._report import CaseResult, CheckReport, Exchange, Tier, Verdict
from ._rules import RULES

__all__ = [
    "CaseProgress",
    "capabilities_line",
    "html_report",
    "junit_xml",
    "level_text",
    "print_report",
]

_STYLE = {
    Verdict.PASS: "green",
    Verdict.FAIL: "bold red",
    Verdict.WARN: "yellow",
    Verdict.INFO: "cyan",
    Verdict.NOT_EXERCISED: "dim",
}


def _headline(case: CaseResult, limit: int | None = None) -> str:
    """The one thing to say about a case: its worst finding, or what was observed."""
    if case.verdict in (Verdict.FAIL, Verdict.WARN, Verdict.NOT_EXERCISED):
        for f in case.findings:
            if f.verdict is case.verdict:
                return f"[{f.rule}] {f.message}"
    text = case.observed
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


WIDE_TABLE = 120
"""From this many columns the terminal report is a table with a column each for case,
verdict, tier, rules and observation; narrower, the observation would be squeezed to a
few characters a line, so each case is two lines: its id, tier and rules, then what was
observed, wrapped at the words under it."""


def print_report(report: CheckReport, console: Any = None) -> None:
    """The terminal summary: one table per section, then the totals."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    def shown(text: str) -> str:  # the agent's text: never markup, never controls
        return escape(terminal_text(text))

    console = console or Console()
    wide = console.width >= WIDE_TABLE
    console.print(f"[bold]agui-tools check[/bold] {shown(report.url)}")
    for section, cases in report.sections():
        if wide:
            table = Table(title=section, title_justify="left", expand=True, show_lines=False)
            table.add_column("case", no_wrap=True)
            table.add_column("verdict", no_wrap=True, min_width=13)
            table.add_column("tier", no_wrap=True)
            table.add_column("rules", max_width=16)
            table.add_column("observed", ratio=1)
        else:
            table = Table(
                title=section, title_justify="left", expand=True, show_header=False, box=None
            )
            table.add_column("verdict", no_wrap=True, min_width=13)
            table.add_column("case", ratio=1, overflow="fold")
        for case in cases:
            style = _STYLE[case.verdict]
            verdict = f"[{style}]{case.verdict.value}[/{style}]"
            # a pass says what was seen in brief; anything else says it whole
            observed = shown(_headline(case, 90 if case.verdict is Verdict.PASS else None))
            if wide:
                row = [shown(case.id), verdict, _tier_cell(case), shown(", ".join(case.rules))]
                table.add_row(*row, observed)
            else:
                about = f"[bold]{shown(case.id)}[/bold]  {_tier_cell(case)}  "
                table.add_row(verdict, f"{about}{shown(', '.join(case.rules))}\n{observed}")
        console.print(table)
    console.print(shown(capabilities_line(report)))
    counts = ", ".join(f"{n} {k}" for k, n in report.counts().items() if n)
    if report.stopped:
        console.print(f"[bold yellow]stopped[/bold yellow]: {shown(report.stopped)}")
    if report.failed():
        verdict = "[bold red]FAILED[/bold red]"
    elif report.stopped:
        verdict = "[bold yellow]INCOMPLETE[/bold yellow]"
    else:
        verdict = "[green]OK[/green]"
    console.print(
        f"{len(report.cases)} case(s) in {report.seconds:.1f} s: {counts} "
        f"({level_text(report)}) — {verdict}"
    )


def _tier_cell(case: CaseResult) -> str:
    return case.tier.value if case.tier is not Tier.INFORMATIONAL else "info"


def level_text(report: CheckReport) -> str:
    """What fails the check at the report's level, in a few words."""
    level = report.effective_level
    if level == "must":
        return "level must: only a fail fails the check"
    if level == "should":
        return "level should: a fail, or a warn of a MUST or SHOULD case, fails the check"
    return (
        "level may"
        + (" (strict)" if report.strict else "")
        + ": every fail and warn fails the check"
    )


def capabilities_line(report: CheckReport) -> str:
    """Which capabilities the agent declared or exercised, and which the cases needed
    but never saw (those cases are not exercised)."""
    needed = dict.fromkeys(c.capability for c in report.cases if c.capability is not None)
    seen = [name for name in report.capabilities]
    missing = [name for name in needed if name not in report.capabilities]
    out = "capabilities exercised: " + (", ".join(seen) if seen else "none")
    if missing:
        out += f"; never shown (their cases are not exercised): {', '.join(missing)}"
    return out


# -- JUnit XML -------------------------------------------------------------------------


def junit_xml(report: CheckReport) -> str:
    """The report as JUnit XML (the schema ``tests/check/data/junit.xsd`` pins)."""
    failing = {c.id for c in report.failed()}
    root = ET.Element(
        "testsuites",
        name="agui-tools check",
        tests=str(len(report.cases)),
        failures=str(len(failing)),
        errors="0",
        skipped=str(sum(1 for c in report.cases if c.verdict is Verdict.NOT_EXERCISED)),
        time=f"{report.seconds:.3f}",
    )
    host = socket.gethostname() or "localhost"
    for n, (section, cases) in enumerate(report.sections()):
        suite = ET.SubElement(
            root,
            "testsuite",
            name=section,
            tests=str(len(cases)),
            failures=str(sum(1 for c in cases if c.id in failing)),
            errors="0",
            skipped=str(sum(1 for c in cases if c.verdict is Verdict.NOT_EXERCISED)),
            time=f"{sum(c.seconds for c in cases):.3f}",
            timestamp=report.started[:19],
            hostname=host,
            id=str(n),
            package="agui-tools.check",
        )
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="url", value=report.url)
        ET.SubElement(props, "property", name="strict", value=str(report.strict).lower())
        ET.SubElement(props, "property", name="level", value=report.effective_level)
        for case in cases:
            tc = ET.SubElement(
                suite,
                "testcase",
                classname=f"agui-tools.check.{section}",
                name=f"{case.id}: {case.title}",
                time=f"{case.seconds:.3f}",
            )
            if case.id in failing:
                f = next(f for f in case.findings if f.verdict is case.verdict)
                failure = ET.SubElement(
                    tc, "failure", message=_xml_text(f"[{f.rule}] {f.message}"[:500]), type=f.rule
                )
                failure.text = _xml_text(_case_text(case))
            elif case.verdict is Verdict.NOT_EXERCISED:
                ET.SubElement(tc, "skipped", message=_xml_text(_headline(case)[:500]))
            out = ET.SubElement(tc, "system-out")
            out.text = _xml_text(_case_text(case))
        ET.SubElement(suite, "system-out").text = ""
        ET.SubElement(suite, "system-err").text = ""
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _case_text(case: CaseResult) -> str:
    lines = [
        f"verdict: {case.verdict.value}",
        f"tier: {case.tier.value}",
        f"capability: {case.capability or 'none (every agent)'}",
        f"rules: {', '.join(case.rules)} (spec page {case.page})",
        f"expected: {case.expected}",
        f"observed: {case.observed}",
    ]
    for f in case.findings:
        where = ""
        if f.exchange is not None:
            where = f" (exchange {f.exchange}" + (
                f", event #{f.event})" if f.event is not None else ")"
            )
        lines.append(f"{f.verdict.value} [{f.rule}]{where}: {f.message}")
    return "\n".join(lines)


def _xml_text(text: str) -> str:
    """Drop what XML 1.0 cannot carry at all (control characters an agent may send)."""
    return "".join(
        ch
        if ch in "\t\n\r"
        or 0x20 <= ord(ch) <= 0xD7FF
        or 0xE000 <= ord(ch) <= 0xFFFD
        or 0x10000 <= ord(ch) <= 0x10FFFF
        else "\ufffd"
        for ch in text
    )


# -- HTML ---------------------------------------------------------------------------------

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:18px 28px}
header h1{margin:0 0 4px;font-size:20px}
header .meta{color:#c5cad3;font-size:13px}
main{padding:20px 28px;max-width:1200px}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;
 text-transform:uppercase;letter-spacing:.03em;white-space:nowrap}
.pass{background:#d8f3dc;color:#1b5e20}.fail{background:#fde2e1;color:#b71c1c}
.warn{background:#fff3cd;color:#7a5200}.info{background:#dbeafe;color:#1e3a8a}
.not-exercised{background:#e5e7eb;color:#4b5563}
.counts .badge{margin-right:6px;font-size:13px}
table.summary{border-collapse:collapse;width:100%;background:#fff;margin:10px 0 24px}
table.summary td,table.summary th{border-bottom:1px solid #e5e7eb;padding:6px 8px;text-align:left;vertical-align:top}
table.summary td{overflow-wrap:break-word}
table.summary td:last-child,dd{overflow-wrap:anywhere}
table.summary td:first-child a,.rule-id{white-space:nowrap}
table.summary th{background:#eef0f3;font-size:12px;text-transform:uppercase;color:#4b5563}
table.summary tr.section td{background:#f0f2f5;font-weight:600}
a{color:#1d4ed8;text-decoration:none}
section.case{background:#fff;border:1px solid #e5e7eb;border-radius:6px;margin:0 0 16px;padding:12px 16px}
section.case h3{margin:0 0 6px;font-size:16px}
dl{display:grid;grid-template-columns:110px minmax(0,1fr);gap:4px 12px;margin:8px 0}
dt{color:#6b7280}dd{margin:0}
.rule{margin:2px 0}.rule code{font-weight:600}
ul.findings{margin:6px 0;padding-left:18px}
details{margin:8px 0}summary{cursor:pointer;color:#374151}
pre{background:#f3f4f6;padding:8px;overflow:auto;max-height:320px;margin:4px 0;white-space:pre-wrap;word-break:break-all}
ol.events{font:12px/1.5 ui-monospace,Menlo,Consolas,monospace;background:#0f172a;color:#e2e8f0;
 padding:8px 8px 8px 56px;margin:4px 0;max-height:420px;overflow:auto;border-radius:4px}
ol.events li{white-space:pre-wrap;word-break:break-all}
ol.events li.offending{background:#7f1d1d;color:#fff;outline:2px solid #f87171}
ol.events li.warning{background:#713f12;color:#fff}
ol.events li.omitted{list-style:none;color:#94a3b8;font-style:italic}
.exchange h4{margin:10px 0 2px;font-size:13px}
@media (max-width:640px){header,main{padding-left:12px;padding-right:12px}
 dl{grid-template-columns:minmax(0,1fr)}dt{margin-top:4px}
 table.summary,table.summary tbody{display:block}
 table.summary tr{display:grid;grid-template-columns:auto auto minmax(0,1fr);border-bottom:1px solid #e5e7eb}
 table.summary tr:has(th){display:none}
 table.summary td{padding:4px;border:0}
 table.summary td:first-child,table.summary td:last-child{grid-column:1/-1}}
"""


def _e(text: Any) -> str:
    return html_text(text)


def _rule_id(rule: str) -> str:
    """A rule ID kept on one line (``INPUT-15``, not ``INPUT-`` / ``15``): it is searched for."""
    return f'<span class="rule-id">{_e(rule)}</span>'


def _badge(verdict: Verdict) -> str:
    return f'<span class="badge {verdict.value.replace(" ", "-")}">{_e(verdict.value)}</span>'


def _anchor(case_id: str, *rest: int) -> str:
    return "case-" + "-".join([case_id.replace(".", "-"), *map(str, rest)])


def html_report(report: CheckReport) -> str:
    """One self-contained HTML page (inline CSS, no script, no external asset)."""
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>agui-tools check — {_e(report.url)}</title>",
        f"<style>{_CSS}</style></head><body>",
        "<header><h1>agui-tools check</h1>",
        f'<div class="meta">{_e(report.url)} · {_e(report.started)} · '
        f"{report.seconds:.1f} s · agui-tools {_e(report.version)}"
        f" · {_e(level_text(report))}</div></header><main>",
    ]
    verdict = _badge(Verdict.PASS if report.ok else Verdict.FAIL)
    counts = "".join(
        f'<span class="badge {k.replace(" ", "-")}">{n} {_e(k)}</span>'
        for k, n in report.counts().items()
        if n
    )
    out.append(f'<p class="counts">Result {verdict} &nbsp; {counts}</p>')
    out.append(f'<p class="capabilities">{_e(capabilities_line(report))}</p>')
    if report.capabilities:
        out.append('<ul class="capabilities">')
        for name, evidence in report.capabilities.items():
            out.append(f"<li><code>{_e(name)}</code> {_e(evidence)}</li>")
        out.append("</ul>")
    out.append(
        '<table class="summary"><tr><th>case</th><th>verdict</th><th>tier</th><th>rules</th>'
        "<th>observed</th></tr>"
    )
    for section, cases in report.sections():
        out.append(f'<tr class="section"><td colspan="5">{_e(section)}</td></tr>')
        for case in cases:
            out.append(
                f'<tr><td><a href="#{_anchor(case.id)}">{_e(case.id)}</a></td>'
                f"<td>{_badge(case.verdict)}</td><td>{_e(case.tier.value)}</td>"
                f"<td>{', '.join(_rule_id(rule) for rule in case.rules)}</td>"
                f"<td>{_e(_headline(case))}</td></tr>"
            )
    out.append("</table>")
    for case in report.cases:
        out.append(_case_html(case))
    out.append("</main></body></html>")
    return "\n".join(out) + "\n"


def _case_html(case: CaseResult) -> str:
    parts = [
        f'<section class="case" id="{_anchor(case.id)}">',
        f"<h3>{_badge(case.verdict)} {_e(case.id)} — {_e(case.title)}</h3>",
        "<dl>",
        "<dt>rules</dt><dd>",
    ]
    named = [f.rule for f in case.findings if f.rule not in case.rules and f.rule in RULES]
    for rule in dict.fromkeys([*case.rules, *named]):
        parts.append(f'<div class="rule"><code>{_e(rule)}</code> {_e(RULES.get(rule, ""))}</div>')
    parts += [
        f"</dd><dt>tier</dt><dd>{_e(case.tier.value)}</dd>",
        f"<dt>capability</dt><dd>{_e(case.capability or 'none (every agent)')}</dd>",
        f"<dt>spec page</dt><dd><code>{_e(case.page)}</code></dd>",
        f"<dt>expected</dt><dd>{_e(case.expected)}</dd>",
        f"<dt>observed</dt><dd>{_e(case.observed)}</dd>",
        f"<dt>time</dt><dd>{case.seconds:.2f} s</dd>",
        "</dl>",
    ]
    if case.findings:
        parts.append('<ul class="findings">')
        for f in case.findings:
            link = ""
            if f.exchange is not None and f.event is not None:
                link = f' — <a href="#{_anchor(case.id, f.exchange, f.event)}">event #{f.event}</a>'
            parts.append(
                f"<li>{_badge(f.verdict)} <code>{_e(f.rule)}</code> {_e(f.message)}{link}</li>"
            )
        parts.append("</ul>")
    if case.exchanges:
        opened = " open" if case.verdict in (Verdict.FAIL, Verdict.WARN) else ""
        parts.append(
            f"<details{opened}><summary>wire transcript ({len(case.exchanges)} exchange(s))</summary>"
        )
        offending = {
            (f.exchange, f.event): f.verdict
            for f in case.findings
            if f.exchange is not None
            and f.event is not None
            and f.verdict in (Verdict.FAIL, Verdict.WARN)
        }
        for i, ex in enumerate(case.exchanges):
            parts.append(_exchange_html(case, i, ex, offending))
        parts.append("</details>")
    parts.append("</section>")
    return "\n".join(parts)


_SHOWN_JSON = 20_000


def _exchange_html(
    case: CaseResult, index: int, ex: Exchange, offending: Mapping[tuple[int, int], Verdict]
) -> str:
    request = (
        orjson.dumps(ex.request, option=orjson.OPT_INDENT_2).decode()
        if ex.request is not None
        else ex.raw_request
    )
    if len(request) > _SHOWN_JSON:
        request = request[:_SHOWN_JSON] + f"\n… ({len(request)} characters in all)"
    status = f"HTTP {ex.status}" if ex.status is not None else "no HTTP answer"
    parts = [
        f'<div class="exchange"><h4>#{index} {_e(ex.label)} → {_e(status)} '
        f"{_e(ex.content_type)} ({ex.seconds:.2f} s)</h4>",
        f"<details><summary>request</summary><pre>{_e(request)}</pre></details>",
    ]
    if ex.error:
        parts.append(f"<p>{_e(ex.error)}</p>")
    if ex.body:
        parts.append(f"<pre>{_e(ex.body)}</pre>")
    if ex.frames:
        pinned = [n for (at, n) in offending if at == index]
        parts.append('<ol class="events" start="0">')
        after = -1
        for n, frame in ex.shown(pinned):
            if n > after + 1:
                parts.append(f'<li class="omitted">… {n - after - 1:,} event(s) not shown</li>')
            after = n
            verdict = offending.get((index, n))
            cls = ""
            if verdict is Verdict.FAIL:
                cls = ' class="offending"'
            elif verdict is Verdict.WARN:
                cls = ' class="warning"'
            shown = str(frame) if frame else "(a frame the SSE reader could not produce)"
            parts.append(f'<li value="{n}" id="{_anchor(case.id, index, n)}"{cls}>{_e(shown)}</li>')
        if after < len(ex.frames) - 1:
            parts.append(
                f'<li class="omitted">… {len(ex.frames) - after - 1:,} event(s) not shown</li>'
            )
        parts.append("</ol>")
    if ex.comments:
        parts.append(f"<p>{ex.comments} SSE comment line(s) (keep-alives)</p>")
    parts.append("</div>")
    return "\n".join(parts)
