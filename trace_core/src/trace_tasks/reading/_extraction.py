"""Finding the final JSON object in a model response, in time linear in its length.

Two questions are answered separately (docs/contracts.md §3):

* **Format**: does the response *end* with the final object, either as the
  content of the last fenced code block or as a bare balanced object, and does
  that object have exactly the keys of the output mode?
* **Recovery**: for scoring, where is a mapping holding ``answer`` or
  ``annotation``? The final block first; then the whole response; then top-level
  balanced objects, fenced blocks and ``<answer>`` tags, each from last to first.

Two opt-in departures (docs/contracts.md §3.7) change those answers:
``recovery`` ``"outside_think"`` reads the recovery candidates and the atomic
answer from the text outside ``<think>...</think>`` (:func:`outside_think`,
tags nesting), ``"final_only"`` takes the final block or nothing (a final
``<answer>`` pair counting as the final block; an atomic answer in answer mode
only); ``answer_tag`` lets a response end with ``<answer>OBJ</answer>``, OBJ
being the final block. Under these policies a tag inside a string of a JSON
object is text (:func:`_unquoted`).

Every scan below moves through the text once, jumping between structural
characters with ``str.find``/``str.rfind`` (C speed); no parser is tried at every
brace and no regex backtracks. A text with many structural tokens (brace or
quote floods: hundreds of thousands per MiB) would still cost a Python step per
token, so after ``_PYTHON_STEPS`` steps a scan starts over in numpy, which
computes the same answer in a few whole-array passes (string state from
running counts, depth from a cumulative sum); only the candidates that can hold
a prediction are then listed.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping
from typing import Any

import attrs
import numpy as np

from trace_tasks.limits import MAX_LITERAL_BUDGET, MAX_LITERAL_CHARS, MAX_RECOVERY_CANDIDATES, MAX_RESPONSE_CHARS
from trace_tasks.reading._literals import load_json, load_literal, quote_escapes, string_states
from trace_tasks.reading._values import is_mapping

FENCE = "```"
ANSWER_OPEN = "<answer>"
ANSWER_CLOSE = "</answer>"
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
#: ``recovery`` values, as :mod:`trace_tasks.scoring` names them (``trace_recovery``).
LENIENT = "lenient"
OUTSIDE_THINK = "outside_think"
FINAL_ONLY = "final_only"
ANSWER_KEYS = frozenset({"answer"})
ANSWER_AND_ANNOTATION_KEYS = frozenset({"answer", "annotation"})
#: The keys of the ``annotation_only`` mode's final object (docs/contracts.md §3.1).
ANNOTATION_KEYS = frozenset({"annotation"})
#: Structural steps a Python scan takes before it starts over in numpy: an ordinary
#: response needs a few dozen; numpy's fixed cost (~50 us) pays off only on floods.
_PYTHON_STEPS = 256
#: Substrings that make a candidate worth parsing (see ``_may_hold_prediction``).
_PREDICTION_MARKS = ("answer", "annotation", "\\")
_OPEN_BRACE, _CLOSE_BRACE, _QUOTE = ord("{"), ord("}"), ord('"')


@attrs.frozen(slots=True)
class FormatCheck:
    """Format diagnostics of one response (docs/contracts.md §3)."""

    structure_ok: bool
    json_ok: bool
    schema_ok: bool
    answer_block: str | None
    payload: Any  # the final block's mapping when json_ok, else None

    @property
    def format(self) -> float:
        return 1.0 if self.schema_ok else 0.0


@attrs.frozen(slots=True)
class Extraction:
    """Everything scoring needs from a response, computed in one pass."""

    format: FormatCheck
    payload: Mapping[Any, Any] | None  # the recovered mapping, None when none was found
    last_answer_tag: str | None  # content of the last <answer>...</answer>, if any
    source: str = ""  # which candidate the payload came from ("final block", ...), "" when none
    #: How the atomic answer is read: ``"lenient"`` (the whole response), ``"outside_think"``
    #: (the text outside ``<think>...</think>``), ``"final_only"`` (answer mode only: a final ``<answer>`` pair).
    recovery: str = LENIENT
    answer_mode: bool = False  # the output mode's keys are ``{"answer"}`` (only ``final_only`` asks)
    #: ``final_only`` read the response's final ``<answer>...</answer>`` pair as its final block although
    #: ``format_accept_answer_tag`` is off (format 0, the content scored): the trail's count of R1-template
    #: rows a run should score with the tag option (docs/contracts.md §3.7).
    final_tag: bool = False

    @property
    def found(self) -> bool:
        return self.payload is not None

    def answer(self, response: str) -> Any:
        """The answer value that is compared: the payload's ``answer``, else an atomic answer.

        Atomic answers: the last ``<answer>`` tag's content when no mapping was
        found, else the whole stripped response (so a response ``7`` scores).
        Like everything else, it is read from the last ``MAX_RESPONSE_CHARS``
        characters only: a 16 MiB response must not be decoded and compared whole.
        With ``outside_think`` both are read from the text outside
        ``<think>...</think>``; with ``final_only`` only an answer-mode response
        without a payload has one: the final ``<answer>`` pair's stripped content
        when the response ends with one, else the whole stripped response.
        """
        answer = self.payload.get("answer") if self.payload is not None else None
        if answer is not None:
            return answer
        recovery = self.recovery
        if recovery == FINAL_ONLY:
            if self.payload is not None or not self.answer_mode:
                return None
            if self.last_answer_tag is not None:  # the final <answer> pair's content: the final block
                return self.last_answer_tag
        if self.payload is None and self.last_answer_tag is not None:
            return self.last_answer_tag.strip()
        if len(response) > MAX_RESPONSE_CHARS:
            response = response[-MAX_RESPONSE_CHARS:]
        if recovery == OUTSIDE_THINK:
            response = outside_think(response)
        return response.strip()


class _Parser:
    """JSON, then the bounded literal reader, with a per-response literal budget.

    The last text and its result are remembered: the final block is often also
    the whole response and the last top-level object, and parsing a megabyte of
    valid JSON three times is wasted work.
    """

    __slots__ = ("budget", "last_result", "last_text")

    def __init__(self) -> None:
        self.budget = MAX_LITERAL_BUDGET
        self.last_text: str | None = None
        self.last_result: tuple[Any, bool] = (None, False)

    def parse(self, text: str) -> tuple[Any, bool]:
        if text == self.last_text:
            return self.last_result
        self.last_text = text
        self.last_result = self._parse(text)
        return self.last_result

    def _parse(self, text: str) -> tuple[Any, bool]:
        # The one place extraction decodes. ``load_json`` checks the nesting depth
        # (``trace_tasks.reading._literals.json_nesting_ok``) before the recursive decoder runs: another
        # decoder used here must keep that check in front of it.
        value, ok = load_json(text)
        if ok:
            return value, True
        if len(text) > MAX_LITERAL_CHARS or len(text) > self.budget:
            return None, False
        self.budget -= len(text)
        return load_literal(text)


def _drop_json_tag(content: str) -> str:
    # A ``json`` info string (any case) right after the opening fence is not content;
    # any other tag (``python``, ``jsonc``) stays and so fails to parse.
    if content[:4].lower() == "json" and (len(content) == 4 or not (content[4].isalnum() or content[4] == "_")):
        return content[4:]
    return content


def _string_start(text: str, close: int) -> int:
    """Index of the unescaped ``"`` opening the string that ends at ``close``, or -1."""
    k = close
    while True:
        k = text.rfind('"', 0, k)
        if k < 0:
            return -1
        j = k - 1
        while j >= 0 and text[j] == "\\":
            j -= 1
        if (k - 1 - j) % 2 == 0:
            return k


