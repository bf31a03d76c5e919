"""Reading JSON, and (for compatibility) Python literal mappings, without ever raising.

JSON is the contract. Some existing pipelines emit Python literals
(``{'answer': (1, 2)}``), so a bounded literal reader is tried second. It never
evaluates code (``ast.literal_eval`` only builds constants and containers) and it
refuses oversized or deeply nested text up front, so a hostile string costs at
most a few milliseconds. Every failure is reported as "not parsed".

``ast.literal_eval`` costs up to ~2 us per character, so many strings read one
after another (the values of a 10,000-key set-map, each a 64 KiB literal) could
add up to seconds. :func:`literal_budget` caps the total characters the literal
reader accepts while scoring one response; past it, strings are "not parsed".

Both readers recurse once per nesting level, and the JSON decoder is bounded only
by ``sys.getrecursionlimit()``: under a raised limit, deep nesting overflows the
C stack and kills the process. So nesting is measured first, by C-speed passes
(numpy finds which characters lie inside JSON strings and takes the running
bracket count), against fixed bounds that do not depend on the recursion limit.

Decoding a megabyte of small containers allocates ~100,000 objects, and the
cyclic garbage collector, triggered by allocations, then runs dozens of times
over the growing result: 2-5x the decode itself. Nothing a decoder builds can be
garbage while it builds it, so long texts are decoded with the collector paused
(:class:`_gc_paused`).
"""

from __future__ import annotations

import ast
import gc
import io
import json
import re
import tokenize
from contextvars import ContextVar
from typing import Any

import numpy as np

from trace_tasks.limits import MAX_JSON_DEPTH, MAX_LITERAL_CHARS, MAX_LITERAL_DEPTH

_stdlib_loads = json.JSONDecoder().decode

try:  # the optional accelerator, ``pip install 'trace-core[fast]'``
    import msgspec.json as _fast_json
except ImportError:  # the standard library alone gives the same values
    _fast_json = None  # type: ignore[assignment]

#: Which JSON decoder reads first: ``"msgspec"`` when installed, else ``"json"``.
JSON_DECODER = "json" if _fast_json is None else "msgspec"


def _make_json_loads(fast: bool) -> Any:
    """The decode function: msgspec first when ``fast`` (and installed), the stdlib otherwise.

    msgspec reads what it accepts to the same values as the stdlib (integers of
    any size stay exact; floats are correctly rounded by both); what it refuses
    and the stdlib reads (``NaN``, ``1e400``, lone surrogate escapes) goes to the
    stdlib, whose verdict and value stand. So the results are the same with or
    without it (tests/core/test_json_decoders.py); only the time differs.
    """
    if not fast or _fast_json is None:
        return _stdlib_loads
    fast_decode = _fast_json.Decoder().decode

    def loads(text: str) -> Any:
        try:
            return fast_decode(text)
        except Exception:  # DecodeError, and anything odd (a lone surrogate cannot be encoded)
            return _stdlib_loads(text)

    return loads


_json_loads = _make_json_loads(fast=True)


def decode_json(text: str) -> Any:
    """``json.loads(text)`` with msgspec first when installed: the standard library's values and errors either way.

    For a caller's JSON text that ``json.loads`` would read as it is (the reward server's labels): no
    nesting check, as for ``json.loads``; model output goes through :func:`load_json`.
    """
    return _json_loads(text)


#: Texts at least this long are decoded with the cyclic collector paused. A shorter
#: one builds too few objects (a generation-0 collection needs ~700) to be slowed,
#: and saves the pause's two calls.
GC_PAUSE_CHARS = 4096


class _gc_paused:
    """Within the block the cyclic garbage collector does not run; its state is restored after.

    Only a collector that was enabled is paused and enabled again, so a caller's
    ``gc.disable()`` stands. The collector's switch is per interpreter: when two
    threads decode at once, the first to finish may enable it while the other
    still decodes (that decode is then only slower), and a thread that disables
    it meanwhile has its choice undone when the decode ends. Exceptions pass
    through after the state is restored. A class, not a generator-based manager:
    it is entered on every long decode.
    """

    __slots__ = ("_was_enabled",)

    def __enter__(self) -> None:
        self._was_enabled = gc.isenabled()
        if self._was_enabled:
            gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self._was_enabled:
            gc.enable()


_QUOTE, _BACKSLASH = ord('"'), ord("\\")


def _steps(openers: str, closers: str) -> np.ndarray:
    # +1 for an opener byte, -1 for a closer byte, 0 for every other byte (UTF-8
    # continuation bytes are >= 0x80, so non-ASCII text never counts).
    table = np.zeros(256, dtype=np.int8)
    table[[ord(c) for c in openers]] = 1
    table[[ord(c) for c in closers]] = -1
    return table


_JSON_STEPS = _steps("[{", "]}")
_LITERAL_STEPS = _steps("([{", ")]}")
#: Characters the literal reader may still accept in the current scoring call
#: (a one-item list so nested readers share it); None: no budget in force.
_budget: ContextVar[list[int] | None] = ContextVar("trace_tasks_literal_budget", default=None)
#: What one call to the literal reader costs at least, in budget characters:
#: ``ast.literal_eval`` spends ~15-30 us per call however short the text.
MIN_LITERAL_CHARGE = 64


