"""docs/plugins.md stays true to the code (in the manner of datasette's plugin-hook doc tests).

Every hook spec is documented with its exact signature and firstresult flag;
every field of the records plugins use is in the record's table; the loading
environment variables and plugin errors are named; the parsed-value table is
what the installed families declare; every Python block runs, or is an
excerpt (first line ``# excerpt: PATH``) whose lines stand in that file. The
page names ``trace_tasks.family`` as the one module authors import from and
lists only names it exports; the blocks import family names from it (never
from an old flat path); the drawables' constructors and the guide's
``pyproject.toml`` (with the official families' ``[build-system]``) are true.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from pathlib import Path
from typing import Any

import attrs
import pytest

import trace_tasks
from trace_tasks import family as shapes
from trace_tasks import plugins
from trace_tasks._moved import MOVED
from trace_tasks.plugins import OFFICIAL_TYPES, PROJECT_NAME, get_registry, hookspecs, reset_registry
from trace_tasks.plugins import _registry as registry_module

REPO = Path(__file__).resolve().parents[2]
DOC_PATH = REPO / "docs" / "plugins.md"
SPEC_ATTR = f"{PROJECT_NAME}_spec"  # set by pluggy's HookspecMarker on each spec


def hook_specs() -> dict[str, Any]:
    """Every function marked as a hook spec in ``trace_tasks.plugins.hookspecs``."""
    return {
        name: fn for name, fn in vars(hookspecs).items() if inspect.isfunction(fn) and getattr(fn, SPEC_ATTR, None) is not None
    }


def _annotation_text(annotation: Any) -> str:
    # hookspecs uses ``from __future__ import annotations``: annotations are source strings.
    return annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)


def signature_text(name: str) -> str:
    """``def name(arg: type, ...) -> type`` built from ``inspect.signature`` of the spec."""
    sig = inspect.signature(hook_specs()[name])
    params = ", ".join(f"{p.name}: {_annotation_text(p.annotation)}" for p in sig.parameters.values())
    return f"def {name}({params}) -> {_annotation_text(sig.return_annotation)}"


def section(doc: str, heading: str) -> str:
    """The text under ``heading`` up to the next heading of the same or a higher level."""
    level = len(heading) - len(heading.lstrip("#"))
    start = doc.index(heading + "\n")
    end_match = re.compile(r"^#{1,%d} " % level, re.M).search(doc, start + len(heading) + 1)
    return doc[start : end_match.start() if end_match else len(doc)]


@pytest.fixture(scope="module")
def doc() -> str:
    return DOC_PATH.read_text(encoding="utf-8")


def test_there_are_hook_specs_to_check() -> None:
    assert set(hook_specs()) == {
        "trace_annotation_types",
        "trace_reward_ids",
        "trace_answer_types",
        "trace_resolve_reward_id",
        "trace_parse_annotation",
        "trace_score_annotation",
        "trace_explain_annotation",
        "trace_draw_annotation",
        "trace_native_annotation",
        "trace_scale_annotation",
        "trace_frame_annotation",
        "trace_reread_annotation",
    }


@pytest.mark.parametrize("name", sorted(hook_specs()))
def test_every_hook_is_documented_with_its_exact_signature(doc: str, name: str) -> None:
    text = section(doc, f"### {name}")
    assert signature_text(name) in text, f"docs/plugins.md must show: {signature_text(name)}"


@pytest.mark.parametrize("name", sorted(hook_specs()))
def test_every_hook_documents_its_firstresult_flag(doc: str, name: str) -> None:
    firstresult = bool(getattr(hook_specs()[name], SPEC_ATTR).get("firstresult"))
    text = section(doc, f"### {name}")
    assert f"**firstresult:** {'yes' if firstresult else 'no'}" in text
    row = next(line for line in doc.splitlines() if line.startswith(f"| `{name}` |"))
    assert row.rstrip(" |").split("|")[-1].strip().startswith("**yes**" if firstresult else "no")


def test_no_hook_is_documented_that_does_not_exist(doc: str) -> None:
    documented = set(re.findall(r"^### (trace_\w+)$", doc, re.M))
    assert documented == set(hook_specs())


@pytest.mark.parametrize(
    "record",
    [
        trace_tasks.AnnotationTypeSpec,
        trace_tasks.RewardIdSpec,
        trace_tasks.AnswerTypeSpec,
        trace_tasks.ScoringContext,
        trace_tasks.AnnotationScore,
        trace_tasks.AnnotationExplanation,
        trace_tasks.NativeFormat,
        shapes.Primitive,
    ],
    ids=lambda r: r.__name__,
)
def test_every_record_field_is_in_the_records_table(doc: str, record: type) -> None:
    heading = "### `trace_tasks.family.Primitive`" if record is shapes.Primitive else f"### `{record.__name__}`"
    text = section(doc, heading)
    documented = re.findall(r"^\| `(\w+)` \|", text, re.M)
    assert documented == [field.name for field in attrs.fields(record)]


def test_parse_error_and_shapes_are_documented(doc: str) -> None:
    assert "### `AnnotationParseError`" in doc
    assert trace_tasks.AnnotationParseError is shapes.AnnotationParseError is trace_tasks.errors.AnnotationParseError
    for shape in shapes.SHAPES:
        assert f'`"{shape}"`' in doc


def test_loading_environment_variables_are_documented(doc: str) -> None:
    text = section(doc, "## How loading works")
    for variable in (plugins.ALLOW_ENV, plugins.BLOCK_ENV, plugins.PINS_ENV):
        assert f"`{variable}`" in text
    assert f"`{plugins.ENTRY_POINT_GROUP}`" in doc


@pytest.mark.parametrize(
    "error",
    [
        trace_tasks.PluginLoadError,
        trace_tasks.PluginConflictError,
        trace_tasks.PluginValidationError,
        trace_tasks.MissingFamilyError,
        trace_tasks.UnknownRewardIdError,
        trace_tasks.RewardPinError,
    ],
    ids=lambda e: e.__name__,
)
def test_plugin_errors_are_documented(doc: str, error: type) -> None:
    assert issubclass(error, trace_tasks.TraceTasksError)
    assert f"`{error.__name__}`" in section(doc, "## How loading works")


BUILD_SYSTEM = ("[build-system]", 'requires = ["hatchling>=1.27"]', 'build-backend = "hatchling.build"')


def test_the_guide_matches_the_circle_example(doc: str) -> None:
    """The step-by-step guide quotes the example's pyproject; keep the quotes true."""
    pyproject = (REPO / "examples" / "circle_family" / "pyproject.toml").read_text(encoding="utf-8")
    guide = section(doc, "## Write a family, step by step")
    toml = re.search(r"```toml\n(.*?)```", guide, re.S)
    assert toml is not None, "step 4 quotes the pyproject.toml"
    quoted = [line.strip() for line in toml.group(1).splitlines() if line.strip()]
    assert set(BUILD_SYSTEM) <= set(quoted)
    for line in (
        'name = "trace-plugins-circle"',
        "[project.entry-points.trace_tasks]",
        'circle = "trace_plugins_circle.plugin:family"',
        'dependencies = ["trace-core>=0.1,<0.2"]',
        "[tool.hatch.build.targets.wheel]",
        'packages = ["src/trace_plugins_circle"]',
    ):
        assert line in quoted, line
    source_lines = {line.strip() for line in pyproject.splitlines()}
    for line in quoted:
        assert line in source_lines, f"step 4 quotes {line!r}, which examples/circle_family/pyproject.toml lacks"


