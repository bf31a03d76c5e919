"""``trace-tasks report``: one self-contained HTML page from a scores file.

Reads a scores file as ``trace-tasks score`` writes it (and, optionally, the
instances and responses it was scored from, and a baseline scores file) and
writes one HTML file with no network reference: the run summary, the
per-type table, histograms of each reward component per type, the failure
breakdown, the comparison with the baseline, and the worst cases and a
seeded random sample, each with its reward breakdown, its response excerpt,
the ``explain`` report and the overlay picture (when the instances are given,
and Pillow is installed for the picture).

The scores file is streamed: each row updates an
:class:`~trace_tasks.cli.report._data.Aggregate` (counts, sums, histogram
bins, failure counts; the worst rows of each type and failure kind in bounded
heaps; a seeded reservoir of sampled rows; with ``--baseline``, the per-row
join against the baseline streamed first into a compact
:class:`~trace_tasks.cli.report._data.BaselineIndex`) and is dropped, so memory
does not grow with the rows (1,000,000 rows: about 50 MB,
``benchmarks/bench_report.py``). The page is a pure function of the
aggregates (:mod:`trace_tasks.cli.report._html`, :mod:`trace_tasks.cli.report._svg`).

Besides the files named on the command line, the report reads one thing: the
``image`` an instance names, for the overlay picture of a case shown. Only a
real image is drawn (:func:`trace_tasks.cli._views.drawing.image_problem`: PNG, JPEG, GIF or WebP by its
first bytes and as Pillow opens it, within its bounds); any other file is refused with a note in the case,
so an instance cannot put a local file into a page meant to be shared.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from trace_tasks.cli._options import FileRoles, int_at_least
from trace_tasks.cli._views import drawing as _drawing
from trace_tasks.cli._views.breakdown import reward_breakdown
from trace_tasks.cli._views.drawing import image_problem
from trace_tasks.cli._views.sections import explain_response, metric_name
from trace_tasks.cli.report._data import (
    Aggregate,
    BaselineIndex,
    Row,
    ScoresFileError,
    deltas,
    options_differences,
    parse_row,
    run_options,
)
from trace_tasks.cli.report._html import Case, Report, page
from trace_tasks.cli.report._runs import RunSummary, RunTotals, StepTotals, labels_for
from trace_tasks.cli.report._shares import Binary, CorrectWorst
from trace_tasks.data import compile_instance
from trace_tasks.errors import TraceTasksError
from trace_tasks.runs import (
    REPLACED_WHEN_DONE,
    STDIO,
    UsageError,
    counts_text,
    file_warnings,
    open_binary,
    open_outputs,
    read_lines,
)
from trace_tasks.runs import (
    describe as describe,
)
from trace_tasks.scoring import options_from

EXIT_OK = 0
DEFAULT_OUTPUT = "report.html"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "report",
        help="one self-contained HTML report of a scores file (tables, histograms, failures, worst cases)",
        description=(
            "Write one self-contained HTML file (no network: CSS, SVG charts and pictures inline) from SCORES, a file "
            "written by 'trace-tasks score': the run summary, the per-type table, histograms of each reward component "
            "per type, the failure breakdown, the worst cases and a seeded random sample. With --instances (and "
            "--responses for the two-file layout) each case shows its response and explanation, and its overlay "
            "picture when Pillow is installed. With --baseline, the two runs are compared per type and row by row "
            "(rows paired by id and line, else id)."
        ),
    )
    parser.add_argument(
        "scores",
        metavar="SCORES",
        nargs="+",
        help="scores file written by 'trace-tasks score' (.jsonl, .jsonl.gz); several (checkpoints, in order) are drawn "
        "as curves over the runs and tabulated side by side, the other sections showing the last",
    )
    parser.add_argument(
        "--label",
        action="append",
        metavar="NAME",
        default=None,
        help="the name of a SCORES file on the page, once per file in order (default: the file's name)",
    )
    parser.add_argument(
        "--step",
        metavar="COLUMN",
        default=None,
        help="one SCORES file holding several steps: split it by this column (kept by 'score --keep COLUMN') into runs",
    )
    parser.add_argument("--instances", metavar="I", help="the instances scored (with their 'response' unless --responses)")
    parser.add_argument("--responses", metavar="R", help="the responses file scored with --responses")
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        default=DEFAULT_OUTPUT,
        help=f"the HTML file (default %(default)s); {REPLACED_WHEN_DONE}",
    )
    parser.add_argument(
        "--tool-call",
        metavar="JSON",
        default=None,
        help="the tool call the scores were read from (score's --tool-call): its rows echo only that one was declared",
    )
    parser.add_argument("--baseline", metavar="OTHER_SCORES", help="another scores file to compare with, per type and row by row")
    parser.add_argument(
        "--sample", type=int_at_least(0), default=10, metavar="N", help="random cases shown (default %(default)s)"
    )
    parser.add_argument(
        "--worst", type=int_at_least(0), default=10, metavar="N", help="lowest-overall cases shown (default %(default)s)"
    )
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the random sample (default %(default)s)")
    parser.add_argument(
        "--no-audit", action="store_true", help="with --instances: leave out what image-blind policies earn (trace-tasks audit)"
    )
    parser.add_argument(
        "--group-by",
        metavar="COLUMN",
        default=None,
        help="also tabulate the rows per value of an input column kept by 'score --keep COLUMN' (or --group-by)",
    )
    parser.add_argument(
        "--no-metrics",
        action="store_true",
        help="with --instances: leave out the field metrics (acc@iou0.5, f1@iou0.5, ...: every row is re-scored with a trail)",
    )
    parser.set_defaults(
        func=run,
        file_roles=FileRoles(
            inputs=(("scores", "SCORES"), ("instances", "--instances"), ("responses", "--responses"), ("baseline", "--baseline")),
            outputs=(("output", "--output"),),
        ),
    )


class _Sink(Protocol):
    def add(self, row: Row) -> None: ...


def stream_scores(path: str, into: _Sink, *also: _Sink) -> None:
    """Every row of a scores file into ``into`` (and ``also``), one at a time; :class:`UsageError` naming the first bad line."""
    source = "<stdin>" if path == STDIO else path
    with open_binary(path) as fh:
        try:
            for line in read_lines(fh, path):
                row = parse_row(line, source)
                into.add(row)
                for other in also:
                    other.add(row)
        except ScoresFileError as exc:
            raise UsageError(str(exc)) from None


def _check_runs(args: argparse.Namespace) -> None:
    paths = args.scores
    if args.label is not None and len(args.label) != len(paths):
        raise UsageError(
            f"--label is given {len(args.label)} time(s) for {len(paths)} SCORES file(s): give one per file, in order"
        )
    if args.step is not None and len(paths) != 1:
        raise UsageError("--step splits one SCORES file into runs: give one file, or several files without --step")


def run(args: argparse.Namespace) -> int:
    if isinstance(args.scores, str):  # a caller building the namespace by hand
        args.scores = [args.scores]
    args.label = getattr(args, "label", None)
    args.step = getattr(args, "step", None)
    _check_runs(args)
    if args.responses is not None and args.instances is None:
        raise UsageError("--responses needs --instances (the responses are explained against their instances)")
    paths = list(args.scores)
    labels = labels_for(paths, args.label)
    runs: list[RunSummary] | None = None
    last_runs: list[RunTotals | StepTotals] = []
    if len(paths) > 1:  # the earlier runs: their aggregates only, one file at a time
        runs = []
        for path, label in zip(paths[:-1], labels[:-1], strict=True):
            earlier = RunTotals(label)
            stream_scores(path, earlier)
            runs.append(earlier.summary())
        last_runs.append(RunTotals(labels[-1]))
    elif args.step is not None:
        last_runs.append(StepTotals(args.step))
    args.scores = paths[-1]  # the other sections show the last run
    index, before = None, None
    if args.baseline:  # first: its rows are joined with this run's as they stream
        index, before = BaselineIndex(), Aggregate()
        stream_scores(args.baseline, index, before)
        index.freeze()
    wants_metrics = bool(args.instances) and not getattr(args, "no_metrics", False)
    found = Aggregate(
        worst=args.worst, sample=args.sample, seed=args.seed, group_by=getattr(args, "group_by", None) or None,
        keep_lines=wants_metrics, baseline=index,
    )  # fmt: skip
    binary, correct = Binary(), CorrectWorst(args.worst)
    stream_scores(args.scores, found, binary, correct, *last_runs)
    runs_note = ""
    for totals in last_runs:
        if isinstance(totals, StepTotals):
            runs = totals.summaries()
            if not runs:
                raise UsageError(
                    f"--step {args.step}: no row of {args.scores} has the column {args.step!r} (top level or under "
                    f"'extra'): score with --keep {args.step} to carry it"
                )
            if totals.without:
                runs_note = f"{totals.without} row(s) have no {args.step} and are in no run."
        else:
            assert runs is not None
            runs.append(totals.summary())
    table = found.type_table()
    worst_rows, sample_rows, correct_rows = found.worst(), found.sample(), correct.rows()
    cases = build_cases(args, [*worst_rows, *sample_rows, *correct_rows])
    report = Report(
        title=f"trace-tasks report: {args.scores}" + (f" and {len(paths) - 1} earlier run(s)" if len(paths) > 1 else ""),
        summary=summary(args, found, table),
        table=table,
        histograms=found.histograms(),
        worst=[cases[r.number] for r in worst_rows],
        sample=[cases[r.number] for r in sample_rows],
        deltas=deltas(table, before.type_table()) if before is not None else None,
        paired=found.paired(),
        baseline_name=args.baseline or "",
        notes=_notes(args),
        baseline_warning=baseline_warning(found.first_scored, before.first_scored) if before is not None else "",
        **audit_fields(args, found.first_scored),
        **metrics_fields(args, found),
        **group_fields(args, found),
        runs=runs,
        runs_note=runs_note,
        binary=binary.binary(),
        correct_worst=[cases[r.number] for r in correct_rows],
    )
    html = page(
        report,
        worst_intro=(
            f"The {len(worst_rows)} scored rows with the lowest overall reward, taken in turn from each annotation "
            "type (the type with the lowest row first), and within a type from each failure kind (a row's first "
            "failure column, or none); ties in file order."
        ),
        sample_intro=f"{len(sample_rows)} rows drawn at random with seed {args.seed} (the same seed gives the same rows).",
    )
    with open_outputs(args.output) as (out,):
        assert out is not None
        out.write(html)
    if args.output != STDIO:
        over = f", {len(runs)} runs" if runs is not None else ""
        print(f"wrote {args.output}: {found.all.rows} rows, {len(report.worst)} worst cases, {len(report.sample)} sampled{over}")
    return EXIT_OK


def summary(args: argparse.Namespace, found: Aggregate, table: Sequence[Any]) -> tuple[tuple[str, str], ...]:
    overall = table[-1]
    options = run_options(found.first_scored) if found.first_scored is not None else {}
    items = [
        ("scores file", args.scores),
        ("rows", f"{overall.rows}: {overall.scored} scored, {overall.rows - overall.scored} not scored"),
        ("annotation types", str(len(table) - 1)),
        *((f"mean {key}", f"{value:.4f}") for key, value in overall.means.items()),
    ]
    if options:
        items.append(("options (first row)", ", ".join(f"{k}={v}" for k, v in options.items())))
    if args.instances:
        items.append(("instances", args.instances + (f", responses {args.responses}" if args.responses else "")))
        items.append(("data warnings", data_warnings(args.instances)))
    if args.baseline:
        items.append(("baseline", args.baseline))
    return tuple(items)


def group_fields(args: argparse.Namespace, found: Aggregate) -> dict[str, Any]:
    """The ``--group-by`` table's data: the column and its table (only the ``all`` row when no row keeps it)."""
    column = getattr(args, "group_by", None)
    if not column:
        return {}
    table = found.group_table() if found.column_seen else []
    return {"group_by": column, "groups": table}