def _string_end(text: str, open_: int) -> int:
    """Index of the unescaped ``"`` closing the string opened at ``open_``, or -1."""
    k = open_
    while True:
        k = text.find('"', k + 1)
        if k < 0:
            return -1
        j = k - 1
        while j > open_ and text[j] == "\\":
            j -= 1
        if (k - 1 - j) % 2 == 0:
            return k


def _nth_from_left(text: str, ch: str, start: int, stop: int, n: int) -> int:
    """Index of the ``n``-th ``ch`` in ``text[start:stop]`` (it must hold at least ``n``).

    Binary search over C-speed ``str.count`` calls: O(log) passes instead of a
    Python step per character, for floods of braces.
    """
    lo, hi = start, stop - 1  # the answer lies in [lo, hi]
    while lo < hi:
        mid = (lo + hi) // 2
        if text.count(ch, start, mid + 1) >= n:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _nth_from_right(text: str, ch: str, start: int, stop: int, n: int) -> int:
    """Index of the ``n``-th ``ch`` counted backward from the end of ``text[start:stop]``."""
    lo, hi = start, stop - 1  # the answer lies in [lo, hi]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if text.count(ch, mid, stop) >= n:
            lo = mid
        else:
            hi = mid - 1
    return lo


def balanced_object_start(text: str) -> int:
    """Start of the ``{`` balancing the final ``}`` of ``text`` (strings skipped), or -1.

    Scans backward from the end, so nothing written before the final object
    (a stray quote or brace in the reasoning) can hide it. A run of braces with
    no quote or other brace between them is taken in one step (``str.count``).
    """
    i = len(text)
    po = pc = pq = i
    depth = steps = 0
    while True:
        steps += 1
        if steps > _PYTHON_STEPS:
            return _balanced_object_start_np(text)
        if po >= i:
            po = text.rfind("{", 0, i)
        if pc >= i:
            pc = text.rfind("}", 0, i)
        if pq >= i:
            pq = text.rfind('"', 0, i)
        i = max(po, pc, pq)
        if i < 0:
            return -1
        if i == pq:
            i = _string_start(text, i)
            if i < 0:
                return -1
        elif i == pc:
            # Every structural character in (lo, i] is a ``}``.
            lo = max(po, pq)
            depth += text.count("}", lo + 1, i + 1)
            i = lo + 1
        else:
            lo = max(pc, pq)
            count = text.count("{", lo + 1, i + 1)
            if 0 < depth <= count:
                return _nth_from_right(text, "{", lo + 1, i + 1, depth)
            depth -= count
            i = lo + 1


