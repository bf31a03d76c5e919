"""The HTML page of ``trace-tasks report``: one self-contained file, pure functions of the report's data.

No network: no stylesheet or font link, no remote image, no script file; the
CSS is in a ``<style>`` element, charts are inline SVG
(:mod:`trace_tasks.cli.report._svg`), pictures are ``data:`` URIs, and one small
inline script (:data:`SCRIPT`, fixed text: nothing from a file reaches it)
makes the tables sortable. Everything that comes from a file (ids,
responses, errors, explanations, type names) is escaped with
:func:`html.escape`: model output is hostile and must never become markup.
A lone surrogate (valid in JSON, never in UTF-8) is shown as U+FFFD, so the
page can always be written; a response holding one says so in its case.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence
from html import escape

import attrs

from trace_tasks.cli._views.breakdown import reward_breakdown
from trace_tasks.cli._views.explanation import surrogate_note, without_surrogates
from trace_tasks.cli._views.mismatches import kind_meaning
from trace_tasks.cli.report._data import (
    ALL,
    COMPONENTS,
    FAILURES,
    Change,
    Delta,
    DeltaStats,
    Paired,
    PairedTotals,
    Row,
    TypeStats,
    failure_kind,
)
from trace_tasks.cli.report._runs import SERIES, Estimate, RunSummary
from trace_tasks.cli.report._svg import curve_svg, delta_bar_svg, histogram_svg, share_svg
from trace_tasks.runs import group_name

#: Characters of a response shown in a case (the rest is counted, not shown).
EXCERPT_CHARS = 1200

CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em auto; max-width: 1200px; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; border-bottom: 1px solid #ccc; margin-top: 2em; }
table { border-collapse: collapse; margin: .5em 0; } th, td { padding: 2px 8px; border-bottom: 1px solid #eee; }
th { text-align: left; background: #f4f4f4; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.all td { font-weight: bold; border-top: 1px solid #999; }
.wide { overflow-x: auto; } .pos { color: #2a8a2a; } .neg { color: #c03030; } .muted { color: #777; }
pre { background: #f7f7f7; padding: .5em; white-space: pre-wrap; overflow-wrap: anywhere; }
.case { border: 1px solid #ddd; border-radius: 4px; padding: .5em 1em; margin: 1em 0; }
.case img { max-width: 100%; border: 1px solid #ccc; }
.grid td { vertical-align: top; } table.summary th { background: none; white-space: nowrap; }
tr.flag td { background: #fff4d6; }
@media (max-width: 600px) {
  body { padding: 0 .4em; font-size: 13px; } th, td { padding: 2px 4px; }
  .case { padding: .4em .5em; } table.summary td { overflow-wrap: anywhere; }
  table.summary, table.summary tr, table.summary th, table.summary td { display: block; border: 0; }
  table.summary th { padding-top: .4em; }
}
.case h3 { display: inline; font-size: 1em; margin: 0; } .case .overall { float: right; font-weight: bold; }
.case table.pe { margin: .3em 0; width: 100%; table-layout: fixed; } .case table.pe th:first-child { width: 6.5em; }
.case table.pe code { display: block; overflow-wrap: anywhere; font-size: 12px; } .case table.pe tr.expected td { background: #f3f8f3; }
.case-main { display: flex; gap: .8em; align-items: flex-start; }
.case-main pre.breakdown { flex: 1; margin: 0; font-size: 12px; }
.case-main .pic { max-width: 45%; } .case-main .pic img { max-height: 150px; max-width: 100%; display: block; }
.case-main .pic summary { list-style: none; cursor: zoom-in; } .case-main .pic summary::-webkit-details-marker { display: none; }
.case-main .pic[open] { max-width: 100%; flex-basis: 100%; } .case-main .pic[open] summary img { display: none; }
.case-main .pic[open] > img { max-height: none; cursor: zoom-out; } .pic .hint { font-size: 11px; color: #777; display: block; }
.pic[open] .hint.closed, .pic:not([open]) .hint.opened { display: none; }
.case-main.open { flex-wrap: wrap; }
.case details { margin: .2em 0; } .case details pre { font-size: 12px; }
.filter { display: flex; flex-wrap: wrap; gap: .4em 1em; align-items: center; background: #f4f4f4; padding: .4em .6em;
  border-radius: 4px; position: sticky; top: 0; z-index: 1; } .filter label { white-space: nowrap; }
.filter input { width: 10em; } [hidden] { display: none !important; }
h1 { overflow-wrap: anywhere; }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th[aria-sort="ascending"]::after { content: " \\25B2"; }
table.sortable th[aria-sort="descending"]::after { content: " \\25BC"; }
@media (max-width: 600px) {
  .case-main { flex-direction: column; } .case-main .pic { max-width: 100%; } .case-main .pic img { max-height: 120px; }
  .case table.pe th:first-child { width: 4.8em; } .case table.pe code, .case-main pre.breakdown { font-size: 11px; }
  .case table.pe th, .case table.pe td { padding: 1px 3px; }
  .charts figure { width: calc(50% - .6em); } .charts svg { width: 100%; height: auto; }
}
.curves h3 { font-size: 1em; margin: .8em 0 .2em; } .charts { display: flex; flex-wrap: wrap; gap: .3em 1em; }
td.est { white-space: nowrap; } .charts figure { margin: 0; } .charts figcaption { font-size: 12px; color: #555; }
.warning { background: #fff4d6; border: 1px solid #e0b040; border-radius: 4px; padding: .5em 1em; color: #5a4300; }
"""

