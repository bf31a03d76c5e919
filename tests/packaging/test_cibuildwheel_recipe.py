"""The cibuildwheel recipe (trace_core/pyproject.toml, ``[tool.cibuildwheel]``) builds what the package promises.

The recipe itself is run by ``.ci/cibuildwheel-local`` (containers and a
network: not in the suite); these checks keep it in step with the package's
metadata and the native hook it switches on.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys

import tomllib

from .conftest import REPO

PYPROJECT = tomllib.loads((REPO / "trace_core" / "pyproject.toml").read_text(encoding="utf-8"))
RECIPE = PYPROJECT["tool"]["cibuildwheel"]


def test_it_builds_every_cpython_the_classifiers_name_and_no_other() -> None:
    promised = {
        classifier.rsplit(" ", 1)[1]
        for classifier in PYPROJECT["project"]["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", classifier)
    }
    built = {f"3.{selector[3:].rstrip('-*')}" for selector in RECIPE["build"]}
    assert built == promised, f"the recipe builds {sorted(built)}, the classifiers promise {sorted(promised)}"
    assert all(re.fullmatch(r"cp3\d+-\*", selector) for selector in RECIPE["build"]), (
        "CPython only: the native module uses its C API"
    )


def test_it_switches_the_native_hook_on() -> None:
    assert RECIPE["environment"] == {"HATCH_BUILD_HOOKS_ENABLE": "1"}
    hook = PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]["hooks"]["custom"]
    assert hook["enable-by-default"] is False, "without the recipe's variable the wheel is the pure one"


def test_its_test_command_fails_on_a_pure_build_and_passes_on_this_one() -> None:
    # The command as cibuildwheel runs it, in a shell, against this interpreter's trace_tasks.
    import trace_tasks

    program, flag, code = shlex.split(RECIPE["test-command"])
    assert (program, flag) == ("python", "-c")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == (0 if trace_tasks.__build__ == "native" else 1), result.stderr


def test_the_docs_and_the_local_runner_point_at_the_recipe() -> None:
    docs = (REPO / "docs" / "compiled.md").read_text(encoding="utf-8")
    assert "[tool.cibuildwheel]" in docs and "cibuildwheel trace_core" in docs
    runner = (REPO / ".ci" / "cibuildwheel-local").read_text(encoding="utf-8")
    assert 'cibuildwheel" --platform linux trace_core' in runner
    assert "CIBW_ENVIRONMENT=" not in runner and "CIBW_BUILD=" not in runner, "the recipe lives in pyproject.toml only"