class literal_budget:
    """Within the block, literal reads draw ``max(len(text), MIN_LITERAL_CHARGE)``
    characters from ``remaining[0]``; a read that does not fit is "not parsed".

    Pass the same list to several blocks to share one budget between them. A
    class rather than ``contextlib.contextmanager``: it is entered on every scored
    response, and a generator-based manager costs several times more.
    """

    __slots__ = ("_remaining", "_token")

    def __init__(self, remaining: list[int]) -> None:
        self._remaining = remaining

    def __enter__(self) -> None:
        self._token = _budget.set(self._remaining)

    def __exit__(self, *exc: object) -> None:
        _budget.reset(self._token)


def _codes(text: str) -> np.ndarray:
    # UTF-8 bytes: every ASCII character is one byte, and no byte of a multi-byte
    # character (all >= 0x80) equals a bracket, quote or backslash.
    return np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)


def quote_escapes(codes: np.ndarray, quotes: np.ndarray) -> np.ndarray:
    """Per quote position, whether an odd run of backslashes precedes it."""
    backslashes = codes == _BACKSLASH
    if not backslashes.any():  # the common case: no escapes at all
        return np.zeros(quotes.size, dtype=bool)
    positions = np.arange(codes.size, dtype=np.int32 if codes.size < 2**31 else np.int64)
    last_other = np.where(backslashes, -1, positions)  # last byte that is not a backslash
    np.maximum.accumulate(last_other, out=last_other)
    run = np.where(quotes > 0, quotes - 1 - last_other[np.maximum(quotes - 1, 0)], 0)
    return (run & 1).astype(bool)


def string_states(escaped: np.ndarray) -> np.ndarray:
    """Per quote, in the order the quotes are read, 1 when a string is open after it.

    Outside a string any quote opens one; inside, an unescaped quote closes it.
    As a function of the state, an escaped quote sets "inside" and an unescaped
    one toggles it, so the state after each quote follows from two running
    counts: the unescaped quotes since the last escaped one (or the start).
    """
    unescaped_so_far = np.cumsum(~escaped)
    rank = np.arange(escaped.size)
    last_escaped = np.where(escaped, rank, -1)
    np.maximum.accumulate(last_escaped, out=last_escaped)
    after_escaped = last_escaped >= 0
    since = unescaped_so_far - np.where(after_escaped, unescaped_so_far[np.maximum(last_escaped, 0)], 0)
    return ((since & 1) ^ after_escaped).astype(np.int8)  # odd count toggles; after an escaped quote, flipped


def inside_json_strings(codes: np.ndarray) -> np.ndarray:
    """Per character code, 1 where a JSON string is open after it (0 outside strings).

    Read left to right, a quote outside a string opens one; inside, the first
    quote preceded by an even run of backslashes closes it (as the decoder reads).
    """
    quotes = np.flatnonzero(codes == _QUOTE)
    inside = np.zeros(codes.size, dtype=np.int8)
    if quotes.size == 0:
        return inside
    inside[quotes] = np.diff(string_states(quote_escapes(codes, quotes)), prepend=np.int8(0))
    return np.cumsum(inside, dtype=np.int8)


def _peak_nesting(codes: np.ndarray, steps: np.ndarray) -> int:
    """The highest running count of openers minus closers (0 at least)."""
    if codes.size == 0:
        return 0
    return max(0, int(np.cumsum(steps, dtype=np.int32).max()))


def json_nesting_ok(text: str) -> bool:
    """Whether decoding ``text`` as JSON stays within ``MAX_JSON_DEPTH`` levels.

    Brackets inside JSON strings do not count. On the part of the text the decoder
    reads before it stops, the running count equals the decoder's depth, so a text
    that passes never recurses deeper; a text that fails is invalid JSON past its
    first error or nested too deep. Fast path: with at most ``MAX_JSON_DEPTH``
    openers in all (two ``str.count`` calls), nothing can be too deep.
    """
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return True
    codes = _codes(text)
    steps = _JSON_STEPS[codes]
    steps[inside_json_strings(codes) == 1] = 0
    return _peak_nesting(codes, steps) <= MAX_JSON_DEPTH


def load_json(text: str) -> tuple[Any, bool]:
    """``json.loads`` that reports failure instead of raising (depth, digits, syntax).

    The one place model or caller text is decoded as JSON: the nesting check
    comes first, so no recursion limit can let the decoder overflow the C stack.
    """
    if not isinstance(text, str) or not json_nesting_ok(text):
        return None, False
    try:
        if len(text) < GC_PAUSE_CHARS:
            return _json_loads(text), True
        with _gc_paused():
            return _json_loads(text), True
    except (ValueError, RecursionError, MemoryError, TypeError):
        return None, False


