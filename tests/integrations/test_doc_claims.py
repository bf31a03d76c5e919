"""docs/integrations.md says what the adapters do (issue 40: four claims were false)."""

from __future__ import annotations

from pathlib import Path

from trace_tasks.integrations import lmms_eval
from trace_tasks.integrations.trl import metric_keys

DOC = (Path(__file__).resolve().parents[2] / "docs" / "integrations.md").read_text(encoding="utf-8")
WORDS = {13: "thirteen", 14: "fourteen", 15: "fifteen", 16: "sixteen"}


def test_lmms_eval_default_key_count_is_the_documented_one() -> None:
    assert lmms_eval.make_process_results().metrics == lmms_eval.METRICS  # type: ignore[attr-defined]
    assert f"the default returns all {WORDS[len(lmms_eval.METRICS)]}" in DOC


def test_the_logged_keys_sentence_names_who_logs() -> None:
    assert "every adapter logs" not in DOC
    for adapter in ("**ms-swift**", "**lmms-eval**", "**Ray Data**"):
        assert adapter in DOC
    assert "answer_parse_ok" in metric_keys("all")


def test_verl_0_8_0_rate_limited_is_documented() -> None:
    assert "0.8.0: reward loop only (`naive`, `dapo`, `rate_limited`)" in DOC
    assert "verl 0.8.0 has the same\nmanager and fails the same way" in DOC
