"""What "no JSON" and a broken final block mean, defined once for ``score``'s summary and ``report``.

Both read the flags of a result row (``docs/contracts.md`` sections 3.2 and
3.3), never the response: the same row is counted the same way by the summary
table of ``score``, its ``--summary-json`` (``no_json_share``) and the
failures table of ``report``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

NO_JSON = "no JSON"
NO_JSON_MEANING = (
    "no JSON object holding answer or annotation was found anywhere in the response, final block or recovered "
    "(json_found 0); the answer is then read from the plain text"
)
NOT_AN_OBJECT = "final block not an object"
NOT_AN_OBJECT_MEANING = (
    "the response ends with a final block that does not parse, or parses to something other than a JSON object "
    "(a list, a number): format_structure_ok 1, format_json_ok 0 (an object may still be recovered elsewhere)"
)


def no_json(scores: Mapping[str, Any]) -> bool:
    """No JSON object holding ``answer`` or ``annotation`` was found (``json_found`` 0)."""
    return scores.get("json_found") == 0.0


def final_block_not_an_object(scores: Mapping[str, Any]) -> bool:
    """The final block is there but is no JSON object (``format_structure_ok`` 1, ``format_json_ok`` 0)."""
    return scores.get("format_structure_ok") == 1.0 and scores.get("format_json_ok") == 0.0