def metrics_fields(args: argparse.Namespace, found: Aggregate) -> dict[str, Any]:
    """The field metrics section's data (:mod:`trace_tasks.cli.report._metrics`), unless ``--no-metrics``."""
    if not args.instances or getattr(args, "no_metrics", False):
        return {}
    from trace_tasks.cli.report._metrics import run_metrics

    metrics = run_metrics(found.lines, args.instances, args.responses)
    scored = found.all.scored
    notes = []
    if metrics.rescored != scored:
        notes.append(f"{metrics.rescored} of the {scored} scored rows were found in the inputs and re-scored.")
    if metrics.disagreeing:
        notes.append(
            f"{metrics.disagreeing} re-scored row(s) got another overall than the scores file: other inputs or another "
            "version scored this file, and the metrics describe the re-scoring."
        )
    return {
        "metrics": metrics.by_type,
        "metrics_overall": metrics.overall,
        "metrics_note": " ".join(notes),
        "mismatches": metrics.mismatches,
    }


def audit_fields(args: argparse.Namespace, scored: Row | None) -> dict[str, Any]:
    """The audit section's data (``trace-tasks audit`` on ``--instances``, with the run's options), unless ``--no-audit``.

    The options are those the first scored row echoes, except the point
    half-life: a row reports its own resolved one, so the audit keeps each
    instance's image-size policy.
    """
    if not args.instances or getattr(args, "no_audit", False):
        return {}
    from trace_tasks.cli._views import audit  # loaded when asked: most reports have no --instances

    options = {**run_options(scored, args.tool_call), "point_half_life_px": None} if scored is not None else {}
    with open_binary(args.instances) as fh:
        instances = audit.load(read_lines(fh, args.instances), args.instances, options.get("trace_reward_mode"))
    result = audit.audit(instances.compiled, options, audit.DEFAULT_THRESHOLD)
    note = (
        f"{len(instances.problems)} problem(s) in the instances file: those instances are left out." if instances.problems else ""
    )
    return {"audit": result.entries(), "audit_note": note}


