"""``trace-tasks report`` in a real headless Chromium (Debian's ``chromium`` package).

The page loads with no console message (its one script, the table sorting,
logs nothing, so any message is an error: a blocked resource, a parse
problem, a script error), the key numbers are in the DOM Chromium built, a
table sorts, the case cards stay short at 1400 and 420 px, and a screenshot
of it is not blank. The
console check is first shown to catch a planted error, so it cannot pass
vacuously. Without Chromium these tests skip with the install command as the
reason; ``.ci/run`` is expected to install it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli.helpers import INSTANCES, RESPONSES, run_cli

pytestmark = pytest.mark.slow

CHROMIUM = next((path for name in ("chromium", "chromium-browser") if (path := shutil.which(name))), None)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="needs a headless Chromium: sudo apt-get install chromium (Debian's package)"
)
#: No network at all: any host name fails to resolve.
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--host-resolver-rules=MAP * ~NOTFOUND")


def _chromium(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, *FLAGS, "--enable-logging=stderr", "--v=0", f"--user-data-dir={cwd / 'profile'}", *args],
        capture_output=True, text=True, timeout=120, cwd=cwd, check=False,
    )  # fmt: skip


def _console(stderr: str) -> list[str]:
    """The page's console messages in Chromium's log (``INFO:CONSOLE(...)`` lines)."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The README's example run, reported with its instances, responses and pictures."""
    tmp = tmp_path_factory.mktemp("report")
    scores = tmp / "scores.jsonl"
    assert run_cli("score", str(INSTANCES), "--responses", str(RESPONSES), "-o", str(scores), "--quiet").returncode == 0
    html = tmp / "report.html"
    proc = run_cli("report", str(scores), "--instances", str(INSTANCES), "--responses", str(RESPONSES), "-o", str(html))
    assert proc.returncode == 0, proc.stderr.decode()
    return html


@needs_chromium
def test_the_console_check_catches_an_error(tmp_path: Path) -> None:
    page = tmp_path / "bad.html"
    page.write_text("<!DOCTYPE html><html><body><script>undefinedFunction();</script></body></html>")
    proc = _chromium("--dump-dom", page.as_uri(), cwd=tmp_path)
    assert any("undefinedFunction is not defined" in line for line in _console(proc.stderr)), proc.stderr[-2000:]


