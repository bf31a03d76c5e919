"""Declared prediction frames: which coordinates a model writes, and the map from them to pixels.

The contract scores pixels of the provided image (docs/contracts.md, "Coordinate
frames"). A caller who trains a model that answers in another frame declares it
(``prediction_frame``); it is never guessed from the numbers. A frame is a
per-axis scale, plus, for Gemini's convention, the y-first order of each
coordinate pair: the parsed prediction's family converts its items
(``trace_frame_annotation``), the targets stay in pixels.

* ``pixel`` (the default): no conversion;
* ``rel1000``, ``rel999``, ``rel1``: x = v * (width / N), y = v * (height / N);
* ``rel1000_yx``: pairs written ``[y, x]`` (boxes ``[ymin, xmin, ymax, xmax]``), over 1000;
* ``resized``: pixels of the model's resized input of size ``(w', h')``:
  x = v * (width / w'), y = v * (height / h'); ``(w', h')`` is the instance's
  ``model_image_size`` when given, else :func:`smart_resize` of the image size.

Values outside a frame's range (1200 in ``rel1000``) are converted as given, never clipped.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, NamedTuple

from trace_tasks.errors import OptionError
from trace_tasks.scoring._image_size import size_from

PIXEL = "pixel"
REL1000 = "rel1000"
REL999 = "rel999"
REL1 = "rel1"
RESIZED = "resized"
REL1000_YX = "rel1000_yx"
#: Every ``prediction_frame`` value, the default first.
PREDICTION_FRAMES: tuple[str, ...] = (PIXEL, REL1000, REL999, REL1, RESIZED, REL1000_YX)
#: The relative frames: name -> (range N, y first).
RELATIVE_FRAMES: dict[str, tuple[float, bool]] = {
    REL1000: (1000.0, False),
    REL999: (999.0, False),
    REL1: (1.0, False),
    REL1000_YX: (1000.0, True),
}

#: The Qwen2-VL image processor's defaults (transformers 4.57.1,
#: src/transformers/models/qwen2_vl/image_processing_qwen2_vl.py, lines 133-149 and 248-254):
#: ``factor = patch_size * merge_size = 14 * 2``, ``min_pixels = size["shortest_edge"] = 56 * 56``,
#: ``max_pixels = size["longest_edge"] = 28 * 28 * 1280``.
DEFAULT_RESIZE_FACTOR = 28
DEFAULT_MIN_PIXELS = 56 * 56
DEFAULT_MAX_PIXELS = 28 * 28 * 1280
RESIZE_KEYS = ("factor", "min_pixels", "max_pixels")


class Resize(NamedTuple):
    """The parameters of Qwen's ``smart_resize`` (the option ``resize``); the processor's defaults.

    A named tuple, so an options record holding it stays hashable and JSON-serialisable
    (as ``[factor, min_pixels, max_pixels]``, which :func:`resolve_resize` reads back).
    """

    factor: int = DEFAULT_RESIZE_FACTOR
    min_pixels: int = DEFAULT_MIN_PIXELS
    max_pixels: int = DEFAULT_MAX_PIXELS

    def __str__(self) -> str:
        """As the option is written (``--resize``): a JSON object."""
        return json.dumps(self._asdict())


DEFAULT_RESIZE = Resize()


def smart_resize(height: float, width: float, resize: Resize = DEFAULT_RESIZE) -> tuple[int, int]:
    """``(height, width)`` of the model's input, exactly as Qwen2-VL's processor computes it.

    A copy of ``smart_resize`` in transformers 4.57.1,
    src/transformers/models/qwen2_vl/image_processing_qwen2_vl.py, lines 54-80 (the
    processor calls it at line 248 with ``factor=patch_size * merge_size``): sides
    rounded (Python's ``round``, half to even) to multiples of ``factor``, then scaled
    down (floor) or up (ceil) to keep the area within ``[min_pixels, max_pixels]``.
    The processor refuses an aspect ratio above 200; so does this (``OptionError``), and a size whose
    arithmetic underflows or overflows (``1e-300`` pixels).
    """
    factor, min_pixels, max_pixels = resize.factor, resize.min_pixels, resize.max_pixels
    if max(height, width) / min(height, width) > 200:
        raise OptionError(
            f"prediction_frame 'resized': the image's aspect ratio {max(height, width) / min(height, width):g} "
            "is above 200, which Qwen's smart_resize refuses"
        )
    try:  # a size no image has (1e-300 pixels) underflows or overflows: the caller's mistake, said as one
        h_bar = round(height / factor) * factor
        w_bar = round(width / factor) * factor
        if h_bar * w_bar > max_pixels:
            beta = math.sqrt((height * width) / max_pixels)
            h_bar = max(factor, math.floor(height / beta / factor) * factor)
            w_bar = max(factor, math.floor(width / beta / factor) * factor)
        elif h_bar * w_bar < min_pixels:
            beta = math.sqrt(min_pixels / (height * width))
            h_bar = math.ceil(height * beta / factor) * factor
            w_bar = math.ceil(width * beta / factor) * factor
    except (ArithmeticError, ValueError) as exc:
        raise OptionError(
            f"prediction_frame 'resized': the image size {width:g}x{height:g} cannot be resized as Qwen's smart_resize "
            f"does ({type(exc).__name__}); give the image's size in pixels"
        ) from exc
    return int(h_bar), int(w_bar)


def resolve_frame(value: Any) -> str:
    """A ``prediction_frame`` name (stripped, lower-cased; ``None`` means ``pixel``)."""
    if value is None:
        return PIXEL
    if isinstance(value, str):
        key = value.strip().lower()
        if key in PREDICTION_FRAMES:
            return key
    raise OptionError(f"Trace prediction_frame must be one of {list(PREDICTION_FRAMES)} (default 'pixel'), got {value!r}")


def resolve_resize(value: Any) -> Resize | None:
    """The ``resize`` option: ``None`` (the processor's defaults) or a mapping of ``factor``, ``min_pixels``, ``max_pixels``.

    Also its JSON text (the command line's ``--resize '{"factor": 32}'``) and the three numbers
    in that order (how a :class:`Resize` is written as JSON).
    """
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise OptionError(f"Trace resize must be a JSON object of {list(RESIZE_KEYS)}, got {value!r}: {exc}") from exc
    if isinstance(value, (list, tuple)) and len(value) == len(RESIZE_KEYS):
        value = dict(zip(RESIZE_KEYS, value, strict=True))
    if not isinstance(value, Mapping):
        raise OptionError(f"Trace resize must be a mapping of {list(RESIZE_KEYS)}, got {value!r}")
    unknown = sorted(str(key) for key in value if key not in RESIZE_KEYS)
    if unknown:
        raise OptionError(f"Trace resize has unknown key(s) {unknown}; accepted: {list(RESIZE_KEYS)}")
    numbers = {}
    for key in RESIZE_KEYS:
        number = value.get(key, getattr(DEFAULT_RESIZE, key))
        if isinstance(number, bool) or not isinstance(number, int) or number <= 0:
            raise OptionError(f"Trace resize[{key!r}] must be a positive integer, got {number!r}")
        numbers[key] = number
    if numbers["min_pixels"] > numbers["max_pixels"]:
        raise OptionError(f"Trace resize: min_pixels {numbers['min_pixels']} exceeds max_pixels {numbers['max_pixels']}")
    return Resize(**numbers)


def declared_model_size(value: Any) -> tuple[float, float]:
    """The ``model_image_size`` argument, ``[width, height]`` of positive finite numbers; ``OptionError`` otherwise."""
    size = size_from(value)
    if size is None:
        raise OptionError(f"model_image_size must be [width, height] of positive finite numbers, got {value!r}")
    return size


def model_size(
    size: tuple[float, float], model_image_size: tuple[float, float] | None, resize: Resize | None
) -> tuple[float, float]:
    """``(width, height)`` of the model's resized input: the declared ``model_image_size``, else :func:`smart_resize`."""
    if model_image_size is not None:
        return model_image_size
    height, width = smart_resize(size[1], size[0], resize or DEFAULT_RESIZE)
    return (float(width), float(height))


def frame_scales(
    frame: str, size: tuple[float, float], model_image_size: tuple[float, float] | None = None, resize: Resize | None = None
) -> tuple[float, float, bool]:
    """``(scale_x, scale_y, y_first)`` taking a value written in ``frame`` to pixels of an image of ``size``."""
    width, height = size
    relative = RELATIVE_FRAMES.get(frame)
    if relative is not None:
        span, y_first = relative
        return (width / span, height / span, y_first)
    if frame == RESIZED:
        model_w, model_h = model_size(size, model_image_size, resize)
        return (width / model_w, height / model_h, False)
    return (1.0, 1.0, False)
