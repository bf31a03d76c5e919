"""Reading model responses: extraction of the final object, the bounded literal reader, plain values.

Everything here treats its input as hostile: time linear in its length, no
exception on anything a model can write. The scoring pipeline and the
families' parsers come in through this door; the modules behind it are internal.
"""

from trace_tasks.reading._extraction import (
    ANNOTATION_KEYS,
    ANSWER_AND_ANNOTATION_KEYS,
    ANSWER_KEYS,
    FINAL_ANSWER_TAG,
    FINAL_ONLY,
    LENIENT,
    OUTSIDE_THINK,
    Extraction,
    FormatCheck,
    answer_tags,
    extract,
    fenced_blocks,
    final_answer_tag,
    final_block,
    outside_think,
    plain_final_object,
    think_text,
)
from trace_tasks.reading._literals import (
    MIN_LITERAL_CHARGE,
    decode_json,
    literal_budget,
    load_json,
    load_json_or_literal,
    load_literal,
    read_annotation_string,
)
from trace_tasks.reading._tool_calls import ToolCall, ToolCallReading, read_tool_call
from trace_tasks.reading._values import from_numpy, holds_only, is_mapping

__all__ = [
    "ANNOTATION_KEYS",
    "ANSWER_AND_ANNOTATION_KEYS",
    "ANSWER_KEYS",
    "FINAL_ANSWER_TAG",
    "FINAL_ONLY",
    "LENIENT",
    "MIN_LITERAL_CHARGE",
    "OUTSIDE_THINK",
    "Extraction",
    "FormatCheck",
    "ToolCall",
    "ToolCallReading",
    "answer_tags",
    "decode_json",
    "extract",
    "fenced_blocks",
    "final_answer_tag",
    "final_block",
    "from_numpy",
    "holds_only",
    "is_mapping",
    "literal_budget",
    "load_json",
    "load_json_or_literal",
    "load_literal",
    "outside_think",
    "plain_final_object",
    "read_annotation_string",
    "read_tool_call",
    "think_text",
]