def baseline_warning(now: Row | None, before: Row | None) -> str:
    """A warning when the baseline was scored with other scorer options (its first scored row against this run's)."""
    if now is None or before is None:
        return ""
    differences = options_differences(run_options(now), run_options(before))
    if not differences:
        return ""
    return (
        "The baseline was scored with other scorer options (first scored row of each file): "
        + "; ".join(differences)
        + ". The deltas below mix a change of options with a change of model: score both runs with the same options."
    )


def data_warnings(path: str) -> str:
    """The warnings of the instances file by rule (the rules of ``trace-tasks validate``), for the run summary."""
    counts, lines = file_warnings(path)
    checked = f"{lines:,} instance line{'s' * (lines != 1)}"
    if not counts:
        return f"none in {checked}"
    total = sum(counts.values())
    return (
        f"{total:,} in {checked}: {counts_text(counts)} (warnings, not problems: the scores are as the "
        f"data says; 'trace-tasks validate {path}' lists each)"
    )


def _notes(args: argparse.Namespace) -> tuple[str, ...]:
    notes = []
    if not args.instances:
        notes.append("No --instances: cases show the reward breakdown only (no response, explanation or picture).")
    elif not _drawing.pillow_available():
        notes.append(f"No pictures: {_drawing.VIZ_MISSING}.")
    return tuple(notes)


