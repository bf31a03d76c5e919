"""What ``trace-tasks report`` reads from an instance's ``image`` (issue 24, finding 4).

The page is meant to be shared, so an instance must not be able to put any
local file into it: only a PNG, JPEG, GIF or WebP image (by its content, not
its name) within the size bounds is drawn under a case's overlay; any other
file is refused with a note in the case, and the overlay is drawn on a blank
canvas. ``explain --png`` holds the instance's ``image`` to the same rule
(``--image``, named by the user, is drawn as given).
"""

from __future__ import annotations

import base64
import io
import os
import re
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import instance, run_cli, write_lines
from trace_tasks.cli._views import drawing

PIL = pytest.importorskip("PIL")
from PIL import Image, features  # noqa: E402

COLOUR = (10, 200, 30)
GOOD = '{"answer": 2, "annotation": [0, 0, 10, 10]}'


def _image(path: Path, fmt: str, size: tuple[int, int] = (64, 48)) -> Path:
    Image.new("RGB", size, COLOUR).save(path, format=fmt)
    return path


def _pictures(html: str) -> list[Any]:
    return [
        Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB")
        # the whole overlay of each case of the worst section (a crop's <img> starts with its class)
        for data in re.findall(r'<img alt="[^"]*" src="data:image/png;base64,([^"]+)"', html.split('id="correct-worst"')[0])
    ]


def _shows_the_image(picture: Any) -> bool:
    """True when many pixels of the overlay have the image's colour (a JPEG's within a few levels)."""
    near = sum(
        count
        for count, rgb in picture.getcolors(maxcolors=1 << 20)
        if all(abs(a - b) <= 12 for a, b in zip(rgb, COLOUR, strict=True))
    )
    return bool(near > 1000)


def _report_of(tmp_path: Path, image: str) -> tuple[str, str]:
    combined = write_lines(tmp_path / "c.jsonl", [{**instance("i", image=image, image_size=[64, 48]), "response": GOOD}])
    scores = tmp_path / "s.jsonl"
    assert run_cli("score", str(combined), "-o", str(scores), "-q").returncode == 0
    page = tmp_path / "r.html"
    proc = run_cli("report", str(scores), "--instances", str(combined), "-o", str(page), "--sample", "0", "--worst", "1")
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr.decode()
    html = page.read_text(encoding="utf-8")
    notes = re.findall(r'<p class="muted">(the instance&#x27;s image [^<]*)</p>', html)
    pictures = _pictures(html)
    assert len(pictures) == 1  # the case always has its overlay
    return ("drawn" if _shows_the_image(pictures[0]) else "blank"), (notes[0] if notes else "")


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "GIF", "WEBP"])
def test_a_real_image_is_drawn_under_the_overlay(tmp_path: Path, fmt: str) -> None:
    if fmt == "WEBP" and not features.check("webp"):
        # A Pillow built without libwebp can neither write nor open WebP: such a file
        # (its RIFF header written here by hand) is refused with a note, never drawn.
        (tmp_path / "picture.bin").write_bytes(b"RIFF" + (26).to_bytes(4, "little") + b"WEBPVP8 " + bytes(18))
        shown, note = _report_of(tmp_path, "picture.bin")
        assert shown == "blank" and note
        return
    _image(tmp_path / "picture.bin", fmt)  # the name does not matter, the content does
    assert _report_of(tmp_path, "picture.bin") == ("drawn", "")


@pytest.mark.parametrize("fmt", ["PPM", "BMP", "TIFF"])
def test_an_image_of_another_format_is_refused_whatever_its_name(tmp_path: Path, fmt: str) -> None:
    _image(tmp_path / "picture.png", fmt)  # Pillow opens these: before the check they were drawn
    shown, note = _report_of(tmp_path, "picture.png")
    assert shown == "blank"
    assert note == (
        "the instance&#x27;s image &#x27;picture.png&#x27; is not drawn: it is not a PNG, JPEG, GIF or WebP image "
        "(by its content, whatever its name) (the overlay is on a blank canvas)"
    )


def test_a_file_that_is_not_an_image_is_refused(tmp_path: Path) -> None:
    (tmp_path / "secret.png").write_text("%!PS-Adobe-3.0 EPSF-3.0\nsecret\n")
    shown, note = _report_of(tmp_path, "secret.png")
    assert shown == "blank" and "is not a PNG, JPEG, GIF or WebP image" in note


def test_a_forged_png_is_refused(tmp_path: Path) -> None:
    (tmp_path / "forged.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"not really" * 10)
    shown, note = _report_of(tmp_path, "forged.png")
    assert shown == "blank" and "does not open as a PNG image" in note


def test_an_image_past_the_byte_bound_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _image(tmp_path / "big.png", "PNG")
    monkeypatch.setattr(drawing, "MAX_IMAGE_BYTES", path.stat().st_size - 1)
    shown, note = _report_of(tmp_path, "big.png")
    assert shown == "blank"
    assert f"it is {path.stat().st_size:,} bytes, more than the {path.stat().st_size - 1:,} an image may have" in note


def test_an_image_past_the_pixel_bound_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _image(tmp_path / "wide.png", "PNG")
    monkeypatch.setattr(drawing, "MAX_IMAGE_PIXELS", 64 * 48 - 1)
    shown, note = _report_of(tmp_path, "wide.png")
    assert shown == "blank" and f"it is 64x48 pixels, more than the {64 * 48 - 1:,} an image may have" in note


def test_the_documented_bounds() -> None:
    assert drawing.MAX_IMAGE_BYTES == 16 * 1024 * 1024 and drawing.MAX_IMAGE_PIXELS == 40_000_000
    docs = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")
    assert "at most 16 MiB and 40 megapixels" in " ".join(docs.split())


def test_explain_holds_the_instance_image_to_the_same_rule(tmp_path: Path) -> None:
    _image(tmp_path / "picture.png", "PPM")
    path = write_lines(tmp_path / "i.jsonl", [instance("i", image="picture.png", image_size=[64, 48])])
    png = tmp_path / "out.png"
    proc = run_cli("explain", "--instance", str(path), "--line", "1", "--response", GOOD, "--png", str(png))
    assert proc.returncode == 1 and b"Traceback" not in proc.stderr
    assert (
        f"cannot draw over the instance's image {tmp_path / 'picture.png'}: it is not a PNG, JPEG, GIF or WebP image"
    ) in proc.stderr.decode()
    assert not png.exists()
    # Named by the user, the same file is drawn as given.
    proc = run_cli(
        "explain",
        "--instance",
        str(path),
        "--line",
        "1",
        "--response",
        GOOD,
        "--png",
        str(png),
        "--image",
        str(tmp_path / "picture.png"),
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert _shows_the_image(Image.open(png).convert("RGB"))


def test_explain_never_opens_an_instance_image_that_is_not_a_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "picture.png"
    os.mkfifo(fifo)  # opened for reading, it would wait for a writer forever
    path = write_lines(tmp_path / "i.jsonl", [instance("i", image="picture.png", image_size=[64, 48])])
    proc = run_cli("explain", "--instance", str(path), "--line", "1", "--response", GOOD, "--png", str(tmp_path / "o.png"))
    assert proc.returncode == 1
    assert f"cannot draw over the instance's image {fifo}: it is not a regular file" in proc.stderr.decode()