#: The page's one script: click (or Enter on) a column head of a ``table.sortable`` to sort its rows by that column
#: (numbers as numbers, a cell's ``data-sort`` first; the ``all`` row stays last); ``#sort=CLASS:COLUMN:asc|desc``
#: in the address sorts a table on load (a link to a sorted view, and what the browser test uses).
SORT_SCRIPT = """
(function () {
  function key(cell) {
    var text = cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent.trim();
    var n = parseFloat(text);
    return isNaN(n) ? text.toLowerCase() : n;
  }
  function compare(x, y) {
    if (typeof x !== typeof y) { return typeof x === "number" ? -1 : 1; }
    return x < y ? -1 : x > y ? 1 : 0;
  }
  function sortBy(table, column, ascending) {
    var head = table.rows[0], rows = Array.prototype.slice.call(table.rows, 1);
    var moving = rows.filter(function (r) { return !r.classList.contains("all"); });
    var fixed = rows.filter(function (r) { return r.classList.contains("all"); });
    moving.sort(function (a, b) {
      var c = compare(key(a.cells[column]), key(b.cells[column]));
      return ascending ? c : -c;
    });
    moving.concat(fixed).forEach(function (r) { r.parentNode.appendChild(r); });
    Array.prototype.forEach.call(head.cells, function (th) { th.setAttribute("aria-sort", "none"); });
    head.cells[column].setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.rows[0].cells, function (th, column) {
      th.tabIndex = 0;
      th.setAttribute("aria-sort", "none");
      var go = function () { sortBy(table, column, th.getAttribute("aria-sort") !== "ascending"); };
      th.addEventListener("click", go);
      th.addEventListener("keydown", function (ev) {
        if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); go(); }
      });
    });
  });
  var wanted = /^#sort=([A-Za-z-]+):(\\d+):(asc|desc)$/.exec(window.location.hash);
  if (wanted) {
    var table = document.querySelector("table.sortable." + wanted[1]), column = Number(wanted[2]);
    if (table && table.rows[0].cells[column]) { sortBy(table, column, wanted[3] === "asc"); }
  }
})();
"""

#: The filter bar's script: the search box (a part of the id), the type, failure kind and group menus hide the case
#: cards that do not match (``hidden``) and the table rows and curves of other types (an ``all`` row stays);
#: ``#filter=type=bbox&kind=wrong_answer&q=abc&group=x`` in the address sets them on load.
FILTER_SCRIPT = """
(function () {
  var bar = document.getElementById("filter");
  if (!bar) { return; }
  var fields = ["q", "type", "kind", "group"].map(function (name) { return document.getElementById("f-" + name); });
  function wanted() {
    var out = {};
    fields.forEach(function (el) { if (el) { out[el.id.slice(2)] = el.value.trim(); } });
    return out;
  }
  function apply() {
    var w = wanted(), q = (w.q || "").toLowerCase(), shown = 0;
    var cards = document.querySelectorAll(".case");
    Array.prototype.forEach.call(cards, function (c) {
      var ok = (!q || (c.getAttribute("data-id") || "").toLowerCase().indexOf(q) >= 0)
        && (!w.type || c.getAttribute("data-type") === w.type)
        && (!w.kind || c.getAttribute("data-kind") === w.kind)
        && (!w.group || c.getAttribute("data-group") === w.group);
      c.hidden = !ok;
      if (ok) { shown += 1; }
    });
    Array.prototype.forEach.call(document.querySelectorAll("tr[data-type], div.curves[data-type]"), function (r) {
      var t = r.getAttribute("data-type"), id = r.getAttribute("data-id");
      r.hidden = !((!w.type || t === w.type || t === "all") && (!q || id === null || id.toLowerCase().indexOf(q) >= 0));
    });
    document.getElementById("f-count").textContent = shown + " of " + cards.length + " cases shown";
    bar.setAttribute("data-shown", String(shown));
  }
  bar.addEventListener("submit", function (ev) { ev.preventDefault(); });
  fields.forEach(function (el) {
    if (el) { el.addEventListener("input", apply); el.addEventListener("change", apply); }
  });
  var found = /^#filter=(.*)$/.exec(window.location.hash);
  if (found) {
    found[1].split("&").forEach(function (part) {
      var at = part.indexOf("="), el = document.getElementById("f-" + part.slice(0, at));
      if (at > 0 && el) { el.value = decodeURIComponent(part.slice(at + 1)); }
    });
  }
  apply();
})();
"""

#: The page's one inline script: the table sorting, then the filter bar.
SCRIPT = SORT_SCRIPT + FILTER_SCRIPT

CORRECT_WORST_INTRO = (
    "Rows whose answer is correct (answer reward 1) with the lowest annotation reward, taken in turn from each "
    "annotation type (ties in file order): where the model knew the answer but did not show where."
)


def _menu(name: str, title: str, values: Sequence[tuple[str, str]]) -> str:
    options = "".join(f'<option value="{e(v)}">{e(text)}</option>' for v, text in values)
    return f'<label>{e(title)} <select id="f-{name}"><option value="">any</option>{options}</select></label>'