# --- cases: response, explanation, picture ---


def _lines_wanted(path: str, numbers: set[int]) -> dict[int, Any]:
    """The parsed values of the given line numbers of a JSON Lines file (one pass, only those kept)."""
    found: dict[int, Any] = {}
    if not numbers:
        return found
    with open_binary(path) as fh:
        for line in read_lines(fh, path):
            if line.number in numbers:
                found[line.number] = line.value
                if len(found) == len(numbers):
                    break
    return found


def _instances_by_id(path: str, ids: set[str]) -> dict[str, Mapping[str, Any]]:
    """The first instance line of each wanted id."""
    found: dict[str, Mapping[str, Any]] = {}
    with open_binary(path) as fh:
        for line in read_lines(fh, path):
            value = line.value
            if isinstance(value, Mapping) and value.get("id") in ids and value["id"] not in found:
                found[value["id"]] = value
    return found


def build_cases(args: argparse.Namespace, rows: Iterable[Row]) -> dict[int, Case]:
    """A :class:`Case` per row (by scores line), with response, explanation and picture when the inputs allow."""
    rows = list(rows)
    if not args.instances:
        return {r.number: Case(r) for r in rows}
    lines = {r.line for r in rows if r.line is not None}
    if args.responses:
        responses = _lines_wanted(args.responses, lines)
        instances = _instances_by_id(args.instances, {r.id for r in rows if isinstance(r.id, str)})
    else:  # combined layout: the scored line holds the instance and its response
        combined = _lines_wanted(args.instances, lines)
        responses, instances = combined, {}
    cases = {}
    for row in rows:
        source = responses.get(row.line) if row.line is not None else None
        data = source if isinstance(source, Mapping) else {}
        response = data.get("response") if isinstance(data.get("response"), str) else None
        if response is None:
            cases[row.number] = Case(row, note=f"no response found on input line {row.line}")
            continue
        if args.responses:
            instance_data = instances.get(row.id) if isinstance(row.id, str) else None
        else:
            instance_data = {k: v for k, v in data.items() if k != "response"}
        cases[row.number] = explained_case(row, response, instance_data, args.instances, args.tool_call)
    return cases