@pytest.mark.parametrize("member", ["trace_plugins_bbox", "trace_plugins_point", "trace_plugins_segment"])
def test_the_guide_builds_like_the_official_families(member: str) -> None:
    """The [build-system] the guide recommends is the official families' own."""
    lines = {line.strip() for line in (REPO / member / "pyproject.toml").read_text(encoding="utf-8").splitlines()}
    assert set(BUILD_SYSTEM) <= lines, member


def test_the_family_api_is_one_module_and_its_list_is_true(doc: str) -> None:
    """The top of the page names the one module authors import from, and every name it lists is exported there."""
    intro = doc[: doc.index("## Contents")]
    assert "**A family imports from one module, `trace_tasks.family`.**" in intro
    listing = intro[intro.index("**A family imports from one module") : intro.index("The flat paths of the previous release")]
    listed = set(re.findall(r"`(\w+)`", listing)) - {"trace_tasks"}
    assert listed <= set(shapes.__all__), sorted(listed - set(shapes.__all__))
    for name in (
        "ShapeFamily", "ShapeRewards", "Primitive", "pairwise", "coordinates", "coordinate", "is_flat", "make_parser",
        "parse_collection", "parse_map", "match_set", "match_sequence", "Matched", "assign_pairs", "assign_groups",
        "AssignmentBudget", "make_scorer", "make_explainer", "soft_similarity", "half_life_diagnostic",
        "AnnotationTypeSpec", "RewardIdSpec", "AnswerTypeSpec", "ScoringContext", "AnnotationScore",
        "AnnotationExplanation", "ExplainedItem", "MatchedPair", "Box", "Point", "Polyline", "Polygon", "Circle",
        "Label", "hookimpl", "AnnotationParseError", "assert_family_ok", "check_family", "hostile_values", "KitProblem",
    ):  # fmt: skip
        assert name in listed, name
    assert "DeprecationWarning" in intro
    assert "`trace_tasks.plugins.hookspecs`" in section(doc, "## Hook reference")