def _nesting_depth(text: str, limit: int) -> int:
    # Exceeds ``limit`` exactly when the bracket nesting does (0 when it cannot).
    # Counts brackets inside quotes too: an over-estimate is a safe refusal.
    # Fast path (three C-speed counts): with at most ``limit`` openers in all,
    # no nesting can exceed ``limit``.
    if text.count("(") + text.count("[") + text.count("{") <= limit:
        return 0
    codes = _codes(text)
    return _peak_nesting(codes, _LITERAL_STEPS[codes])


def _plain_values(value: Any) -> bool:
    """No complex number, bytes or Ellipsis anywhere in ``value`` (mapping keys included).

    ``ast.literal_eval`` builds them, but JSON has none and no answer or
    annotation is written with them (docs/limits.md): such a literal is "not parsed".
    Sets stay (a set answer compares ignoring order, docs/contracts.md §4).
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if item is None or isinstance(item, (str, int, float)):  # bool is an int
            continue
        if isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
        else:
            return False
    return True


def load_literal(text: str) -> tuple[Any, bool]:
    """Read a Python literal, bounded in size and nesting; failure is ``(None, False)``."""
    if len(text) > MAX_LITERAL_CHARS or "\x00" in text:
        return None, False
    budget = _budget.get()
    if budget is not None:
        cost = max(len(text), MIN_LITERAL_CHARGE)
        if cost > budget[0]:
            return None, False
        budget[0] -= cost
    if _nesting_depth(text, MAX_LITERAL_DEPTH) > MAX_LITERAL_DEPTH:
        return None, False
    source = text.strip()
    if "\\" in source:
        source = escapes_as_read(source)
    try:
        if len(text) < GC_PAUSE_CHARS:
            value = ast.literal_eval(source)
        else:
            with _gc_paused():
                value = ast.literal_eval(source)
    except Exception:  # SyntaxError, ValueError, MemoryError, RecursionError...: all "not a literal"
        return None, False
    return (value, True) if _plain_values(value) else (None, False)


#: A backslash escape in a string's body: the forms Python reads, or any one character after it.
_ESCAPE = re.compile(r"\\(N\{[^}]*\}|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{1,3}|.)", re.DOTALL)
#: Characters after a backslash that make an escape Python reads without a warning (or a malformed one it
#: refuses whatever the filters: ``\x4``), left as written.
_KEPT_AFTER_BACKSLASH = frozenset("\\'\"abfnrtv\n\rxuUN")


def _as_read(match: re.Match[str]) -> str:
    body = match.group(1)
    if body[0] in "01234567":  # octal: above \377 Python 3.12+ warns, and reads the character
        value = int(body, 8)
        return match.group(0) if value <= 0o377 else f"\\u{value:04x}"
    if len(body) > 1 or body in _KEPT_AFTER_BACKSLASH:
        return match.group(0)
    return "\\\\" + body  # an invalid escape (\[, \8): read as the backslash and the character


def escapes_as_read(source: str) -> str:
    """``source`` with each escape Python warns of in a plain string literal written as what Python reads.

    ``ast.literal_eval`` reads ``'a\\[b'`` as ``a\\[b`` with a ``DeprecationWarning``
    (a ``SyntaxWarning`` from 3.12), and a filter that turns it into an error
    (``-W error``, a test suite's ``filterwarnings = error``) turns it into a
    ``SyntaxError``: the same text would be a literal or not depending on the
    process's filters, and printed warnings on stderr whatever the model wrote.
    ``warnings.catch_warnings`` swaps process-wide filters (the reward server
    scores from threads), so the escapes are rewritten instead, in the string
    tokens only: ``\\[`` as ``\\\\[``, an octal escape above ``\\377`` as its
    ``\\u`` form. Raw, bytes and f-strings are left as they are (raw strings read
    no escapes; the other two are never a literal's values, whatever the filters).
    Text that does not tokenize is returned unchanged (it is no literal either way).
    """
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except Exception:  # tokenize's errors, or anything a hostile text provokes: the reader decides
        return source
    starts = [0]
    for line in io.StringIO(source):  # readline's lines, as tokenize numbers them
        starts.append(starts[-1] + len(line))
    pieces: list[str] = []
    done = 0
    for token in tokens:
        if token.type != tokenize.STRING:
            continue
        prefix = token.string[: len(token.string) - len(token.string.lstrip("rRbBuUfF"))].lower()
        if "r" in prefix or "b" in prefix or "f" in prefix:
            continue
        start = starts[token.start[0] - 1] + token.start[1]
        end = starts[token.end[0] - 1] + token.end[1]
        if source[start:end] != token.string:  # positions that do not fall where they should: rewrite nothing
            return source
        pieces.append(source[done:start])
        pieces.append(_ESCAPE.sub(_as_read, source[start:end]))
        done = end
    if not pieces:
        return source
    pieces.append(source[done:])
    return "".join(pieces)


def load_json_or_literal(text: str) -> tuple[Any, bool]:
    """JSON first, then the bounded literal reader."""
    value, ok = load_json(text)
    if ok:
        return value, True
    return load_literal(text)


def read_annotation_string(text: str) -> tuple[Any, bool]:
    """Read an annotation given as a string (``"[0, 0, 10, 10]"``, ``"(0, 0, 10, 10)"``)."""
    return load_json_or_literal(text)
