"""Records that plugins return from their hooks and the core passes to them."""

from __future__ import annotations

from collections.abc import Mapping

import attrs


def _non_empty(instance: object, attribute: attrs.Attribute, value: str) -> None:
    if not isinstance(value, str) or not value.strip() or value != value.strip():
        raise ValueError(f"{attribute.name} must be a non-empty string without surrounding spaces, got {value!r}")


def _ids(value: object) -> tuple[str, ...]:
    return tuple(value)  # type: ignore[arg-type]


@attrs.frozen(slots=True)
class AnnotationTypeSpec:
    """One annotation type a family owns, with every reward id it offers for it.

    ``reward_ids`` lists all versions the family still offers (``bbox_soft_iou_v0``,
    later ``bbox_soft_iou_v1``); ``trace_resolve_reward_id`` says which is current.
    """

    name: str = attrs.field(validator=_non_empty)
    reward_ids: tuple[str, ...] = attrs.field(converter=_ids)
    description: str = ""

    @reward_ids.validator
    def _check_ids(self, attribute: attrs.Attribute, value: tuple[str, ...]) -> None:
        if not value:
            raise ValueError(f"annotation type {self.name!r} declares no reward ids")
        for rid in value:
            _non_empty(self, attribute, rid)


@attrs.frozen(slots=True)
class AnswerTypeSpec:
    """A registered answer type.

    ``reads_json_strings``: a string prediction that is a JSON literal (other than
    ``null``) is read as that literal before comparison. True for every built-in
    type except ``string``, whose answers are compared as written.
    """

    name: str = attrs.field(validator=_non_empty)
    reads_json_strings: bool = True
    description: str = ""


@attrs.frozen(slots=True)
class ScoringContext:
    """What a score hook may need beyond the two values.

    ``half_life_px`` is already resolved by the core: the caller's
    ``point_half_life_px``, else the image-diagonal policy, else 32 px.
    ``image_size`` is ``(width, height)`` when one was found, for information only:
    coordinates are never transformed.
    """

    half_life_px: float
    image_size: tuple[float, float] | None = None


@attrs.frozen(slots=True)
class AnnotationScore:
    """A reward in [0, 1] and the numeric diagnostics reported beside it, in order."""

    reward: float
    diagnostics: Mapping[str, float] = attrs.field(factory=dict)