def top_level_objects(text: str) -> list[tuple[int, int]]:
    """Spans of balanced top-level ``{...}`` in one forward scan that skips strings.

    Objects nested inside other objects are not listed. An unterminated string
    hides everything after it (as in the original scorer's recovery). A run of
    braces with no quote or other brace between them is taken in one step.
    """
    starts, ends = _top_level_spans(text)
    if isinstance(starts, np.ndarray) and isinstance(ends, np.ndarray):
        starts, ends = starts.tolist(), ends.tolist()
    return list(zip(starts, ends, strict=True))


#: Span starts or ends: a list from the Python scan, an array from the numpy one.
_Positions = list[int] | np.ndarray


def _top_level_spans(text: str) -> tuple[_Positions, _Positions]:  # noqa: C901  one hand-tuned scan loop: helpers would cost a call per step
    """``top_level_objects`` as starts and ends (numpy arrays once the scan moved to numpy)."""
    spans: list[tuple[int, int]] = []
    n = len(text)
    i = steps = 0
    po = pc = pq = -1
    depth = 0
    start = 0
    while True:
        steps += 1
        if steps > _PYTHON_STEPS:
            return _top_level_spans_np(text)
        if po < i:
            po = text.find("{", i)
            if po < 0:
                po = n
        if pc < i:
            pc = text.find("}", i)
            if pc < 0:
                pc = n
        if pq < i:
            pq = text.find('"', i)
            if pq < 0:
                pq = n
        j = min(po, pc, pq)
        if j >= n:
            return _unzip(spans)
        if j == pq:
            end = _string_end(text, j)
            if end < 0:
                return _unzip(spans)
            i = end + 1
        elif j == po:
            # Every structural character in [j, hi) is a ``{``.
            hi = min(pc, pq)
            if depth == 0 and hi == pc < n and (hi == j + 1 or text.count("{", j, hi) == 1):
                spans.append((j, pc + 1))  # a flat object (no brace or string inside): one step
                i = pc + 1
                continue
            if depth == 0:
                start = j
            depth += 1 if hi == j + 1 else text.count("{", j, hi)
            i = hi
        else:
            hi = min(po, pq)
            if depth == 1:  # the common case: this brace closes the object
                spans.append((start, j + 1))
                depth = 0
            elif depth:
                count = text.count("}", j, hi)
                if count >= depth:
                    spans.append((start, _nth_from_left(text, "}", j, hi, depth) + 1))
                    depth = 0
                else:
                    depth -= count
            i = hi  # closers at depth 0 are stray and ignored