@needs_chromium
def test_the_report_loads_without_console_messages_and_shows_the_numbers(report: Path, tmp_path: Path) -> None:
    proc = _chromium("--dump-dom", report.as_uri(), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert _console(proc.stderr) == []
    dom = proc.stdout
    assert "108: 108 scored, 0 not scored" in dom
    assert "<td>bbox_set_map</td>" in dom and ">0.379<" in dom  # the per-type mean overall score prints too
    assert dom.count('class="case"') == 30  # worst, correct answer worst annotation, sample
    assert dom.count("<svg") >= 48  # 12 types x 4 components (a histogram or a 0/1 share)
    assert "30 of 30 cases shown" in dom  # the filter bar's script ran, and hides nothing by default


@needs_chromium
@pytest.mark.parametrize("width", [1400, 420])
def test_a_screenshot_of_the_report_is_not_blank(report: Path, tmp_path: Path, width: int) -> None:
    pil = pytest.importorskip("PIL.Image", reason="Pillow is the optional extra trace-core[viz]")
    shot = tmp_path / "shot.png"
    proc = _chromium(f"--window-size={width},1600", f"--screenshot={shot}", report.as_uri(), cwd=tmp_path)
    assert proc.returncode == 0 and shot.exists(), proc.stderr[-2000:]
    with pil.open(shot) as image:
        rgb = image.convert("RGB")
        assert rgb.size == (width, 1600)
        colours = rgb.getcolors(maxcolors=1 << 24) or []
        white = sum(count for count, colour in colours if colour == (255, 255, 255))
        assert len(colours) > 50 and white < 0.97 * width * 1600  # text, tables and bars, not an empty page
        assert any(colour == (0x3B, 0x6F, 0xD6) for _, colour in colours)  # the histogram bars' blue


@needs_chromium
def test_a_table_sorts_in_the_browser(report: Path, tmp_path: Path) -> None:
    # ``#sort=types:3:desc``: the per-type table by mean overall, highest first (the script's link to a sorted view).
    proc = _chromium("--dump-dom", report.as_uri() + "#sort=types:3:desc", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert _console(proc.stderr) == []
    table = proc.stdout.split('<table class="types sortable">', 1)[1].split("</table>", 1)[0]
    heads = re.findall(r"<th[^>]*>", table)
    assert 'aria-sort="descending"' in heads[3] and all('aria-sort="none"' in h for i, h in enumerate(heads) if i != 3)
    cells = re.findall(
        r'<tr( class="all")?><td>([^<]+)</td><td class="n">\d+</td><td class="n">\d+</td><td class="n est"[^>]*>([\d.]+) ± [\d.]+</td>',
        table,
    )
    means = [float(mean) for is_all, _, mean in cells if not is_all]
    assert len(means) == 12 and means == sorted(means, reverse=True)
    assert cells[-1][1] == "all"  # the all row stays last
    unsorted = report.read_text(encoding="utf-8").split('<table class="types sortable">', 1)[1]
    first = re.findall(r"<tr><td>([^<]+)</td>", unsorted.split("</table>", 1)[0])
    assert first == sorted(first) and [name for _, name, _ in cells[:-1]] != first  # the order did change


#: Appended to a copy of the page: the tallest case card and the page's width against the window's, into the DOM.
PROBE = (
    '<script>window.addEventListener("load", function () { var m = 0;'
    'document.querySelectorAll(".case").forEach(function (c) { m = Math.max(m, c.getBoundingClientRect().height); });'
    'document.body.setAttribute("data-case-max", String(Math.round(m)));'
    'document.body.setAttribute("data-widths", document.documentElement.scrollWidth + "/" + window.innerWidth); });'
    "</script>"
)


@needs_chromium
@pytest.mark.parametrize(("width", "tallest"), [(1400, 400), (420, 560)])
def test_case_cards_are_compact_at_two_widths(report: Path, tmp_path: Path, width: int, tallest: int) -> None:
    probe = tmp_path / "probe.html"
    html = report.read_text(encoding="utf-8")
    assert html.count('class="case"') == 30 and html.count('<img alt="overlay of ') in (0, 30)
    probe.write_text(html.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    proc = _chromium(f"--window-size={width},1600", "--dump-dom", probe.as_uri(), cwd=tmp_path)
    assert proc.returncode == 0 and _console(proc.stderr) == [], proc.stderr[-2000:]
    found = re.search(r'data-case-max="(\d+)"', proc.stdout)
    widths = re.search(r'data-widths="(\d+)/(\d+)"', proc.stdout)
    assert found is not None and widths is not None, proc.stdout[-500:]
    assert 100 < int(found.group(1)) <= tallest  # the cards were about 900 px tall
    assert int(widths.group(1)) <= int(widths.group(2))  # nothing wider than the window


@needs_chromium
def test_the_filters_hide_the_cases_and_rows_that_do_not_match(report: Path, tmp_path: Path) -> None:
    html = report.read_text(encoding="utf-8")
    cards = re.findall(r'<div class="case" data-line="\d+" data-id="([^"]*)" data-type="([^"]*)" data-kind="([^"]*)"', html)
    assert len(cards) == 30
    want = [c for c in cards if c[1] == "bbox" and c[2] == "wrong_answer"]
    assert 0 < len(want) < 30  # the filter below keeps some cards and hides others
    proc = _chromium("--dump-dom", report.as_uri() + "#filter=type=bbox&kind=wrong_answer", cwd=tmp_path)
    assert proc.returncode == 0 and _console(proc.stderr) == [], proc.stderr[-2000:]
    shown = re.findall(r'<div class="case" data-line="\d+" data-id="[^"]*" data-type="([^"]*)" data-kind="([^"]*)">', proc.stdout)
    hidden = re.findall(r'<div class="case" [^>]*hidden=""', proc.stdout)
    assert shown == [(c[1], c[2]) for c in want] and len(hidden) == 30 - len(want)
    assert f"{len(want)} of 30 cases shown" in proc.stdout
    failures = proc.stdout.split('<table class="failures sortable">', 1)[1].split("</table>", 1)[0]
    visible = re.findall(r'<tr(?: class="all")? data-type="([^"]+)">', failures)
    assert visible == ["bbox", "all"]  # the other types' rows are hidden, the all row stays
    # the id search: a part of one id
    target = cards[0][0]
    proc = _chromium("--dump-dom", report.as_uri() + f"#filter=q={target}", cwd=tmp_path)
    count = sum(1 for c in cards if target.lower() in c[0].lower())
    assert f"{count} of 30 cases shown" in proc.stdout


@needs_chromium
def test_a_report_of_several_runs_loads_and_draws_its_curves(report: Path, tmp_path: Path) -> None:
    scores = report.parent / "scores.jsonl"
    page = tmp_path / "runs.html"
    proc = run_cli("report", str(scores), str(scores), "--label", "a", "--label", "b", "-o", str(page))
    assert proc.returncode == 0, proc.stderr.decode()
    proc2 = _chromium("--dump-dom", page.as_uri(), cwd=tmp_path)
    assert proc2.returncode == 0 and _console(proc2.stderr) == [], proc2.stderr[-2000:]
    assert '<tr data-run="a">' in proc2.stdout and '<tr data-run="b">' in proc2.stdout
    # per type (12) and all, 9 series, 2 dots each
    assert proc2.stdout.count('<circle class="point"') == 13 * 9 * 2