def test_every_drawable_is_documented_with_its_constructor(doc: str) -> None:
    text = section(doc, "### Drawables")
    rows = re.findall(r"^\| `(\w+)\(([^)]*)\)` \|", text, re.M)
    assert rows == [(cls.__name__, ", ".join(f.name for f in attrs.fields(cls))) for cls in plugins.DRAWABLES]
    assert all(getattr(shapes, cls.__name__) is cls for cls in plugins.DRAWABLES)


def _block_imports(block: str) -> list[tuple[str, list[str]]]:
    """``(module, names)`` of every import statement of a Python block."""
    out: list[tuple[str, list[str]]] = []
    for node in ast.walk(ast.parse(block)):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.append((node.module, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            out.extend((alias.name, []) for alias in node.names)
    return out


def test_blocks_import_family_names_from_trace_tasks_family_only(doc: str) -> None:
    """No block uses an old flat path, and a family-author name always comes from ``trace_tasks.family``."""
    family_names = set(shapes.__all__)
    for block in _python_blocks(doc):
        if block.startswith("def trace_"):
            continue  # a hook signature, not code
        for module, names in _block_imports(block):
            old = module.removeprefix("trace_tasks.")
            assert not (module.startswith("trace_tasks.") and old in MOVED), f"{module} is a deprecated path"
            if module.startswith("trace_tasks") and module != "trace_tasks.family":
                stray = sorted(family_names.intersection(names))
                assert not stray, f"import {stray} from trace_tasks.family, not {module}"


def _python_blocks(doc: str) -> list[str]:
    return [textwrap.dedent(block) for block in re.findall(r"^ *```python\n(.*?)^ *```", doc, re.M | re.S)]


def test_excerpts_stand_in_the_files_they_name(doc: str) -> None:
    excerpts = [b for b in _python_blocks(doc) if b.startswith("# excerpt: ")]
    assert excerpts, "the guide quotes the circle example"
    for block in excerpts:
        first, _, body = block.partition("\n")
        source = (REPO / first.removeprefix("# excerpt: ").strip()).read_text(encoding="utf-8")
        source_lines = {line.strip() for line in source.splitlines()}
        for line in body.splitlines():
            assert not line.strip() or line.strip() in source_lines, f"{first}: {line!r} is not in the file"


def test_runnable_blocks_run(doc: str) -> None:
    """Every other Python block runs, in order, in one namespace (as a reader would paste them)."""
    blocks = [b for b in _python_blocks(doc) if not b.startswith("# excerpt: ") and not b.startswith("def trace_")]
    assert len(blocks) >= 3
    namespace: dict[str, Any] = {"__name__": "docs_plugins"}
    try:
        for number, block in enumerate(blocks, start=1):
            exec(compile(block, f"{DOC_PATH} (runnable block {number})", "exec"), namespace)
    finally:
        for name in list(registry_module._pins):
            plugins.unpin_reward_id(name)
        for name, _ in list(registry_module._extra):
            if name.startswith("giou_doc"):
                plugins.unregister_plugin(name)
        reset_registry()


def test_parsed_value_table_is_what_the_families_declare(doc: str) -> None:
    text = section(doc, "## Parsed values of the official types")
    rows = dict(re.findall(r"^\| `(\w+)` \| \w+ \| (.+?) \|$", text, re.M))
    registry = get_registry()
    assert set(rows) == set(OFFICIAL_TYPES)
    for name, described in rows.items():
        spec = registry.annotation_types[name].spec
        assert spec is not None and spec.parsed_value == described, name


@pytest.mark.parametrize("name", sorted(OFFICIAL_TYPES))
def test_parsed_values_have_the_documented_python_shape(name: str) -> None:
    """The table's words, checked on each declared example: tuples of floats in lists and dicts."""
    registry = get_registry()
    entry = registry.annotation_types[name]
    assert entry.spec is not None and entry.spec.examples
    for example in entry.spec.examples:
        parsed = entry.parse(annotation_type=name, value=example)
        items = {
            "scalar": lambda v: [v],
            "set": list,
            "sequence": list,
            "map": lambda v: list(v.values()),
            "set_map": lambda v: [i for vs in v.values() for i in vs],
        }[entry.spec.shape](parsed)
        if entry.spec.shape in ("map", "set_map"):
            assert isinstance(parsed, dict) and all(isinstance(k, str) and k == k.strip() for k in parsed)
        elif entry.spec.shape in ("set", "sequence"):
            assert isinstance(parsed, list)
        for item in items:
            assert isinstance(item, tuple) and all(type(v) is float for v in item), (name, item)