def filter_bar(report: Report) -> str:
    """The search box and menus over the case cards and the per-type rows (:data:`FILTER_SCRIPT`)."""
    types = [(s.name, s.name) for s in report.table if s.name != ALL]
    kinds = [(key, title) for key, title, _, _ in FAILURES] + [("none", "none"), ("not_scored", "not scored")]
    group = ""
    if report.groups is not None and len(report.groups) > 1:
        group = _menu("group", report.group_by, [(s.name, s.name) for s in report.groups if s.name != ALL])
    return (
        '<form id="filter" class="filter" role="search"><label>id <input type="search" id="f-q" placeholder="part of an id">'
        f"</label>{_menu('type', 'type', types)}{_menu('kind', 'failure', kinds)}{group}"
        '<span id="f-count" class="muted" aria-live="polite"></span></form>'
    )


@attrs.frozen
class Case:
    """A row shown in full: the response excerpt, the explanation, the picture (PNG bytes) or why not."""

    row: Row
    response: str | None = None
    explanation: tuple[str, ...] = ()
    picture: bytes | None = None
    note: str = ""
    breakdown: tuple[str, ...] = ()  # default: from the row alone (no formula)
    #: (answer, annotation) as JSON text: what the response gave and what the instance expects (with --instances).
    predicted: tuple[str, str] | None = None
    expected: tuple[str, str] | None = None
    #: The overlay cropped to the region of the target and the prediction (PNG), shown first; None: the whole picture.
    crop: bytes | None = None


@attrs.frozen
class Report:
    """Everything the page shows."""

    title: str
    summary: tuple[tuple[str, str], ...]
    table: Sequence[TypeStats]
    histograms: Mapping[str, Mapping[str, Sequence[int]]]
    worst: Sequence[Case] = ()
    sample: Sequence[Case] = ()
    deltas: Sequence[Delta] | None = None
    #: The per-row comparison with the baseline (rows joined by (id, line), else id).
    paired: Paired | None = None
    baseline_name: str = ""
    notes: tuple[str, ...] = ()
    baseline_warning: str = ""
    #: ``trace-tasks audit``'s policy entries for the instances (``--instances``), and what to say about them.
    audit: Sequence[Mapping[str, object]] | None = None
    audit_note: str = ""
    #: The field metrics per type and over the run (``report --instances``), and what to say about them.
    metrics: Mapping[str, Mapping[str, float]] | None = None
    metrics_overall: Mapping[str, float] = attrs.field(factory=dict)
    metrics_note: str = ""
    #: Per type (and ``all``) the re-scored rows of each mismatch kind (with --instances): the failure table's extra columns.
    mismatches: Mapping[str, Mapping[str, int]] = attrs.field(factory=dict)
    #: ``report --group-by COLUMN``: the column and its table (values, then all), or None.
    group_by: str = ""
    groups: Sequence[TypeStats] | None = None
    #: Several runs (scores files, or the values of ``--step COLUMN``), in order; the page's other sections show the last.
    runs: Sequence[RunSummary] | None = None
    runs_note: str = ""
    #: Per type, the components whose values are only 0 or 1 (drawn as a share, not a histogram).
    binary: Mapping[str, frozenset[str]] = attrs.field(factory=dict)
    #: Rows with a correct answer and the lowest annotation reward ("correct answer, worst annotation").
    correct_worst: Sequence[Case] = ()


def e(text: object) -> str:
    """Escaped text (quotes too: the result may go in an attribute), each lone surrogate shown as U+FFFD."""
    return escape(without_surrogates(str(text))[0], quote=True)


def id_text(row_id: object) -> str:
    """An id as the page shows it: text as it is (no quotes), anything else as JSON (``score --group-by``'s naming)."""
    return row_id if isinstance(row_id, str) else group_name(row_id)


def num(x: float, digits: int = 3) -> str:
    return f"{x:.{digits}f}"


def signed(x: float | None) -> str:
    """A delta with its sign and a class saying which way it went."""
    if x is None:
        return '<td class="n muted">-</td>'
    cls = "pos" if x > 0 else "neg" if x < 0 else ""
    return f'<td class="n {cls}">{x:+.3f}</td>'


def mean_se(mean: float, stderr: float | None) -> str:
    """A mean and its standard error (``0.589 ± 0.041``); the error is left out below 2 values."""
    se = f"{stderr:.6f}" if stderr is not None else ""
    shown = f"{mean:.3f}" + (f" ± {stderr:.3f}" if stderr is not None else "")
    return f'<td class="n est" data-mean="{mean:.6f}" data-stderr="{se}">{shown}</td>'


STDERR_NOTE = "Each mean ± its standard error (sample standard deviation over sqrt(n))."


def summary_section(report: Report) -> str:
    items = "".join(f'<tr><th scope="row">{e(k)}</th><td>{e(v)}</td></tr>' for k, v in report.summary)
    notes = "".join(f'<p class="muted">{e(n)}</p>' for n in report.notes)
    if report.baseline_warning:
        notes += f'<p class="warning" role="alert"><a href="#baseline">Baseline</a>: {e(report.baseline_warning)}</p>'
    return f'<h2 id="summary">Run summary</h2><div class="wide"><table class="summary">{items}</table></div>{notes}'


