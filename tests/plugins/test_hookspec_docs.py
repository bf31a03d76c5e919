"""Every hook spec documents its arguments and its answer (``:param:``/``:returns:``, pluggy style) and says who calls it."""

from __future__ import annotations

import inspect

import pytest

from trace_tasks.plugins import hookspecs

SPECS = [name for name, value in vars(hookspecs).items() if name.startswith("trace_") and inspect.isfunction(value)]


def test_the_contract_has_its_twelve_hooks() -> None:
    assert len(SPECS) == 12


@pytest.mark.parametrize("name", SPECS)
def test_each_spec_has_param_and_returns_fields_and_names_its_caller(name: str) -> None:
    spec = getattr(hookspecs, name)
    doc = inspect.getdoc(spec) or ""
    for parameter in inspect.signature(spec).parameters:
        assert f":param {parameter}:" in doc, (name, parameter)
    assert ":returns:" in doc, name
    assert "Called" in doc or "called" in doc, name