def _unzip(spans: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
    return [a for a, _ in spans], [b for _, b in spans]


# --- the same scans in numpy, for texts with many structural tokens ---------------------------


def _char_codes(text: str) -> np.ndarray:
    """One array element per character, so array indices are string indices."""
    if text.isascii():
        return np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _balanced_object_start_np(text: str) -> int:
    """:func:`balanced_object_start` in whole-array passes (same result)."""
    codes = _char_codes(text)
    quotes = np.flatnonzero(codes == _QUOTE)
    braces = np.flatnonzero((codes == _OPEN_BRACE) | (codes == _CLOSE_BRACE))
    if quotes.size:
        # Read backward, a quote outside a string opens one and an unescaped quote
        # inside closes it: the forward rule applied to the quotes in reverse order.
        after = string_states(quote_escapes(codes, quotes)[::-1])[::-1]  # after[k]: having read quotes k..end
        nxt = np.searchsorted(quotes, braces)  # the first quote right of each brace
        in_string = np.zeros(braces.size, dtype=bool)
        has_quote = nxt < quotes.size
        in_string[has_quote] = after[nxt[has_quote]] == 1
        braces = braces[~in_string]
        if after[0]:  # a string opened (reading backward) that never closes hides what lies left of it
            opened = np.flatnonzero((after == 1) & (np.append(after[1:], 0) == 0))
            braces = braces[braces > quotes[opened[0]]]
    closes = codes[braces[::-1]] == _CLOSE_BRACE
    balanced = np.flatnonzero(np.cumsum(closes.view(np.int8) * np.int8(2) - np.int8(1), dtype=np.int32) == 0)
    return int(braces[::-1][balanced[0]]) if balanced.size else -1


def _top_level_spans_np(text: str) -> tuple[np.ndarray, np.ndarray]:
    """:func:`top_level_objects` in whole-array passes: (starts, ends)."""
    codes = _char_codes(text)
    braces = np.flatnonzero((codes == _OPEN_BRACE) | (codes == _CLOSE_BRACE))
    quotes = np.flatnonzero(codes == _QUOTE)
    if quotes.size:
        after = string_states(quote_escapes(codes, quotes))  # after[k]: inside a string after quote k
        last = np.searchsorted(quotes, braces) - 1  # the last quote left of each brace
        in_string = np.zeros(braces.size, dtype=bool)
        has_quote = last >= 0
        in_string[has_quote] = after[last[has_quote]] == 1
        braces = braces[~in_string]
        if after[-1]:  # an unterminated string hides everything from its opening quote on
            opened = np.flatnonzero((after == 1) & (np.insert(after[:-1], 0, 0) == 0))
            braces = braces[braces < quotes[opened[-1]]]
    opens = codes[braces] == _OPEN_BRACE
    total = np.cumsum(opens.view(np.int8) * np.int8(2) - np.int8(1), dtype=np.int32)
    depth = total - np.minimum(np.minimum.accumulate(total), 0)  # closers at depth 0 are ignored
    before = np.empty_like(depth)
    before[:1] = 0
    before[1:] = depth[:-1]
    starts = braces[opens & (before == 0)]
    ends = braces[~opens & (before == 1)] + 1
    return starts[: ends.size], ends


def _may_hold(codes: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Per span ``[start, end)``, whether it contains one of ``_PREDICTION_MARKS``."""
    hold = np.zeros(starts.size, dtype=bool)
    for mark in _PREDICTION_MARKS:
        width = len(mark)
        at = np.flatnonzero(codes[: max(codes.size - width + 1, 0)] == ord(mark[0]))
        for offset, ch in enumerate(mark[1:], 1):  # keep the positions where the whole mark follows
            at = at[codes[at + offset] == ord(ch)]
        # A span holds the mark when one starts in [start, end - width].
        hold |= np.searchsorted(at, ends - width + 1) > np.searchsorted(at, starts)
    return hold


def _object_candidates(text: str) -> tuple[int, list[tuple[int, int, int]]]:
    """``(n, [(k, a, b), ...])``: the number of top-level objects, and those that may
    hold a prediction, last to first, as their number ``k`` and span (enough of them
    to reach the recovery limit)."""
    starts, ends = _top_level_spans(text)
    n = len(starts)
    keep = MAX_RECOVERY_CANDIDATES + 1
    if isinstance(starts, list) or isinstance(ends, list):
        out = []
        for k in range(n, 0, -1):
            a, b = starts[k - 1], ends[k - 1]
            if _may_hold_prediction(text[a:b]):
                out.append((k, a, b))
                if len(out) >= keep:
                    break
        return n, out
    holding = np.flatnonzero(_may_hold(_char_codes(text), starts, ends))[::-1][:keep]
    return n, [(int(k) + 1, int(starts[k]), int(ends[k])) for k in holding]


def _fence_marks(codes: np.ndarray) -> np.ndarray:
    """Starts of the fences ``fenced_blocks`` finds (``str.find`` from after the previous
    one): within a run of backticks, every third position from the run's start."""
    ticks = np.concatenate(([False], codes == ord("`"), [False]))
    edges = np.flatnonzero(ticks[1:] != ticks[:-1])  # run starts, then ends, alternating
    run_starts, per_run = edges[0::2], (edges[1::2] - edges[0::2]) // 3
    run_starts, per_run = run_starts[per_run > 0], per_run[per_run > 0]
    rank = np.arange(int(per_run.sum())) - np.repeat(np.cumsum(per_run) - per_run, per_run)
    marks: np.ndarray = np.repeat(run_starts, per_run) + 3 * rank
    return marks


def _fenced_candidates(text: str) -> tuple[int, list[tuple[int, str]]]:
    """``(n, [(k, content), ...])``: the number of fenced blocks, and those that may hold
    a prediction, last to first (enough to reach the recovery limit)."""
    keep = MAX_RECOVERY_CANDIDATES + 1
    if text.count(FENCE) <= 2 * _PYTHON_STEPS:
        blocks = fenced_blocks(text)
        found = [(k, blocks[k - 1]) for k in range(len(blocks), 0, -1) if _may_hold_prediction(blocks[k - 1])]
        return len(blocks), found[:keep]
    # A backtick flood: pair the fences and test the contents in numpy. Dropping the
    # ``json`` tag and stripping never remove a mark, so the raw content decides.
    codes = _char_codes(text)
    marks = _fence_marks(codes)
    opens, closes = marks[0::2][: marks.size // 2], marks[1::2]
    holding = np.flatnonzero(_may_hold(codes, opens + 3, closes))[::-1][:keep]
    return opens.size, [(int(k) + 1, _drop_json_tag(text[opens[k] + 3 : closes[k]]).strip()) for k in holding]


def fenced_blocks(text: str) -> list[str]:
    """Contents of fenced code blocks, fences paired in order, ``json`` tag dropped."""
    marks: list[int] = []
    k = text.find(FENCE)
    while k >= 0:
        marks.append(k)
        k = text.find(FENCE, k + 3)
    return [_drop_json_tag(text[a + 3 : b]).strip() for a, b in zip(marks[::2], marks[1::2], strict=False)]


def _positions(text: str, tag: str) -> list[int]:
    """Where ``tag`` starts in ``text``, left to right.

    A few: one ``str.find`` each. A flood: ``str.split`` and a cumulative sum of
    the pieces' lengths, at C speed.
    """
    count = text.count(tag)
    if count <= _PYTHON_STEPS:
        out: list[int] = []
        k = text.find(tag)
        while k >= 0:
            out.append(k)
            k = text.find(tag, k + len(tag))
        return out
    pieces = text.split(tag)
    lengths = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
    found: list[int] = (np.cumsum(lengths[:-1] + len(tag)) - len(tag)).tolist()
    return found


def _unquoted(text: str, positions: list[int]) -> list[int]:
    """``positions`` without those inside a string of a balanced top-level JSON object.

    A ``"</think>"`` or ``"<answer>"`` written as a JSON string value is text, not
    a tag (docs/contracts.md §3.7). The objects are those of recovery (§3.3: one
    forward scan that skips strings); a position is in one of their strings when
    it lies in an object and after a quote that leaves a string open, read from
    the start as that scan reads them. Quotes in prose outside every object hide
    nothing. Whole-array passes, so tag or quote floods stay linear.
    """
    if not positions or '"' not in text:
        return positions
    starts, ends = (np.asarray(side, dtype=np.int64) for side in _top_level_spans(text))
    if not starts.size:
        return positions
    at = np.asarray(positions, dtype=np.int64)
    span = np.searchsorted(starts, at, side="right") - 1
    inside = (span >= 0) & (at < ends[np.maximum(span, 0)])
    if not inside.any():
        return positions
    codes = _char_codes(text)
    quotes = np.flatnonzero(codes == _QUOTE)
    after = string_states(quote_escapes(codes, quotes))  # after[k]: inside a string after quote k
    last = np.searchsorted(quotes, at) - 1  # the last quote left of each position
    quoted = inside & (last >= 0) & (after[np.maximum(last, 0)] == 1)
    kept: list[int] = at[~quoted].tolist()
    return kept


def _answer_pairs(text: str, quoted_are_text: bool) -> list[tuple[int, int]]:
    """``(open, close)`` of each ``<answer>...</answer>`` pair: each open tag with the next close tag.

    Close tags with no open tag before them are skipped; an open tag inside a
    pair's content is part of that content. With ``quoted_are_text`` (the
    opt-in policies), tags inside JSON strings are text (:func:`_unquoted`).
    """
    opens, closes = _positions(text, ANSWER_OPEN), _positions(text, ANSWER_CLOSE)
    if quoted_are_text:
        opens, closes = _unquoted(text, opens), _unquoted(text, closes)
    if len(opens) + len(closes) > _PYTHON_STEPS:
        return _answer_pairs_np(opens, closes)
    pairs: list[tuple[int, int]] = []
    i = j = 0
    while i < len(opens):
        start = opens[i] + len(ANSWER_OPEN)
        while j < len(closes) and closes[j] < start:
            j += 1
        if j == len(closes):
            break
        pairs.append((opens[i], closes[j]))
        end = closes[j] + len(ANSWER_CLOSE)
        while i < len(opens) and opens[i] < end:
            i += 1
    return pairs


def _answer_pairs_np(opens: list[int], closes: list[int]) -> list[tuple[int, int]]:
    """:func:`_answer_pairs`' pairing in whole-array passes (tag floods).

    In the tags' order, a close tag closes a pair exactly when the tag before it
    is an open tag; the pair opens at the first open tag after the previous close tag.
    """
    at = np.concatenate((np.asarray(opens, dtype=np.int64), np.asarray(closes, dtype=np.int64)))
    is_open = np.concatenate((np.ones(len(opens), dtype=bool), np.zeros(len(closes), dtype=bool)))
    order = np.argsort(at, kind="stable")
    at, is_open = at[order], is_open[order]
    pair_close = np.flatnonzero(~is_open[1:] & is_open[:-1]) + 1
    last_close = np.where(is_open, -1, np.arange(at.size))
    np.maximum.accumulate(last_close, out=last_close)
    pair_open = last_close[pair_close - 1] + 1
    return list(zip(at[pair_open].tolist(), at[pair_close].tolist(), strict=True))


def answer_tags(text: str, *, quoted_are_text: bool = False) -> list[str]:
    """Contents of ``<answer>...</answer>`` pairs, each open tag with the next close tag.

    ``quoted_are_text``: tags inside strings of JSON objects are text (the opt-in
    policies of docs/contracts.md §3.7; the default reads every tag, as §3.3 says).
    """
    return [text[a + len(ANSWER_OPEN) : b] for a, b in _answer_pairs(text, quoted_are_text)]


def final_answer_tag(text: str) -> str | None:
    """The stripped content of the ``<answer>...</answer>`` pair that ``text`` (right-stripped) ends with, or None.

    Pairs as :func:`answer_tags` pairs them (each open tag with the next close
    tag), tags inside JSON strings being text: ``<answer>junk<answer>{...}</answer>``
    is one pair whose content is ``junk<answer>{...}``, never the object alone.
    None when the final close tag closes no pair or the content is blank.
    """
    text = text.rstrip()
    if not text.endswith(ANSWER_CLOSE):
        return None
    pairs = _answer_pairs(text, quoted_are_text=True)
    if not pairs or pairs[-1][1] != len(text) - len(ANSWER_CLOSE):
        return None
    return text[pairs[-1][0] + len(ANSWER_OPEN) : pairs[-1][1]].strip() or None


def final_block(text: str, answer_tag: bool = False) -> str | None:
    """The final block the response ends with: last fence content or bare object.

    With ``answer_tag`` (``format_accept_answer_tag``), a response ending with
    ``</answer>`` has the stripped content of that last tag pair as its final
    block (:func:`final_answer_tag`), which must then be exactly the final
    object to parse.
    """
    text = text.rstrip()
    if answer_tag and text.endswith(ANSWER_CLOSE):
        return final_answer_tag(text)
    if text.endswith(FENCE):
        close = len(text) - 3
        open_ = text.rfind(FENCE, 0, close)
        if open_ < 0:
            return None
        content = _drop_json_tag(text[open_ + 3 : close]).strip()
        return content or None
    if text.endswith("}"):
        start = balanced_object_start(text)
        return text[start:] if start >= 0 else None
    return None


def check_format(
    text: str, required_keys: frozenset[str], parser: _Parser | None = None, answer_tag: bool = False
) -> FormatCheck:
    """Format diagnostics of ``text`` for an output mode with ``required_keys``."""
    block = final_block(text, answer_tag)
    if block is None:
        return FormatCheck(False, False, False, None, None)
    value, ok = (parser or _Parser()).parse(block)
    if not ok or not is_mapping(value):
        return FormatCheck(True, False, False, block, None)
    schema_ok = len(value) == len(required_keys) and all(k in value for k in required_keys)
    return FormatCheck(True, True, schema_ok, block, value)


def _holds_prediction(value: Any) -> bool:
    return is_mapping(value) and ("answer" in value or "annotation" in value)


def _may_hold_prediction(text: str) -> bool:
    # Cheap filter before parsing a candidate; escapes could spell the keys otherwise.
    return "answer" in text or "annotation" in text or "\\" in text


def _candidates(text: str, quoted_are_text: bool = False) -> Iterator[tuple[str, int, int, str]]:
    """``(kind, k, n, text)`` of every recovery candidate, in preference order.

    ``k`` of ``n`` numbers the candidate within its kind; the label is built only
    for the candidate that is used (a brace flood has hundreds of thousands).
    """
    stripped = text.strip()
    if stripped.startswith("{") and stripped.endswith("}"):
        yield "the whole response", 1, 1, stripped
    n, spans = _object_candidates(text)  # only those that may hold a prediction
    for k, a, b in spans:
        yield "top-level object", k, n, text[a:b]
    n, blocks = _fenced_candidates(text)  # only those that may hold a prediction
    for k, block in blocks:
        yield "fenced block", k, n, block
    tags = answer_tags(text, quoted_are_text=quoted_are_text)
    for k in range(len(tags), 0, -1):
        yield "<answer> tag", k, len(tags), tags[k - 1]


def recover_payload(text: str, parser: _Parser, quoted_are_text: bool = False) -> tuple[Mapping[Any, Any] | None, str]:
    """The first candidate mapping holding ``answer`` or ``annotation`` and its label."""
    if not _may_hold_prediction(text):  # then no candidate can: skip the scans (brace floods)
        return None, ""
    tried = 0
    for kind, k, n, candidate in _candidates(text, quoted_are_text):
        if not _may_hold_prediction(candidate):
            continue
        tried += 1
        if tried > MAX_RECOVERY_CANDIDATES:
            return None, ""
        value, ok = parser.parse(candidate)
        if ok and _holds_prediction(value):
            return value, (kind if n == 1 and kind == "the whole response" else f"{kind} {k} of {n}")
    return None, ""


#: How the final object of most responses starts: compact JSON with ``answer`` first
#: (``annotation`` in the ``annotation_only`` mode, whose object holds nothing else).
COMMON_OPENING = '{"answer"'
ANNOTATION_OPENING = '{"annotation"'


def plain_final_object(text: str, required_keys: frozenset[str]) -> Extraction | None:
    """The extraction of the most common ending, found without the backward scan, or None.

    When ``text`` (right-stripped) ends with ``}`` and its last ``{"answer"`` opens
    a JSON object that runs to that end, that ``{`` is the one
    :func:`balanced_object_start` stops at (a valid JSON text pairs its braces
    and quotes alike read from either end), that object is the final block, and
    it holds ``answer``: :func:`extract` would return the same. Anything else
    (fences, tags, literals, trailing prose, an object opened otherwise) is None
    and takes the general path.
    """
    stripped = text.rstrip()
    if not stripped.endswith("}"):
        return None
    start = stripped.rfind(ANNOTATION_OPENING if required_keys == ANNOTATION_KEYS else COMMON_OPENING)
    if start < 0:
        return None
    block = stripped[start:]
    value, ok = load_json(block)
    if not ok or type(value) is not dict:
        return None
    schema_ok = len(value) == len(required_keys) and all(k in value for k in required_keys)
    return Extraction(FormatCheck(True, True, schema_ok, block, value), value, None, "the final block")


def extract(
    response: str, required_keys: frozenset[str], recovery: str = LENIENT, answer_tag: bool = False, *, plain_tried: bool = False
) -> Extraction:
    """Format check and recovery of one response, sharing one parse of the final block.

    ``recovery`` and ``answer_tag`` are the opt-in departures of docs/contracts.md
    §3.7 (``trace_recovery``, ``format_accept_answer_tag``); the defaults are the contract.
    ``plain_tried``: the caller found no :func:`plain_final_object` in ``response`` already.
    """
    text = response if len(response) <= MAX_RESPONSE_CHARS else response[-MAX_RESPONSE_CHARS:]
    common = None if plain_tried else plain_final_object(text, required_keys)  # ends with ``}``: never an ``<answer>`` tag
    if common is not None:
        if recovery == LENIENT:
            return common
        return attrs.evolve(common, recovery=recovery, answer_mode=required_keys == ANSWER_KEYS)
    parser = _Parser()
    fmt = check_format(text, required_keys, parser, answer_tag)
    visible = text
    if _holds_prediction(fmt.payload):
        payload, source = fmt.payload, "the final block"
    elif recovery == FINAL_ONLY:
        # A final <answer> pair is the final block here, with the tag option or without (§3.7): the
        # R1 template's committed answer. Without the option it is scored but earns no format.
        payload, source = None, ""
        tag_block = final_answer_tag(text)
        final_tag = tag_block is not None and not answer_tag
        if tag_block is not None and final_tag:
            value, ok = parser.parse(tag_block)
            if ok and _holds_prediction(value):
                payload, source = value, FINAL_ANSWER_TAG
        return Extraction(fmt, payload, tag_block, source, recovery, required_keys == ANSWER_KEYS, final_tag)
    else:
        if recovery == OUTSIDE_THINK:
            visible = outside_think(text)
        payload, source = recover_payload(visible, parser, recovery != LENIENT)
    tag = None
    if payload is None:
        tags = answer_tags(visible, quoted_are_text=recovery != LENIENT)
        tag = tags[-1] if tags else None
    if recovery == LENIENT:
        return Extraction(fmt, payload, tag, source)
    return Extraction(fmt, payload, tag, source, recovery, required_keys == ANSWER_KEYS)


#: ``Extraction.source`` of a payload ``final_only`` read from the final ``<answer>`` pair, the tag option off.
FINAL_ANSWER_TAG = "the final <answer> tag"


def outside_think(text: str) -> str:
    """``text`` without what lies inside ``<think>...</think>`` (``trace_recovery="outside_think"``).

    Tags nest: each ``<think>`` opens a level and each ``</think>`` closes one,
    and only text at level 0 is outside. A ``<think>`` never closed runs to the
    end (a generation cut short while thinking). A ``</think>`` that closes no
    open ``<think>`` closes a span opened at the start: everything before it
    was thinking (chat templates put ``<think>`` in the prompt; a draft between
    a nested block's close and the outer close is still inside). Tags inside
    strings of JSON objects are text (:func:`_unquoted`). The pieces left are
    joined by a newline. Linear: one ``str.find`` per tag, one merge; a text
    without either tag is returned as it is.
    """
    if text.find(THINK_OPEN) < 0 and text.find(THINK_CLOSE) < 0:
        return text
    opens = _unquoted(text, _positions(text, THINK_OPEN))
    closes = _unquoted(text, _positions(text, THINK_CLOSE))
    if len(opens) + len(closes) > _PYTHON_STEPS:
        return _outside_think_np(text, opens, closes)
    pieces: list[str] = []
    depth = pos = 0
    for at, step in heapq.merge(((k, 1) for k in opens), ((k, -1) for k in closes)):
        if step > 0:
            if depth == 0:
                pieces.append(text[pos:at])
            depth += 1
            continue
        if depth == 0:
            pieces.clear()  # thinking since the start: nothing before this tag is outside
        else:
            depth -= 1
        if depth == 0:
            pos = at + len(THINK_CLOSE)
    if depth == 0:
        pieces.append(text[pos:])
    return "\n".join(pieces)


def _outside_think_np(text: str, opens: list[int], closes: list[int]) -> str:
    """:func:`outside_think` in whole-array passes (tag floods): the same pieces.

    The level after each tag is the running sum of +1 (open) and -1 (close)
    above its running minimum (clipped at 0): a close that reaches a new minimum
    closes no open tag, and the text before the last such close is dropped.
    """
    at = np.concatenate((np.asarray(opens, dtype=np.int64), np.asarray(closes, dtype=np.int64)))
    step = np.concatenate((np.ones(len(opens), dtype=np.int64), np.full(len(closes), -1, dtype=np.int64)))
    order = np.argsort(at, kind="stable")
    at, step = at[order], step[order]
    total = np.cumsum(step)
    floor = np.minimum(np.minimum.accumulate(total), 0)
    before = np.concatenate(([0], floor[:-1]))
    unmatched = np.flatnonzero((step < 0) & (total < before))
    begin, first = 0, 0
    if unmatched.size:
        last = int(unmatched[-1])
        begin, first = int(at[last]) + len(THINK_CLOSE), last + 1
    at, step, level = at[first:], step[first:], (total - floor)[first:]
    starts = [begin, *(at[(step < 0) & (level == 0)] + len(THINK_CLOSE)).tolist()]
    ends = at[(step > 0) & (level == 1)].tolist()
    if not level.size or level[-1] == 0:
        ends.append(len(text))
    return "\n".join(text[a:b] for a, b in zip(starts, ends, strict=True))


def think_text(text: str) -> str | None:
    """The stripped content of the first ``<think>...</think>`` block, if any."""
    start = text.find(THINK_OPEN)
    if start < 0:
        return None
    end = text.find(THINK_CLOSE, start + len(THINK_OPEN))
    if end < 0:
        return None
    return text[start + len(THINK_OPEN) : end].strip()
