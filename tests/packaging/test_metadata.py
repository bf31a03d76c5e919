"""Static packaging metadata of every distribution, read from its ``pyproject.toml``.

Fast and in-process: nothing is built or installed here (the wheel and venv
tests beside this file do that). Each distribution must carry PEP 639 license
metadata with its LICENSE file on disk, classifiers and project URLs; the
families must bound trace-core to its compatible series; ``trace_tasks.__version__``
must be the installed metadata version; and every declared (non-extra)
dependency must be imported somewhere in the distribution's own source, so a
dependency nobody imports fails here instead of being shipped to every user.
"""

from __future__ import annotations

import ast
import importlib.metadata
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]
REPOSITORY_URL = "https://github.com/trace-tasks/trace_tasks"

#: distribution -> source folder (relative to the repository root)
DISTRIBUTIONS: Mapping[str, str] = {
    "trace-core": "trace_core",
    "trace-plugins-bbox": "trace_plugins_bbox",
    "trace-plugins-point": "trace_plugins_point",
    "trace-plugins-segment": "trace_plugins_segment",
    "trace-plugins-circle": "examples/circle_family",
    "trace-plugins-bbox-giou": "examples/giou_bbox",
}
FAMILIES = [d for d in DISTRIBUTIONS if d != "trace-core"]

#: Distributions whose import name is not their normalized distribution name.
IMPORT_NAMES: Mapping[str, str] = {
    "trace-core": "trace_tasks",
    "pillow": "PIL",
    "pyyaml": "yaml",
}

REQUIRED_CLASSIFIERS = {
    "Development Status :: 3 - Alpha",
    "Intended Audience :: Science/Research",
    "Programming Language :: Python :: 3 :: Only",
    "Programming Language :: Python :: 3.10",
    "Programming Language :: Python :: 3.11",
    "Programming Language :: Python :: 3.12",
    "Programming Language :: Python :: 3.13",
    "Topic :: Scientific/Engineering :: Artificial Intelligence",
    "Typing :: Typed",
}


def _pyproject(dist: str) -> dict[str, Any]:
    with (REPO / DISTRIBUTIONS[dist] / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)


def _project(dist: str) -> dict[str, Any]:
    return _pyproject(dist)["project"]


def _requirements(dist: str) -> list[Requirement]:
    return [Requirement(r) for r in _project(dist).get("dependencies", [])]


def _import_name(requirement: Requirement) -> str:
    name = canonicalize_name(requirement.name)
    return IMPORT_NAMES.get(name, name.replace("-", "_"))


