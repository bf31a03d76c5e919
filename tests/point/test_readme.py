"""The README example runs and prints exactly the output the README shows."""

from __future__ import annotations

from ..support.readme_example import check_readme_example


def test_readme_example_prints_what_it_shows() -> None:
    check_readme_example("trace_plugins_point")