def group_table_section(column: str, table: Sequence[TypeStats]) -> str:
    """The per-type table's columns, one row per value of a kept input column."""
    if len(table) <= 1:
        return (
            f'<h2 id="groups">Per {e(column)}</h2><p class="warning" role="alert">No scored row keeps {e(column)!s} under '
            f"'extra': score with --keep {e(column)} (or --group-by {e(column)}) to carry it.</p>"
        )
    head = "".join(f"<th>mean {e(title)} ± s.e.</th>" for _, title in COMPONENTS)
    rows = []
    for s in table:
        means = "".join(mean_se(s.means[key], s.stderr.get(key)) for key, _ in COMPONENTS)
        cls = ' class="all"' if s.name == ALL else ""
        rows.append(f'<tr{cls} data-group="{e(s.name)}"><td>{e(s.name)}</td><td class="n">{s.scored}</td>{means}</tr>')
    return (
        f'<h2 id="groups">Per {e(column)}</h2><p class="muted">Scored rows by their value of {e(column)} '
        f"(kept by score under 'extra'; a value that is not text is written as JSON, a missing one as null). {STDERR_NOTE}</p>"
        f'<div class="wide"><table class="groups sortable"><tr><th>{e(column)}</th><th>scored</th>{head}</tr>{"".join(rows)}</table></div>'
    )


def type_table_section(table: Sequence[TypeStats]) -> str:
    head = "".join(f"<th>mean {e(title)} ± s.e.</th>" for _, title in COMPONENTS)
    rows = []
    for s in table:
        means = "".join(mean_se(s.means[key], s.stderr.get(key)) for key, _ in COMPONENTS)
        cls = ' class="all"' if s.name == ALL else ""
        rows.append(f'<tr{cls}><td>{e(s.name)}</td><td class="n">{s.rows}</td><td class="n">{s.scored}</td>{means}</tr>')
    return (
        f'<h2 id="types">Per annotation type</h2><p class="muted">{STDERR_NOTE}</p><div class="wide"><table class="types sortable"><tr><th>annotation type</th><th>rows</th>'
        f"<th>scored</th>{head}</tr>{''.join(rows)}</table></div>"
    )


def top_share(histograms: Mapping[str, Mapping[str, Sequence[int]]]) -> float:
    """The largest share of one bin in any chart: the one y scale of every histogram of the page."""
    top = 0.0
    for per_key in histograms.values():
        for counts in per_key.values():
            total = sum(counts)
            if total:
                top = max(top, max(counts) / total)
    return top or 1.0


def _chart(name: str, key: str, title: str, counts: Sequence[int], binary: bool, scale: float) -> str:
    if binary:  # only 0 and 1: the share at 1 says it all (a 1 is in the last bin, a 0 in the first)
        return f'<td data-binary="{e(key)}">{share_svg(counts[-1], sum(counts), label=f"{name} {title}")}</td>'
    return f"<td>{histogram_svg(counts, label=f'{name} {title}', top_share=scale)}</td>"


def histograms_section(
    histograms: Mapping[str, Mapping[str, Sequence[int]]], binary: Mapping[str, frozenset[str]] | None = None
) -> str:
    binary = binary or {}
    head = "".join(f"<th>{e(title)}</th>" for _, title in COMPONENTS)
    scale = top_share(
        {name: {k: c for k, c in per_key.items() if k not in binary.get(name, ())} for name, per_key in histograms.items()}
    )
    rows = []
    for name, per_key in histograms.items():
        cells = "".join(_chart(name, key, title, per_key[key], key in binary.get(name, ()), scale) for key, title in COMPONENTS)
        rows.append(f'<tr data-type="{e(name)}"><td>{e(name)}</td>{cells}</tr>')
    return (
        '<h2 id="histograms">Reward components per type</h2>'
        f'<p class="muted">Scored rows in ten bins over [0, 1]. Bar heights are shares of the type\'s scored rows, '
        f"on one scale for every chart (0 to {100 * scale:.0f}%), so bars compare across types and components; "
        "hover a bar for its count. A component whose values are only 0 or 1 for a type (an answer, a format gate) is "
        "one bar: the share of rows at 1.</p>"
        f'<div class="wide"><table class="grid"><tr><th>type</th>{head}</tr>{"".join(rows)}</table></div>'
    )


def failures_section(table: Sequence[TypeStats], mismatches: Mapping[str, Mapping[str, int]] | None = None) -> str:
    kinds = sorted({kind for counts in (mismatches or {}).values() for kind in counts})
    head = "".join(f'<th title="{e(meaning)}">{e(title)}</th>' for _, title, meaning, _ in FAILURES)
    head += "".join(f'<th title="{e(kind_meaning(kind))}">mismatch {e(kind)}</th>' for kind in kinds)
    rows = []
    for s in table:
        cells = "".join(_share(s.failures[key], s.scored) for key, *_ in FAILURES)
        cells += "".join(_share((mismatches or {}).get(s.name, {}).get(kind, 0), s.scored) for kind in kinds)
        cls = ' class="all"' if s.name == ALL else ""
        rows.append(
            f'<tr{cls} data-type="{e(s.name)}"><td>{e(s.name)}</td><td class="n">{s.failures["not_scored"]}</td>{cells}</tr>'
        )
    legend = "".join(f"<li><b>{e(title)}</b>: {e(meaning)}</li>" for _, title, meaning, _ in FAILURES)
    legend += "".join(f"<li><b>mismatch {e(kind)}</b>: {e(kind_meaning(kind))} (re-scored rows)</li>" for kind in kinds)
    return (
        '<h2 id="failures">Failures</h2>'
        "<p class=\"muted\">Counts of scored rows (and share of the type's scored rows), read from each row's flags; "
        "a row can be in several columns. <i>not scored</i> counts error lines.</p>"
        f'<div class="wide"><table class="failures sortable"><tr><th>type</th><th>not scored</th>{head}</tr>{"".join(rows)}</table></div>'
        f"<ul>{legend}</ul>"
    )