def _imported_top_level_modules(folder: Path) -> set[str]:
    """Top-level names of every absolute import in the ``.py`` files under ``folder/src``."""
    found: set[str] = set()
    for path in sorted((folder / "src").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(alias.name.partition(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.partition(".")[0])
    return found


def _is_installed(dist: str) -> bool:
    try:
        importlib.metadata.distribution(dist)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


@pytest.mark.parametrize("dist", list(DISTRIBUTIONS))
def test_name_matches_folder_table(dist: str) -> None:
    assert _project(dist)["name"] == dist


@pytest.mark.parametrize("dist", list(DISTRIBUTIONS))
def test_pep639_license(dist: str) -> None:
    data = _pyproject(dist)
    project = data["project"]
    assert project["license"] == "Apache-2.0", "PEP 639: a plain SPDX expression, not a {text = ...} table"
    assert project["license-files"] == ["LICENSE"]
    root_license = (REPO / "LICENSE").read_text(encoding="utf-8")
    for pattern in project["license-files"]:
        matches = list((REPO / DISTRIBUTIONS[dist]).glob(pattern))
        assert matches, f"{dist}: license-files pattern {pattern!r} matches nothing on disk"
        for match in matches:
            assert match.read_text(encoding="utf-8") == root_license, f"{match} differs from the root LICENSE"
    # hatchling writes License-Expression / License-File from 1.27 on.
    requires = [Requirement(r) for r in data["build-system"]["requires"]]
    (hatchling,) = [r for r in requires if canonicalize_name(r.name) == "hatchling"]
    assert not hatchling.specifier.contains("1.26.3"), f"{dist}: needs hatchling>=1.27 for PEP 639"
    assert hatchling.specifier.contains("1.27.0")


def test_root_license_is_the_apache_2_text() -> None:
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License\n                           Version 2.0, January 2004" in text
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "END OF TERMS AND CONDITIONS" in text
    # All nine numbered sections of the terms.
    for number in range(1, 10):
        assert re.search(rf"^   {number}\. [A-Z]", text, re.M), f"section {number} missing"


@pytest.mark.parametrize("dist", list(DISTRIBUTIONS))
def test_classifiers_authors_keywords(dist: str) -> None:
    project = _project(dist)
    classifiers = set(project["classifiers"])
    assert classifiers >= REQUIRED_CLASSIFIERS, sorted(REQUIRED_CLASSIFIERS - classifiers)
    # PEP 639: License :: classifiers and a license expression must not be combined.
    assert not [c for c in classifiers if c.startswith("License ::")]
    assert project["authors"] == [{"name": "The trace_tasks authors"}]
    assert project["keywords"]
    assert list((REPO / DISTRIBUTIONS[dist] / "src").glob("*/py.typed")), "Typing :: Typed needs a py.typed marker"


@pytest.mark.parametrize("dist", list(DISTRIBUTIONS))
def test_project_urls(dist: str) -> None:
    urls = _project(dist)["urls"]
    assert set(urls) >= {"Documentation", "Source", "Issues"}
    assert urls["Source"] == REPOSITORY_URL
    assert urls["Issues"] == f"{REPOSITORY_URL}/issues"
    prefix = f"{REPOSITORY_URL}/blob/main/"
    assert urls["Documentation"].startswith(prefix)
    doc = REPO / urls["Documentation"].removeprefix(prefix)
    assert doc.is_file(), f"{dist}: Documentation URL points at {doc}, which does not exist"


@pytest.mark.parametrize("dist", list(DISTRIBUTIONS))
def test_readme_has_no_relative_parent_links(dist: str) -> None:
    """A package index renders the README away from the repository: ``../`` links break there."""
    readme = (REPO / DISTRIBUTIONS[dist] / _project(dist)["readme"]).read_text(encoding="utf-8")
    assert not re.findall(r"\]\(\.\./[^)]*\)|^\[[^\]]+\]:\s*\.\./", readme, re.M)


@pytest.mark.parametrize("dist", FAMILIES)
def test_family_bounds_core_to_its_compatible_series(dist: str) -> None:
    core_version = Version(_project("trace-core")["version"])
    (core,) = [r for r in _requirements(dist) if canonicalize_name(r.name) == "trace-core"]
    assert core.specifier.contains(str(core_version)), f"{dist}: {core} excludes the current core {core_version}"
    next_series = f"{core_version.major}.{core_version.minor + 1}.0"
    assert not core.specifier.contains(next_series), f"{dist}: {core} admits the next core series {next_series}"
    assert not core.specifier.contains("0.2.0")


def test_version_is_the_installed_metadata() -> None:
    import trace_tasks

    installed = importlib.metadata.version("trace-core")
    assert trace_tasks.__version__ == installed
    assert installed == _project("trace-core")["version"]


@pytest.mark.parametrize("dist", [d for d in DISTRIBUTIONS if not DISTRIBUTIONS[d].startswith("examples/")])
def test_installed_metadata_carries_the_license_expression(dist: str) -> None:
    """The workspace members are installed (editable) in the test environment: their metadata is PEP 639."""
    if not _is_installed(dist):
        message = f"{dist} is not installed in this environment"
        if os.environ.get("CI"):
            pytest.fail(message + ": CI's `uv sync --locked` installs every workspace member, so this is a broken set-up")
        pytest.skip(message + " (run `uv sync` to install every workspace member)")
    metadata = importlib.metadata.metadata(dist)
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata.get_all("License-File") == ["LICENSE"]
    assert metadata.get("License") is None


@pytest.mark.parametrize("dist", list(DISTRIBUTIONS))
def test_every_declared_dependency_is_imported(dist: str) -> None:
    """Only ``[project] dependencies`` (extras are optional and imported lazily by name)."""
    imported = _imported_top_level_modules(REPO / DISTRIBUTIONS[dist])
    unused = [str(r) for r in _requirements(dist) if _import_name(r) not in imported]
    assert not unused, f"{dist} declares dependencies its source never imports: {unused}"


def test_import_scan_sees_lazy_imports() -> None:
    """The scan must see imports inside functions too (scipy is imported lazily by trace-core)."""
    imported = _imported_top_level_modules(REPO / "trace_core")
    assert {"scipy", "numpy", "pluggy", "attrs", "cattrs", "trace_tasks"} <= imported
