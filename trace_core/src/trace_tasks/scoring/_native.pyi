# The native common path's interface (_native.pyx, built only into the native wheel; docs/compiled.md).
from collections.abc import Callable
from typing import Any

NO_REWARD: int
UNKNOWN: int
SCALAR: int
SET: int
SEQUENCE: int
MAP: int
SET_MAP: int
IOU: int
SOFT_POINT: int
SOFT_SEGMENT: int
BOTH: int
ANSWER_ONLY: int
ANNOTATION_ALONE: int

def assign(matrix: list[list[float]]) -> tuple[list[int], list[int]]: ...

SCIPY_RESTATED: tuple[tuple[int, int], tuple[int, int]]

def scipy_restated(version: str) -> bool: ...
def hypot(x: float, y: float) -> float: ...
def exact(value: Any) -> bool: ...
def top_level_objects(text: str) -> list[tuple[int, int]]: ...

NOTHING: object

def recovered(text: str) -> dict[str, Any] | object | None: ...
def same(value: Any, prepared: Any) -> int: ...
def parse_value(kernel: int, shape: int, value: Any) -> Any: ...
def prepare(
    answer_gt: Any,
    annotation_gt: Any,
    reward_contract: Any,
    registry: Any,
    sizes: tuple[Any, ...],
    target_class: type,
    unsearched: object,
    answer_target_of: Callable[..., Any],
    relaxed_id: str,
) -> Any: ...
def score(
    text: str,
    keys: frozenset[str],
    extract_of: Callable[[str, frozenset[str], bool], tuple[Any, list[int]]],
    answer_tag: bool,
    prepared: Any,
    reads_json: bool,
    answer_parse_ok: float,
    type_key: str | None,
    shape: int,
    kernel: int,
    target: Any,
    raw_target: bool,
    half_life_of: Callable[[Any, float | None], float],
    target_ref: Any,
    half_life_px: float | None,
    mean_key: str,
    extra_key: str,
    template: dict[str, float],
    format_weight: float,
    mode: int,
    gated: bool,
    answer_weight: float,
    annotation_weight: float,
    scale_x: float = ...,
    scale_y: float = ...,
    y_first: bool = ...,
) -> dict[str, float] | tuple[Any, list[int]] | None: ...

WHOLE: int
REAL: int
TEXT: int
LITERAL_TEXT: int
TRUTH: int
INDICES: int
GRID: int
NORMALIZED: int
ZERO_SEGMENT: int
DUPLICATE: int
SINGLE_KEY: int
EMPTY_MAP: int
MISSING_SIZE: int
CONFLICTING_SIZE: int

def lane_setup(
    fields: tuple[str, ...],
    rules: tuple[str, ...],
    size_keys: frozenset[str],
    size_from: Callable[[Any], Any],
    budget_problem: Callable[[tuple[int, ...]], str | None],
    small_image_px: float,
    instance_class: type,
    target_class: type,
    scoring_context: Callable[..., Any],
    contexts: dict[Any, Any],
    plan_of: Callable[[str, str, Any], Any],
) -> None: ...
def lane_ready() -> bool: ...
def check_label(label: dict[str, Any], skip: Any, registry: Any) -> Any: ...
def columns(results: list[Any], keys: tuple[str, ...]) -> tuple[list[float], dict[str, list[float]]] | None: ...