def _share(count: int, total: int) -> str:
    share = f" ({100 * count / total:.0f}%)" if total else ""
    return f'<td class="n" data-count="{count}">{count}{share}</td>'


def metrics_section(by_type: Mapping[str, Mapping[str, float]], overall: Mapping[str, float], note: str = "") -> str:
    """The field metrics per type (a column per metric, ``-`` where a type has none) and the run's group statistic."""
    names = sorted({name for values in by_type.values() for name in values})
    head = "".join(f"<th>{e(name)}</th>" for name in names)
    rows = []
    for kind in sorted(by_type):
        values = by_type[kind]
        cells = "".join(
            f'<td class="n" data-metric="{e(name)}">{num(values[name])}</td>' if name in values else '<td class="n muted">-</td>'
            for name in names
        )
        rows.append(f'<tr data-type="{e(kind)}"><td>{e(kind)}</td>{cells}</tr>')
    groups = int(overall.get("groups", 0))
    share = overall.get("zero_variance_groups_share", 0.0)
    accuracy = overall.get("answer_accuracy")
    run_line = (
        f"Over the run: answer accuracy {num(accuracy) if accuracy is not None else '-'}; "
        f"{groups} groups (consecutive rows of one id, at least 2), {num(share)} of them with zero variance of overall."
    )
    return (
        '<h2 id="metrics">Field metrics</h2>'
        '<p class="muted">Read from the scorer\'s own assignment (the rows re-scored with a trail, as '
        "<code>score --summary-json</code> does): acc@iou<i>t</i> for a box, the share of rows whose IoU is at least "
        "<i>t</i>; f1@iou<i>t</i> (f1@sim<i>t</i>) for collections, the F1 of matched pairs at or above <i>t</i> against "
        "the predicted and target items, averaged over rows; acc@sim0.5 for points and segments (within one half-life); "
        f"size_mae, the mean absolute set-size error of parsed predictions.{' ' + e(note) if note else ''}</p>"
        f'<p class="run-metrics">{e(run_line)}</p>'
        f'<div class="wide"><table class="metrics sortable"><tr><th>type</th>{head}</tr>{"".join(rows)}</table></div>'
    )


def audit_section(entries: Sequence[Mapping[str, object]], table: Sequence[TypeStats], note: str = "") -> str:
    """What fixed image-blind policies earn on the instances, beside this run's mean overall per type."""
    run = {s.name: s.means["overall"] for s in table if s.scored}
    rows = []
    for entry in entries:
        kind, flagged = str(entry["annotation_type"]), bool(entry["flagged"])
        mean = float(entry["mean_overall"])  # type: ignore[arg-type]
        this_run = run.get(kind)
        what = "FLAGGED" if flagged else ("image-blind" if entry["image_blind"] else "reference")
        flag_class = ' class="flag"' if flagged else ""
        rows.append(
            f'<tr data-type="{e(kind)}" data-policy="{e(entry["policy"])}"{flag_class}>'
            f'<td>{e(kind)}</td><td>{e(entry["policy"])}</td><td class="n">{e(entry["rows"])}</td>'
            f'<td class="n">{num(mean)}</td><td class="n">{num(this_run) if this_run is not None else "-"}</td><td>{what}</td></tr>'
        )
    flagged_count = sum(bool(entry["flagged"]) for entry in entries)
    warning = (
        f'<p class="warning" role="alert">{flagged_count} image-blind polic{"ies" if flagged_count != 1 else "y"} '
        "earn a mean overall of 0.2 or more on these instances: a model can learn them without looking at the image.</p>"
        if flagged_count
        else ""
    )
    return (
        '<h2 id="audit">What image-blind answers earn (audit)</h2>'
        '<p class="muted">The policies of <code>trace-tasks audit</code> scored on the instances with this run\'s options: '
        "the majority answer of each (answer type, annotation type) group, alone or with an empty, whole-image or mean "
        "annotation, and the correct answer alone or with the whole image (references). Compare with this run's mean "
        f"overall per type.{' ' + e(note) if note else ''}</p>{warning}"
        '<div class="wide"><table class="audit sortable"><tr><th>type</th><th>policy</th><th>rows</th><th>mean overall</th>'
        f"<th>this run</th><th></th></tr>{''.join(rows)}</table></div>"
    )


