"""What the documents name exists: modules and names, repository files, links and their anchors.

Over ``docs/*.md`` and ``README.md``:

* no document names an import path of the previous layout (``trace_tasks.shapes``,
  ``trace_tasks/options.py``, ``literals.load_json``...: the keys of
  ``trace_tasks._moved.MOVED``), except the lines saying that those still
  import with a DeprecationWarning;
* every path of a module of the package (``runs/_engine.py``,
  ``trace_tasks/cli/_views/layout.py``) is a file of it;
* every dotted ``trace_tasks...`` name in backquotes is a module or an
  attribute of one (found without the deprecation finder);
* every repository path in backquotes (``trace_core/...``, ``examples/...``) exists;
* every relative link resolves to a file or folder inside the repository, and
  every ``#anchor`` into a Markdown file of the repository is a heading there.

The docstrings and comments of the library and the official families are held
to the same: the dotted names and package paths they name exist, and none
names an old flat module.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from trace_tasks._moved import MOVED
from trace_tasks.plugins._registry import BUILTIN_PLUGIN_NAME

REPO = Path(__file__).resolve().parents[2]
DOCS = [*sorted((REPO / "docs").glob("*.md")), REPO / "README.md"]
IDS = [str(path.relative_to(REPO)) for path in DOCS]

#: Dotted names in the documents that are not importable by design.
NOT_MODULES = {BUILTIN_PLUGIN_NAME: "the core's own plugin, registered under that name"}
#: Where a repository path in backquotes may start.
REPO_ROOTS = (
    "trace_core/",
    "trace_plugins_bbox/",
    "trace_plugins_point/",
    "trace_plugins_segment/",
    "examples/",
    "tests/",
    "benchmarks/",
    "docs/",
)

PACKAGE = REPO / "trace_core" / "src" / "trace_tasks"
ROOMS = sorted(path.parent.name for path in PACKAGE.glob("*/__init__.py"))
#: The library's and the official families' sources, whose docstrings and comments are checked too.
SOURCES = sorted(
    path
    for root in ("trace_core/src", "trace_plugins_bbox/src", "trace_plugins_point/src", "trace_plugins_segment/src")
    for path in (REPO / root).rglob("*.py")
    if path.name != "_moved.py"  # the deprecation table names the old paths, as strings
)
SOURCE_IDS = [str(path.relative_to(REPO)) for path in SOURCES]

#: A module of the package named by its path: ``runs/_engine.py``, ``trace_tasks/cli/_views/layout.py``.
PACKAGE_PATH = re.compile(r"(?<![\w/.])(?:trace_tasks/[\w/]+|(?:%s)/[\w/]*)\.py\b" % "|".join(ROOMS))
#: An old flat module with one of its names, as the previous layout spelled it: ``literals.load_json``, ``assignment.py``.
OLD_SHORT = re.compile(r"`(%s)\.(?:py|[A-Za-z_]\w*)`" % "|".join(sorted(set(MOVED) - {"hookspecs"})))
OLD_DOTTED = re.compile(r"\btrace_tasks\.(%s)\b(?!\.)" % "|".join(MOVED))
OLD_FILE = re.compile(r"\btrace_tasks/(%s)\.py\b" % "|".join(MOVED))
CODE = re.compile(r"`([^`\n]+)`")
DOTTED = re.compile(r"\btrace_tasks(?:\.\w+)+")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _current(path: Path) -> str:
    """The document without the paragraphs saying that the old paths still import (with a DeprecationWarning)."""
    return "\n\n".join(p for p in re.split(r"\n\s*\n", _text(path)) if "DeprecationWarning" not in p)


@pytest.mark.parametrize("path", DOCS, ids=IDS)
def test_no_document_names_an_old_import_path(path: Path) -> None:
    for line in _current(path).splitlines():
        found = OLD_DOTTED.findall(line) + OLD_FILE.findall(line)
        assert not found, f"{path.name} names the old path(s) {found}: {line.strip()}"


def _resolves(name: str) -> bool:
    parts = name.split(".")
    if len(parts) > 1 and parts[1] in MOVED:
        return False  # an old flat path: only the deprecation finder finds it
    for cut in range(len(parts), 0, -1):
        module_name = ".".join(parts[:cut])
        source = PACKAGE.joinpath(*parts[1:cut]).with_suffix(".pyx")
        if cut > 1 and source.is_file():  # the native build's module: built from this source, absent in the pure build
            text = source.read_text(encoding="utf-8")
            return all(re.search(rf"^(?:def {a}\(|{a} = )", text, re.M) for a in parts[cut:])
        try:
            value: object = importlib.import_module(module_name)
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(value, attribute):
                return False
            value = getattr(value, attribute)
        return True
    return False


@pytest.mark.parametrize("path", DOCS, ids=IDS)
def test_every_dotted_trace_tasks_name_exists(path: Path) -> None:
    names = {name for code in CODE.findall(_current(path)) for name in DOTTED.findall(code)}
    missing = sorted(n for n in names if n not in NOT_MODULES and "__main__" not in n and not _resolves(n))
    assert not missing, f"{path.name} names what does not exist: {missing}"


@pytest.mark.parametrize("path", DOCS, ids=IDS)
def test_every_repository_path_exists(path: Path) -> None:
    missing = []
    for code in CODE.findall(_text(path)):
        candidate = code.strip().split()[0] if code.strip() else ""
        pattern = any(c in candidate for c in "{}*<>")
        if candidate.startswith(REPO_ROOTS) and not pattern and not (REPO / candidate.rstrip("/")).exists():
            missing.append(candidate)
    assert not missing, f"{path.name} names paths that are not in the repository: {missing}"


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    in_code = False
    for line in _text(path).splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        match = re.match(r"^#{1,6} (.+)$", line)
        if match and not in_code:
            slug = _slug(match.group(1))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


@pytest.mark.parametrize("path", DOCS, ids=IDS)
def test_every_relative_link_stays_in_the_repository_and_resolves(path: Path) -> None:
    problems = []
    for target in LINK.findall(_text(path)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue  # a web address (https:, mailto:)
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if REPO.resolve() not in (linked, *linked.parents):
            problems.append(f"{target}: outside the repository")
            continue
        if not linked.exists():
            problems.append(f"{target}: no such file")
            continue
        if anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            problems.append(f"{target}: no heading with that anchor")
    assert not problems, f"{path.name}: " + "; ".join(problems)


UP_PATH = re.compile(r"(?<![\w/.])\.\./[\w.\-/]*")
MARKDOWN_NAME = re.compile(r"\b[\w.\-]+\.md\b")


@pytest.mark.parametrize("path", DOCS, ids=IDS)
def test_the_documents_name_nothing_outside_the_repository(path: Path) -> None:
    """Every relative path is a file or folder of the repository, and every Markdown file named is one of its own."""
    text = _text(path)
    root = REPO.resolve()
    outside = [
        t
        for t in UP_PATH.findall(text)
        if root not in ((path.parent / t).resolve(), *(path.parent / t).resolve().parents) or not (path.parent / t).exists()
    ]
    own = {p.name for p in REPO.rglob("*.md") if ".venv" not in p.parts}
    foreign = sorted({name for name in MARKDOWN_NAME.findall(text) if name not in own})
    assert not outside and not foreign, f"{path.name} names what is not in the repository: {outside + foreign}"


def _missing_package_paths(text: str) -> list[str]:
    found = []
    for path in PACKAGE_PATH.findall(text):
        relative = path.removeprefix("trace_tasks/")
        if not (PACKAGE / relative).is_file():
            found.append(path)
    return found


@pytest.mark.parametrize("path", DOCS, ids=IDS)
def test_every_package_path_a_document_names_exists(path: Path) -> None:
    text = _current(path)
    missing = _missing_package_paths(text)
    old = sorted({match.group(0) for match in OLD_SHORT.finditer(text)})
    assert not missing and not old, f"{path.name} names modules that are not in the package: {missing + old}"


def _docstrings_and_comments(path: Path) -> Iterator[str]:
    source = path.read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            text = ast.get_docstring(node, clean=False)
            if text:
                yield text
    for line in source.splitlines():
        if "#" in line:
            yield line[line.index("#") :]


@pytest.mark.parametrize("path", SOURCES, ids=SOURCE_IDS)
def test_docstrings_and_comments_name_modules_that_exist(path: Path) -> None:
    problems = []
    for text in _docstrings_and_comments(path):
        names = {name.rstrip(".") for name in DOTTED.findall(text)}
        problems += sorted(n for n in names if n not in NOT_MODULES and "__main__" not in n and not _resolves(n))
        problems += _missing_package_paths(text)
        problems += [match.group(0) for match in OLD_SHORT.finditer(text.replace("``", "`"))]
    assert not problems, f"{path.relative_to(REPO)} names modules or names that do not exist: {problems}"


def test_the_checks_see_a_stale_path() -> None:
    assert _missing_package_paths("see ``cli/_engine.py`` and ``runs/_engine.py``") == ["cli/_engine.py"]
    assert _missing_package_paths("``trace_tasks/cli/_layout.py``") == ["trace_tasks/cli/_layout.py"]
    assert OLD_SHORT.search("``literals.load_json``".replace("``", "`"))
    assert not OLD_SHORT.search("`hookspecs.py`") and not _resolves("trace_tasks.cli._engine")