def explained_case(
    row: Row, response: str, data: Mapping[str, Any] | None, instances_path: str = "", tool_call: Any = None
) -> Case:
    """The case of a row: its explanation and picture through the same code as ``trace-tasks explain``."""
    if data is None or data.get("id") != row.id:
        return Case(row, response, note=f"instance {row.id!r} not found in the instances file")
    if not row.scored:
        return Case(row, response)
    try:
        instance = compile_instance(dict(data))
        explained = explain_response(response, instance, options_from(run_options(row, tool_call)))
    except (ValueError, TraceTasksError) as exc:
        return Case(row, response, note=f"not explained: {exc}")
    note = ""
    if explained.result.get("overall") != row.scores.get("overall"):
        note = (
            f"re-scoring gives overall {explained.result.get('overall')!r}, the scores file {row.scores.get('overall')!r}: "
            "other options, other inputs or another version scored this file"
        )
    formula = explained.explanation.formula if explained.explanation is not None else ""
    breakdown = tuple(reward_breakdown(row.scores, reward_id=explained.reward_id, formula=formula))
    image, refused = _image(instance.data.get("image"), instances_path)
    picture, crop, why = _picture(explained, image)
    notes = "; ".join(n for n in (note, refused, why) if n)
    return Case(row, response, explained.lines, picture, notes, breakdown, *predicted_expected(explained), crop=crop)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=repr)


def predicted_expected(explained: Any) -> tuple[tuple[str, str], tuple[str, str]]:
    """(answer, annotation) the response gave, as the scorer read them, and those the instance expects, as JSON text."""
    trail, data = explained.trail, explained.instance.data
    gt, answer = data.get("annotation_gt"), data.get("answer_gt")  # answer_gt: absent in annotation_only
    return (
        (_json(trail.predicted_answer), _json(trail.prediction)),
        (
            _json(answer.get("value") if isinstance(answer, Mapping) else None),
            _json(gt.get("value") if isinstance(gt, Mapping) else None),
        ),
    )


def _image(image: Any, instances_path: str) -> tuple[str | None, str]:
    """The instance's ``image`` when it is a usable image file, else ``None`` and why (``""`` when there is none).

    A relative path is tried from the current directory, then from the
    instances file's folder; only a regular file is considered, and it is
    drawn only when :func:`image_problem` finds nothing wrong with it.
    """
    if not isinstance(image, str) or not image or "\0" in image:
        return None, ""
    for candidate in (Path(image), Path(instances_path).parent / image):
        try:
            found = candidate.is_file()
        except (OSError, ValueError):  # a name the system refuses (too long, undecodable)
            found = False
        if found:
            problem = image_problem(str(candidate))
            if problem:
                return None, f"the instance's image {image!r} is not drawn: it {problem} (the overlay is on a blank canvas)"
            return str(candidate), ""
    return None, ""


def _picture(explained: Any, image: str | None) -> tuple[bytes | None, bytes | None, str]:
    """The overlay as PNG bytes (over ``image`` when given) and its crop to the drawn items, or why there is none."""
    explanation = explained.explanation
    if explanation is None or not _drawing.pillow_available():
        return None, None, ""
    entry = explained.instance.annotation_entry
    if entry.draw is None:
        return None, None, f"the {entry.name!r} family cannot draw"
    draw = entry.draw

    def draw_item(value: Any) -> Any:
        return draw(annotation_type=entry.name, item=value)

    metric = metric_name(explanation.metric)
    context = explained.context
    try:
        picture, crop = _drawing.png_views(
            explanation, draw_item, owner=f"the plugin {entry.plugin!r}",
            size=context.image_size if context else None, image_path=image, metric=metric,
            header=[f"{explained.instance.data.get('id')}: {entry.name} ({explained.reward_id})"],
            half_life=context.half_life_px if context is not None and metric != "IoU" else None, hint=explained.hint,
        )  # fmt: skip
    except (_drawing.CannotDraw, OSError, ValueError) as exc:
        return None, None, f"no picture: {exc}"
    return picture, crop, ""