def baseline_section(deltas: Sequence[Delta], baseline_name: str, warning: str = "") -> str:
    head = "".join(
        f"<th>{e(title)} now</th><th>before</th><th>delta</th>" + ("<th></th>" if key == "overall" else "")
        for key, title in COMPONENTS
    )
    rows = []
    shown = [abs(c) for d in deltas if (c := d.change("overall")) is not None]
    scale = max(shown, default=1.0) or 1.0
    for d in deltas:
        cells = []
        for key, _ in COMPONENTS:
            now = num(d.now[key]) if d.now is not None else "-"
            before = num(d.before[key]) if d.before is not None else "-"
            change = d.change(key)
            bar = f"<td>{delta_bar_svg(change, scale=scale)}</td>" if key == "overall" else ""  # one bar: the reward trained on
            cells.append(f'<td class="n">{now}</td><td class="n">{before}</td>{signed(change)}{bar}')
        cls = ' class="all"' if d.name == ALL else ""
        rows.append(
            f'<tr{cls} data-type="{e(d.name)}"><td>{e(d.name)}</td><td class="n">{d.rows[0]}</td>'
            f'<td class="n">{d.rows[1]}</td>{"".join(cells)}</tr>'
        )
    return (
        f'<h2 id="baseline">Compared with {e(baseline_name)}</h2>'
        + (f'<p class="warning" role="alert">{e(warning)}</p>' if warning else "")
        + '<p class="muted">Means over scored rows; delta = this run minus the baseline.</p>'
        f'<div class="wide"><table class="baseline sortable"><tr><th>type</th><th>rows now</th><th>rows before</th>{head}</tr>'
        f"{''.join(rows)}</table></div>"
    )


def _estimate(found: Estimate | None) -> str:
    """A mean and the half-width of its 95% interval (``0.512 ± 0.012``), ``-`` without values."""
    if found is None or not found.n:
        return '<td class="n muted">-</td>'
    half = f" ± {found.high - found.mean:.3f}" if found.stderr is not None else ""
    se = f"{found.stderr:.6f}" if found.stderr is not None else ""
    return f'<td class="n est" data-mean="{found.mean:.6f}" data-stderr="{se}">{found.mean:.3f}{half}</td>'


def runs_section(runs: Sequence[RunSummary], note: str = "") -> str:
    """The runs side by side (a row each: every series over all types), then per type a curve of each series over the runs."""
    head = "".join(f"<th>{e(title)}</th>" for _, title in SERIES)
    rows = []
    for run in runs:
        estimates = run.estimates.get(ALL, {})
        cells = "".join(_estimate(estimates.get(key)) for key, _ in SERIES)
        rows.append(
            f'<tr data-run="{e(run.label)}"><td>{e(run.label)}</td><td class="n">{run.rows.get(ALL, 0)}</td>'
            f'<td class="n">{run.scored}</td>{cells}</tr>'
        )
    types = [ALL, *sorted({name for run in runs for name in run.estimates} - {ALL})]
    blocks = []
    for name in types:
        charts = []
        for key, title in SERIES:
            points: list[tuple[str, float, float, float] | None] = []
            for run in runs:
                found = run.estimates.get(name, {}).get(key)
                points.append((run.label, found.mean, found.low, found.high) if found is not None and found.n else None)
            charts.append(
                f'<figure data-series="{e(key)}"><figcaption>{e(title)}</figcaption>'
                f"{curve_svg(points, label=f'{name} {title}')}</figure>"
            )
        blocks.append(
            f'<div class="curves" data-type="{e(name)}"><h3>{e(name)}</h3><div class="charts">{"".join(charts)}</div></div>'
        )
    return (
        f'<h2 id="runs">Over {len(runs)} runs</h2>'
        '<p class="muted">Each run\'s mean over its scored rows, with the half-width of the 95% interval (mean ± 1.96 '
        "standard errors; standard error = sample standard deviation / √n). A failure column is the share of scored rows "
        f"in that category. The sections below the curves show the last run.{' ' + e(note) if note else ''}</p>"
        f'<div class="wide"><table class="runs sortable"><tr><th>run</th><th>rows</th><th>scored</th>{head}</tr>'
        f"{''.join(rows)}</table></div>"
        '<p class="muted">Per type, each series over the runs (left to right): a dot is the mean, its bar the 95% '
        "interval; hover a dot for its numbers.</p>" + "".join(blocks)
    )


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """The start of a response, with the length of what was left out."""
    return text if len(text) <= limit else f"{text[:limit]}\n... ({len(text) - limit} more characters of {len(text)})"


#: Characters of a predicted or expected value shown up front in a case (the rest is in the fold).
VALUE_CHARS = 160


def _value(text: str) -> str:
    short = text if len(text) <= VALUE_CHARS else f"{text[:VALUE_CHARS]}... ({len(text)} characters)"
    return f"<code>{e(short)}</code>"


def _predicted_expected(case: Case) -> str:
    """The strip at the top of a case: predicted and expected answer and annotation, side by side."""
    if case.predicted is None or case.expected is None:
        return ""
    (answer, annotation), (answer_gt, annotation_gt) = case.predicted, case.expected
    return (
        '<table class="pe"><tr><th></th><th>answer</th><th>annotation</th></tr>'
        f'<tr class="predicted"><th scope="row">predicted</th><td>{_value(answer)}</td><td>{_value(annotation)}</td></tr>'
        f'<tr class="expected"><th scope="row">expected</th><td>{_value(answer_gt)}</td><td>{_value(annotation_gt)}</td></tr>'
        "</table>"
    )


def _picture_html(case: Case) -> str:
    """The overlay: its crop first with the whole picture one click away (a ``<details>``, no script), or the whole picture."""
    assert case.picture is not None
    alt = e("overlay of " + id_text(case.row.id))
    full = f'<img alt="{alt}" src="data:image/png;base64,{base64.b64encode(case.picture).decode("ascii")}">'
    if case.crop is None:
        return f'<div class="pic">{full}</div>'
    crop = base64.b64encode(case.crop).decode("ascii")
    return (
        f'<details class="pic"><summary><img class="crop" alt="{alt} (cropped to the target and prediction)" '
        f'src="data:image/png;base64,{crop}"><span class="hint closed">cropped: click for the full image</span>'
        f'<span class="hint opened">the full image (click to crop)</span></summary>{full}</details>'
    )


def case_html(case: Case, group_by: str = "") -> str:
    """A compact card: a one-line title with the overall, predicted vs expected, the breakdown beside a thumbnail.

    The response and the explanation are folded below (their first lines are
    what the strip above already says).
    """
    row = case.row
    title = f"{row.type} · id {id_text(row.id)} · scores line {row.number}" + (f" · input line {row.line}" if row.line else "")
    overall = f' <span class="overall">overall {row.scores["overall"]:.3f}</span>' if row.scored else ""
    kind = failure_kind(row) if row.scored else "not_scored"
    attributes = f'data-line="{row.number}" data-id="{e(id_text(row.id))}" data-type="{e(row.type)}" data-kind="{kind}"'
    if group_by:
        extra = row.scores.get("extra")
        attributes += f' data-group="{e(group_name(extra.get(group_by) if isinstance(extra, Mapping) else None))}"'
    parts = [f'<div class="case" {attributes}><h3>{e(title)}</h3>{overall}', _predicted_expected(case)]
    main = []
    if row.error is not None:
        main.append(f"<p>not scored: {e(row.error)}</p>")
    else:
        lines = case.breakdown or tuple(reward_breakdown(row.scores))
        main.append(f'<pre class="breakdown">{e(chr(10).join(lines))}</pre>')
    if case.picture is not None:
        main.append(_picture_html(case))
    parts.append(f'<div class="case-main">{"".join(main)}</div>')
    if case.response is not None:
        parts.append(
            f"<details><summary>response ({len(case.response)} characters)</summary>"
            f'<pre class="response">{e(excerpt(case.response))}</pre></details>'
        )
        surrogates = without_surrogates(case.response)[1]
        if surrogates:
            parts.append(f'<p class="muted note">note: {e(surrogate_note(surrogates))}</p>')
    if case.explanation:
        parts.append(f"<details><summary>explanation</summary><pre>{e(chr(10).join(case.explanation))}</pre></details>")
    if case.note:
        parts.append(f'<p class="muted">{e(case.note)}</p>')
    parts.append("</div>")
    return "".join(parts)


def paired_section(paired: Paired, baseline_name: str) -> str:
    """The per-row comparison: per type how many rows improved, worsened or stayed, then the biggest changes."""
    rows = []
    scale = _delta_scale(paired.by_type.values())
    for name, t in paired.by_type.items():
        cls = ' class="all"' if name == ALL else ""
        rows.append(
            f'<tr{cls} data-type="{e(name)}"><td>{e(name)}</td><td class="n">{t.paired}</td>'
            f'<td class="n" data-improved="{t.improved}">{t.improved}</td>'
            f'<td class="n" data-worsened="{t.worsened}">{t.worsened}</td>'
            f'<td class="n" data-unchanged="{t.unchanged}">{t.unchanged}</td>{signed(t.mean_delta if t.paired else None)}'
            f"<td>{delta_bar_svg(t.mean_delta, scale=scale) if t.paired else ''}</td></tr>"
        )
    total = paired.by_type[ALL].paired if ALL in paired.by_type else 0
    intro = (
        f"This run's scored rows joined with those of {baseline_name}: by (id, line), else by id when the id is on one "
        f"baseline row. {total} rows paired; {paired.unpaired} of this run's scored rows have no partner "
        f"(the baseline has {paired.baseline_rows} scored rows). Delta = overall here minus overall in the baseline; "
        "unchanged: within 1e-9."
    )
    return (
        '<h2 id="paired">Row by row against the baseline</h2>'
        f'<p class="muted">{e(intro)}</p>'
        '<div class="wide"><table class="paired sortable"><tr><th>type</th><th>paired</th><th>improved</th>'
        f"<th>worsened</th><th>unchanged</th><th>mean delta</th><th></th></tr>{''.join(rows)}</table></div>"
        + _changes_table("improved", "Biggest improvements", paired.improved)
        + _changes_table("worsened", "Biggest drops", paired.worsened)
    )


def _delta_cell(d: DeltaStats, scale: float) -> str:
    """A paired delta: mean ± standard error, its bootstrap 95% interval, a bar; greyed "within noise" when it holds 0."""
    if not d.n:
        return '<td class="n muted">-</td><td></td>'
    se = f" ± {d.stderr:.3f}" if d.stderr is not None else ""
    interval = f"[{d.interval[0]:+.3f}, {d.interval[1]:+.3f}]" if d.interval is not None else "[-]"
    low, high = (f"{v:.6f}" for v in d.interval) if d.interval is not None else ("", "")
    cls = "within-noise muted" if d.contains_zero else ("pos" if d.mean > 0 else "neg")
    noise = '<br><span class="noise">within noise</span>' if d.contains_zero else ""
    return (
        f'<td class="n delta {cls}" data-key="{d.key}" data-mean="{d.mean:.6f}" '
        f'data-stderr="{f"{d.stderr:.6f}" if d.stderr is not None else ""}" data-low="{low}" data-high="{high}" '
        f'data-noise="{int(d.contains_zero)}">{d.mean:+.3f}{se}<br>{interval}{noise}</td>'
        f"<td>{delta_bar_svg(d.mean, scale=scale, interval=d.interval, muted=d.contains_zero)}</td>"
    )


def _delta_scale(cells: Iterable[PairedTotals]) -> float:
    """The largest |interval bound| (or |mean| without an interval) shown: every delta bar's full half-width."""
    bounds = [1e-9]
    for t in cells:
        for d in t.deltas().values():
            if d.n:
                bounds.extend(abs(v) for v in (d.interval if d.interval is not None else (d.mean,)))
    return max(bounds)


def deltas_section(paired: Paired, group_by: str = "") -> str:
    """Every reward column's paired delta per type (and per group), with its standard error and bootstrap interval."""
    tables = [("type", paired.by_type)] + ([(group_by or "group", paired.by_group)] if paired.by_group else [])
    scale = _delta_scale(t for _, cells in tables for t in cells.values())
    head = "".join(f"<th>delta {e(title)}</th><th></th>" for _, title in COMPONENTS)
    html = []
    for kind, cells in tables:
        rows = []
        for name, t in cells.items():
            cls = ' class="all"' if name == ALL else ""
            stats = t.deltas()
            cells_html = "".join(_delta_cell(stats[key], scale) for key, _ in COMPONENTS)
            rows.append(
                f'<tr{cls} data-{"type" if kind == "type" else "group"}="{e(name)}"><td>{e(name)}</td>'
                f'<td class="n">{t.paired}</td>{cells_html}</tr>'
            )
        name = "types" if kind == "type" else "groups"
        html.append(
            f'<div class="wide"><table class="deltas deltas-{name} sortable"><tr><th>{e(kind)}</th><th>paired</th>'
            f"{head}</tr>{''.join(rows)}</table></div>"
        )
    intro = (
        "Per row, this run minus the baseline; shown: the mean of those differences ± its standard error, "
        "then its bootstrap 95% interval (seeded, so the same files give the same interval). A delta whose "
        f"interval contains 0 is greyed and marked within noise. Bars are drawn to ±{scale:.3f}, the largest "
        "interval bound shown; the whisker is the interval."
    )
    return f'<h2 id="deltas">Paired deltas with their uncertainty</h2><p class="muted">{e(intro)}</p>' + "".join(html)


def _changes_table(name: str, title: str, changes: Sequence[Change]) -> str:
    if not changes:
        return f'<h3>{e(title)}</h3><p class="muted">none</p>'
    rows = "".join(
        f'<tr data-line="{c.number}" data-type="{e(c.type)}" data-id="{e(id_text(c.id))}"><td class="n">{c.number}</td><td>{e(id_text(c.id))}</td>'
        f'<td class="n">{c.line if c.line is not None else "-"}</td><td>{e(c.type)}</td>'
        f'<td class="n">{num(c.before)}</td><td class="n">{num(c.now)}</td>{signed(c.delta)}<td>{delta_bar_svg(c.delta)}</td></tr>'
        for c in changes
    )
    return (
        f'<h3>{e(title)}</h3><div class="wide"><table class="changes {name} sortable"><tr><th>scores line</th><th>id</th>'
        f"<th>input line</th><th>type</th><th>before</th><th>now</th><th>delta</th><th></th></tr>{rows}</table></div>"
    )


def cases_section(anchor: str, title: str, intro: str, cases: Sequence[Case], group_by: str = "") -> str:
    body = "".join(case_html(c, group_by) for c in cases) or '<p class="muted">no rows</p>'
    return f'<h2 id="{anchor}">{e(title)}</h2><p class="muted">{e(intro)}</p>{body}'


def page(report: Report, *, worst_intro: str = "", sample_intro: str = "") -> str:
    """The whole HTML document."""
    sections = [
        *([runs_section(report.runs, report.runs_note)] if report.runs is not None else []),
        summary_section(report),
        type_table_section(report.table),
        *([group_table_section(report.group_by, report.groups)] if report.groups is not None else []),
        histograms_section(report.histograms, report.binary),
        failures_section(report.table, report.mismatches),
    ]
    if report.metrics is not None:
        sections.append(metrics_section(report.metrics, report.metrics_overall, report.metrics_note))
    if report.audit is not None:
        sections.append(audit_section(report.audit, report.table, report.audit_note))
    if report.deltas is not None:
        sections.append(baseline_section(report.deltas, report.baseline_name, report.baseline_warning))
    if report.paired is not None:
        sections.append(paired_section(report.paired, report.baseline_name))
        sections.append(deltas_section(report.paired, report.group_by))
    group_by = report.group_by if report.groups is not None else ""
    sections.append(cases_section("worst", "Worst cases", worst_intro, report.worst, group_by))
    sections.append(
        cases_section("correct-worst", "Correct answer, worst annotation", CORRECT_WORST_INTRO, report.correct_worst, group_by)
    )
    sections.append(cases_section("sample", "Random sample", sample_intro, report.sample, group_by))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(report.title)}</title><style>{CSS}</style></head><body>"
        f"<h1>{e(report.title)}</h1>{filter_bar(report)}" + "".join(sections) + f"<script>{SCRIPT}</script></body></html>\n"
    )
