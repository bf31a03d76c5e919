# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The native common path of the scoring pipeline (docs/compiled.md): one response, the result or None.

Built only into the native wheel (``HATCH_BUILD_HOOKS_ENABLE=1``); the pure build has no such module and
:func:`trace_tasks.scoring._pipeline.run` scores everything in Python. :func:`score` handles the frequent
cases exactly as the Python pipeline does and returns the very same result dict (keys in order, values
bit for bit), whenever the response is read as the contract reads it (the caller checks the options):

* the final object: the plain ending in C (what ``plain_final_object`` finds: the text ends with ``}``
  and its last ``{"answer"`` opens a JSON object that runs to that end, read by the pipeline's own
  ``load_json``) and a fenced final block holding JSON with ``answer`` or ``annotation`` (what
  ``check_format`` finds); with no final block, recovery's candidates in its order while each one tried
  is JSON (no payload at all: the atomic answer, the last ``<answer>`` tag's or the whole response's);
  else the pipeline's own extraction, called (literals, a final ``<answer>`` pair under the tag option);
* an integer or plain-string answer (the pipeline's lean comparisons), any other answer through the
  pipeline's own ``matches_answer_target``; no answer in the ``annotation_only`` mode;
* no annotation, or one scored by a kernel a family declared (``Primitive.native``: ``"iou"`` for boxes,
  ``"soft_point"`` for points, ``"soft_segment"`` for segments) in the scalar, set, sequence, map and
  set-map shapes, from plain JSON lists of ints and floats (the target too, when it is not prepared),
  sets within their own assignment budget (from the reduction threshold, the grouped match restated:
  :func:`_grouped_total`), set-maps well within the smallest shared assignment budget;
* the composition, with the pipeline's own result template, for any mode, formula, weights, format
  weight and half-life.

Anything else (an object without an answer, a bracketed response, a string or wrapper annotation, a value that
does not parse, a set past the budget) returns ``None`` and the unchanged Python pipeline scores the response: it
stays the specification. When the pipeline's extraction was called first, the decline returns what it gave (the
extraction and the literal budget it left), and the Python steps go on from there instead of reading the response
again. Each
similarity is written with the same operations in the same order as the plugin's (C doubles are IEEE
binary64; the module is compiled without floating-point contraction); distances are ``math.hypot``'s
(CPython's algorithm restated from 3.11 on, :func:`_distance`; called on 3.10) and ``exp`` is the C
library's, which is what ``math.exp`` calls; set totals are summed by ``math.fsum``, and pairs of sets
of 2+ items on both sides are chosen on rows in the lexicographic order ``np.lexsort`` gives, as
``trace_tasks.family``'s ``assign_pairs`` does, by scipy's ``linear_sum_assignment`` restated
(:func:`_assign`, for the releases :data:`SCIPY_RESTATED`; scipy's own otherwise).
"""

from libc.math cimport INFINITY, NAN, exp, fabs, floor, fma, isfinite, isinf, isnan, ldexp, sqrt

cdef extern from "float.h":
    double DBL_MIN
from cpython.pyport cimport PY_SSIZE_T_MAX
from libc.stdint cimport uint64_t
from libc.stdlib cimport free, malloc, qsort, realloc
from cpython.number cimport PyNumber_Float
from cpython.unicode cimport PyUnicode_DATA, PyUnicode_KIND, PyUnicode_READ
from libc.string cimport memcpy

import math
import sys

import numpy as np

import trace_tasks.limits as _limits
from trace_tasks.reading import load_json
from trace_tasks.scoring._answers import JSON_STARTS, NEVER_MATCHES, matches_answer_target
from trace_tasks.scoring._image_size import HEIGHT_KEYS, NESTED_KEYS, WIDTH_KEYS

cdef object _fsum = math.fsum
cdef object _hypot = math.hypot  # CPython's own algorithm (it changed in 3.12), never the C library's hypot
cdef double LN2 = math.log(2.0)  # trace_tasks.family.LN2
cdef object _optimize = None  # scipy.optimize, imported on first use; its solver looked up per call, as _scipy_pairs does
cdef object _load_json = load_json
try:  # the decoder load_json tries first (reading's _literals), when installed
    import msgspec.json
    _fast_decode = msgspec.json.Decoder().decode
except ImportError:
    _fast_decode = None
cdef Py_ssize_t MAX_JSON_DEPTH = _limits.MAX_JSON_DEPTH
cdef Py_ssize_t GC_PAUSE_CHARS = 4096  # reading's _literals (any value gives the same values: only its GC pause)


cdef tuple _json(str text):
    """``load_json(text)``: its common case restated (few openers, a short text, msgspec's verdict), else called."""
    if _fast_decode is not None and len(text) < GC_PAUSE_CHARS and text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        try:
            return _fast_decode(text), True
        except Exception:
            pass  # the standard library's verdict stands: load_json asks it
    return _load_json(text)
cdef object _matches = matches_answer_target
cdef object _NEVER_MATCHES = NEVER_MATCHES
cdef object _np_empty = np.empty
cdef frozenset _JSON_STARTS = JSON_STARTS

#: Limits of the Python pipeline the native path stays within (trace_tasks.limits, family._matching).
cdef Py_ssize_t MAX_RESPONSE_CHARS = _limits.MAX_RESPONSE_CHARS
cdef Py_ssize_t MAX_COLLECTION_ITEMS = _limits.MAX_COLLECTION_ITEMS
cdef Py_ssize_t REDUCE_MIN_CELLS = 4096
cdef Py_ssize_t MAX_ANNOTATION_ITEMS = _limits.MAX_ANNOTATION_ITEMS
#: A set-map's assignments share one budget (family.AssignmentBudget, at least these); the native path takes
#: only set-maps whose every charge, counted at its largest (a list matrix), fits the smallest budget.
cdef Py_ssize_t MAX_ASSIGNMENT_CELLS = 2_000_000
cdef Py_ssize_t MAX_ASSIGNMENT_WORK = 50_000_000
cdef Py_ssize_t SET_COST = 1000
cdef Py_ssize_t LIST_CELL_COST = 8
#: A set scored alone has its own budget (AssignmentBudget.for_target), read from trace_tasks.limits.
cdef Py_ssize_t MAX_MATRIX_CELLS = _limits.MAX_MATRIX_CELLS
cdef Py_ssize_t MARGIN_DIVISOR = _limits.MARGIN_DIVISOR
cdef Py_ssize_t MAX_TARGET_ASSIGNMENT_CELLS = _limits.MAX_TARGET_ASSIGNMENT_CELLS
cdef Py_ssize_t MAX_TARGET_ASSIGNMENT_WORK = _limits.MAX_TARGET_ASSIGNMENT_WORK

# The codes are C constants (an anonymous ``cpdef enum``: compared as C ints in the kernels, where a module-level
# Python int cost a PyLong conversion per similarity; still importable from Python under the same names).
#: Shape codes (:func:`score`'s ``shape``).
cpdef enum:
    NO_REWARD = -2  # the contract lets no annotation be scored: the prediction is never parsed
    UNKNOWN = -1  # a scorer the native path does not know: a prediction makes it fall back
    SCALAR = 0
    SET = 1
    SEQUENCE = 2
    MAP = 3
    SET_MAP = 4
#: Kernel codes (:func:`score`'s ``kernel``), each a family's declared ``Primitive.native``.
cpdef enum:
    IOU = 0  # "iou": boxes [x0, y0, x1, y1], raw IoU (trace_plugins_bbox.geometry)
    SOFT_POINT = 1  # "soft_point": points [x, y], exp(-ln 2 (distance / half-life)^2) (trace_plugins_point.geometry)
    SOFT_SEGMENT = 2  # "soft_segment": segments [[x0, y0], [x1, y1]], the same over the endpoint distance

#: Reward mode codes (:func:`score`'s ``mode``).
cpdef enum:
    BOTH = 0  # answer_and_annotation
    ANSWER_ONLY = 1  # answer
    ANNOTATION_ALONE = 2  # annotation_only: no answer is read, the task reward is the annotation reward

#: Numbers per item of each kernel.
cdef Py_ssize_t[3] WIDTH = [4, 2, 4]


cdef inline double _iou(double* a, double* b) noexcept:
    # trace_plugins_bbox.geometry.iou, operation for operation.
    cdef double ax0 = a[0], ay0 = a[1], ax1 = a[2], ay1 = a[3]
    cdef double bx0 = b[0], by0 = b[1], bx1 = b[2], by1 = b[3]
    cdef double iw = (bx1 if bx1 < ax1 else ax1) - (bx0 if bx0 > ax0 else ax0)
    if not iw > 0:
        return 0.0
    cdef double ih = (by1 if by1 < ay1 else ay1) - (by0 if by0 > ay0 else ay0)
    if not ih > 0:
        return 0.0
    cdef double inter = iw * ih
    cdef double union = (ax1 - ax0) * (ay1 - ay0) + (bx1 - bx0) * (by1 - by0) - inter
    if not union > 0:
        return 0.0
    cdef double value = inter / union
    return value if 0.0 <= value <= 1.0 else 0.0


cdef inline double _soft(double distance, double half_life) noexcept:
    # trace_tasks.family._distance.soft_similarity; CPython's math.exp is the C library's exp.
    cdef double ratio = distance / half_life
    if not ratio < 40.0:
        return 0.0
    return exp(-LN2 * ratio * ratio)


# CPython's math.hypot (Modules/mathmodule.c: vector_norm with dl_mul and dl_fast_sum; 3.11's dl_mul takes
# Veltkamp-Dekker products, dl_split, and 3.12's fma), restated for two coordinates: the same operations in
# the same order, so the same bits (tests/core/test_native_path.py compares it with math.hypot on every
# Python CI runs). Used from 3.11 on, and never for a subnormal largest coordinate (math.hypot's own
# rescaling then); 3.10's algorithm is another, and there math.hypot is called.
cdef bint _HYPOT_311 = sys.version_info[:2] == (3, 11)
#: From 3.12 vector_norm's products are fma's (its dl_fast_sum is written (a - x) + b there, the same exact
#: error of a sum whose first term is the larger, as vector_norm's always is). 3.10's algorithm is another.
cdef bint _HYPOT_FMA = sys.version_info[:2] >= (3, 12)
cdef inline void _split(double x, double* hi, double* lo) noexcept:
    cdef double t = x * 134217729.0
    hi[0] = t - (t - x)
    lo[0] = x - hi[0]

cdef inline void _mul(double x, double y, double* z, double* zz) noexcept:
    cdef double xh, xl, yh, yl, p, q
    if _HYPOT_FMA:  # 3.12's dl_mul: the product and its exact error by fma (C99's correctly rounded fma)
        z[0] = x * y
        zz[0] = fma(x, y, -z[0])
        return
    _split(x, &xh, &xl)
    _split(y, &yh, &yl)
    p = xh * yh
    q = xh * yl + xl * yh
    z[0] = p + q
    zz[0] = p - z[0] + q + xl * yl

cdef inline void _fast_sum(double a, double b, double* x, double* y) noexcept:
    x[0] = a + b
    cdef double z = x[0] - a
    y[0] = b - z

cdef inline void _add(double* csum, double* frac1, double* frac2, double prhi, double prlo) noexcept:
    # One step of vector_norm's compensated sum: csum += prhi, the low parts kept in frac1 and frac2.
    cdef double smhi, smlo
    _fast_sum(csum[0], prhi, &smhi, &smlo)
    csum[0] = smhi
    frac1[0] += prlo
    frac2[0] += smlo

cdef inline double _norm(double ax, double ay, double mx) noexcept:
    # vector_norm(2, [ax, ay], max, found_nan=0) for a normal, finite max (its only other cases are math_hypot's
    # early returns, in _distance). frexp(mx, &max_e) and scale = ldexp(1.0, -max_e) are read from the bits:
    # for a normal mx frexp's exponent is the biased exponent minus 1022, and 2**-max_e is the double whose
    # biased exponent is 1023 - max_e (a normal number but past 2**1022, where ldexp is called as written).
    # The loop over the two coordinates is written out; every operation is the loop's, in its order.
    cdef double x, h, scale, csum = 1.0, frac1 = 0.0, frac2 = 0.0, prhi, prlo
    cdef int max_e
    cdef uint64_t bits
    memcpy(&bits, &mx, sizeof(double))
    max_e = <int>((bits >> 52) & 0x7FF) - 1022
    if max_e <= 1022:
        bits = (<uint64_t>(1023 - max_e)) << 52
        memcpy(&scale, &bits, sizeof(double))
    else:
        scale = ldexp(1.0, -max_e)
    x = ax
    x *= scale
    _mul(x, x, &prhi, &prlo)
    _add(&csum, &frac1, &frac2, prhi, prlo)
    x = ay
    x *= scale
    _mul(x, x, &prhi, &prlo)
    _add(&csum, &frac1, &frac2, prhi, prlo)
    h = sqrt(csum - 1.0 + (frac1 + frac2))
    _mul(-h, h, &prhi, &prlo)
    _add(&csum, &frac1, &frac2, prhi, prlo)
    x = csum - 1.0 + (frac1 + frac2)
    h += x / (2.0 * h)
    return h / scale




cdef double _math_hypot(double x, double y) except? -1.0:
    # math.hypot itself (apart, so that the common path of _distance saves no registers for a Python call)
    return <double>_hypot(x, y)


cdef inline double _distance(double x, double y) except? -1.0:
    cdef double ax, ay, mx
    if _HYPOT_311 or _HYPOT_FMA:
        ax = fabs(x)
        ay = fabs(y)
        mx = 0.0  # math_hypot's max: a NaN never wins, an infinity always does
        if ax > mx:
            mx = ax
        if ay > mx:
            mx = ay
        # vector_norm's early returns, in its order; a subnormal max (its rescaling) is left to math.hypot
        if isinf(mx):
            return mx
        if isnan(ax) or isnan(ay):
            return NAN
        if mx == 0.0:
            return mx
        if mx >= DBL_MIN:
            return _norm(ax, ay, mx)
    return _math_hypot(x, y)


def hypot(double x, double y):
    """The distance the native kernels compute (:func:`_distance`): math.hypot's value, bit for bit."""
    return _distance(x, y)


cdef void _to_pixels(double* items, Py_ssize_t count, Py_ssize_t w, double scale_x, double scale_y, bint y_first) noexcept:
    # A declared frame's prediction in pixels, as the owner converts flat items: family.swap_xy (each (y, x)
    # pair read as (x, y)) for a y-first frame, then family.scale_xy (x * scale_x, y * scale_y).
    cdef Py_ssize_t i
    cdef double x, y
    for i in range(0, count * w, 2):
        x, y = (items[i + 1], items[i]) if y_first else (items[i], items[i + 1])
        items[i] = x * scale_x
        items[i + 1] = y * scale_y


cdef inline double _similarity(int kernel, double* a, double* b, double half_life) except? -1.0:
    cdef double same, swapped, d1, d2
    if kernel == IOU:
        return _iou(a, b)
    if kernel == SOFT_POINT:
        return _soft(_distance(a[0] - b[0], a[1] - b[1]), half_life)
    # trace_plugins_segment.geometry.segment_distance: Python's max and min keep the first of equal values
    d1 = _distance(a[0] - b[0], a[1] - b[1])
    d2 = _distance(a[2] - b[2], a[3] - b[3])
    same = d2 if d2 > d1 else d1
    d1 = _distance(a[0] - b[2], a[1] - b[3])
    d2 = _distance(a[2] - b[0], a[3] - b[1])
    swapped = d2 if d2 > d1 else d1
    return _soft(swapped if swapped < same else same, half_life)


cdef int _coordinate(object v, double* out) except -1:
    """1 and ``out[0]`` for an exact int or float that is a finite float, else 0 (the caller falls back)."""
    cdef type kind = type(v)
    cdef double d
    if kind is float:
        d = <double>v
    elif kind is int:
        try:
            d = float(v)
        except OverflowError:
            return 0
    else:
        return 0
    if not isfinite(d):
        return 0
    out[0] = d
    return 1


cdef int _pair(object value, double* out) except -1:
    """``coordinates(value, 2)`` of a plain list: 1 and the two numbers in ``out``, else 0."""
    if type(value) is not list or len(<list>value) != 2:
        return 0
    return _coordinate((<list>value)[0], out) and _coordinate((<list>value)[1], out + 1)


cdef int _item(int kernel, object value, double* out) except -1:
    """The family's item parse of a plain JSON value: 1 and the item in ``out``, else 0 (fall back)."""
    cdef double t
    if kernel == SOFT_POINT:
        return _pair(value, out)
    if type(value) is not list or len(<list>value) != (4 if kernel == IOU else 2):
        return 0
    cdef list items = <list>value
    if kernel == SOFT_SEGMENT:
        return _pair(items[0], out) and _pair(items[1], out + 2)
    for i in range(4):  # parse_box
        if not _coordinate(items[i], &out[i]):
            return 0
    if out[0] > out[2]:
        t = out[0]; out[0] = out[2]; out[2] = t
    if out[1] > out[3]:
        t = out[1]; out[1] = out[3]; out[3] = t
    if out[0] == out[2] or out[1] == out[3]:
        return 0  # zero area: a parse failure, whose model-native check is the Python pipeline's
    return 1


cdef bint _flat(int kernel, list items):
    """``is_flat``: one item given alone where a set is expected (boxes and points; never a segment)."""
    if kernel == SOFT_SEGMENT or len(items) != WIDTH[kernel]:
        return False
    for v in items:
        if isinstance(v, (list, tuple, dict)):
            return False
    return True


# --- np.lexsort's row order, in C ----------------------------------------------------------------

cdef double* _rows_values = NULL
cdef Py_ssize_t _rows_width = 0


cdef int _compare_rows(const void* x, const void* y) noexcept nogil:
    cdef Py_ssize_t i = (<Py_ssize_t*>x)[0], j = (<Py_ssize_t*>y)[0]
    cdef double* a = _rows_values + i * _rows_width
    cdef double* b = _rows_values + j * _rows_width
    cdef Py_ssize_t k
    for k in range(_rows_width):
        if a[k] < b[k]:
            return -1
        if a[k] > b[k]:
            return 1
    return -1 if i < j else (1 if i > j else 0)  # a stable sort: equal rows keep their order


cdef Py_ssize_t _augmenting_path(
    Py_ssize_t nc, double* cost, double* u, double* v, Py_ssize_t* path, Py_ssize_t* row4col,
    double* shortest, Py_ssize_t i, char* SR, char* SC, Py_ssize_t* remaining, double* p_min, Py_ssize_t nr,
) noexcept:
    # scipy's rectangular_lsap.cpp augmenting_path (releases SCIPY_RESTATED), statement for statement (Crouse's shortest augmenting path).
    cdef double min_val = 0.0, lowest, r
    cdef Py_ssize_t num_remaining = nc, it, j, index, sink = -1
    for it in range(nc):
        remaining[it] = nc - it - 1
    for it in range(nr):
        SR[it] = 0
    for it in range(nc):
        SC[it] = 0
        shortest[it] = INFINITY
    while sink == -1:
        index = -1
        lowest = INFINITY
        SR[i] = 1
        for it in range(num_remaining):
            j = remaining[it]
            r = min_val + cost[i * nc + j] - u[i] - v[j]
            if r < shortest[j]:
                path[j] = i
                shortest[j] = r
            if shortest[j] < lowest or (shortest[j] == lowest and row4col[j] == -1):
                lowest = shortest[j]
                index = it
        min_val = lowest
        if min_val == INFINITY:
            return -1
        j = remaining[index]
        if row4col[j] == -1:
            sink = j
        else:
            i = row4col[j]
        SC[j] = 1
        num_remaining -= 1
        remaining[index] = remaining[num_remaining]
    p_min[0] = min_val
    return sink


cdef int _assign(Py_ssize_t nr, Py_ssize_t nc, double* cost, Py_ssize_t* col4row) except -1:
    """scipy's ``linear_sum_assignment(cost, maximize=True)`` (releases :data:`SCIPY_RESTATED`) on an nr x nc matrix with nr <= nc (the caller
    transposes a tall one, as scipy does): ``col4row[i]`` is row i's column. The same operations in the same order,
    so the same pairs, ties included (its solve() and augmenting_path()). 0, or -1 when infeasible."""
    cdef double* neg = <double*>malloc(nr * nc * sizeof(double))
    cdef double* u = <double*>malloc(nr * sizeof(double))
    cdef double* v = <double*>malloc(nc * sizeof(double))
    cdef double* shortest = <double*>malloc(nc * sizeof(double))
    cdef Py_ssize_t* path = <Py_ssize_t*>malloc(nc * sizeof(Py_ssize_t))
    cdef Py_ssize_t* row4col = <Py_ssize_t*>malloc(nc * sizeof(Py_ssize_t))
    cdef Py_ssize_t* remaining = <Py_ssize_t*>malloc(nc * sizeof(Py_ssize_t))
    cdef char* SR = <char*>malloc(nr)
    cdef char* SC = <char*>malloc(nc)
    cdef Py_ssize_t i, j, cur, sink, t
    cdef double min_val
    cdef int status = 0
    try:
        if not (neg and u and v and shortest and path and row4col and remaining and SR and SC):
            raise MemoryError()
        for i in range(nr * nc):
            neg[i] = -cost[i]  # maximize: the negated matrix
        for i in range(nr):
            u[i] = 0.0
            col4row[i] = -1
        for j in range(nc):
            v[j] = 0.0
            path[j] = -1
            row4col[j] = -1
        for cur in range(nr):
            sink = _augmenting_path(nc, neg, u, v, path, row4col, shortest, cur, SR, SC, remaining, &min_val, nr)
            if sink < 0:
                status = -1
                break
            u[cur] += min_val
            for i in range(nr):
                if SR[i] and i != cur:
                    u[i] += min_val - shortest[col4row[i]]
            for j in range(nc):
                if SC[j]:
                    v[j] -= min_val - shortest[j]
            j = sink
            while True:
                i = path[j]
                row4col[j] = i
                t = col4row[i]
                col4row[i] = j
                j = t
                if i == cur:
                    break
    finally:
        free(neg); free(u); free(v); free(shortest); free(path); free(row4col); free(remaining); free(SR); free(SC)
    return status


def assign(list matrix):
    """``scipy.optimize.linear_sum_assignment(matrix, maximize=True)`` as lists (rows, cols), by :func:`_assign`:
    the restated solver, for the differential test against scipy's own."""
    cdef Py_ssize_t nr = len(matrix), nc = len(matrix[0]) if matrix else 0, i, j
    if nr == 0 or nc == 0:
        return [], []
    cdef bint tall = nc < nr
    cdef Py_ssize_t a = nc if tall else nr, b = nr if tall else nc
    cdef double* cost = <double*>malloc(nr * nc * sizeof(double))
    cdef Py_ssize_t* col4row = <Py_ssize_t*>malloc(a * sizeof(Py_ssize_t))
    try:
        for i in range(nr):
            for j in range(nc):
                if tall:
                    cost[j * nr + i] = matrix[i][j]
                else:
                    cost[i * nc + j] = matrix[i][j]
        if _assign(a, b, cost, col4row) < 0:
            raise ValueError("cost matrix is infeasible")
        pairs = sorted((col4row[k], k) if tall else (k, col4row[k]) for k in range(a))
        return [p[0] for p in pairs], [p[1] for p in pairs]
    finally:
        free(cost)
        free(col4row)


cdef object _set_total(int kernel, double* preds, Py_ssize_t n, double* gts, Py_ssize_t m, double half_life):
    """The fsum of the optimal pairs' similarities of n x m items (2 <= n*m < REDUCE_MIN_CELLS)."""
    global _rows_values, _rows_width
    cdef Py_ssize_t w = WIDTH[kernel]
    cdef double* matrix = <double*>malloc(n * m * sizeof(double))
    cdef double* rows = <double*>malloc(n * m * sizeof(double))
    cdef Py_ssize_t* order = <Py_ssize_t*>malloc(n * sizeof(Py_ssize_t))
    cdef Py_ssize_t* col4row = <Py_ssize_t*>malloc((n if n < m else m) * sizeof(Py_ssize_t))
    cdef Py_ssize_t i, j, best_i
    cdef double best, v
    if matrix == NULL or rows == NULL or order == NULL or col4row == NULL:
        free(matrix); free(rows); free(order); free(col4row)
        raise MemoryError()
    try:
        for i in range(n):
            for j in range(m):
                matrix[i * m + j] = _similarity(kernel, preds + w * i, gts + w * j, half_life)
        if n == 1 or m == 1:  # assign_pairs' scan: the first best cell (its value is the optimum either way)
            best, best_i = -1.0, 0
            for i in range(n * m):
                v = matrix[i]
                if v > best and isfinite(v):
                    best, best_i = v, i
            return _fsum((matrix[best_i],))
        for i in range(n):
            order[i] = i
        _rows_values, _rows_width = matrix, m
        qsort(order, n, sizeof(Py_ssize_t), _compare_rows)
        _rows_values = NULL
        if _scipy_ported():
            # The rows in np.lexsort's order, as assign_pairs hands them to scipy; a tall matrix transposed, as
            # scipy's solve() does.
            if n <= m:
                for i in range(n):
                    for j in range(m):
                        rows[i * m + j] = matrix[order[i] * m + j]
                if _assign(n, m, rows, col4row) < 0:
                    return None
                values = [rows[i * m + col4row[i]] for i in range(n)]
            else:
                for i in range(n):
                    for j in range(m):
                        rows[j * n + i] = matrix[order[i] * m + j]
                if _assign(m, n, rows, col4row) < 0:
                    return None
                values = [rows[j * n + col4row[j]] for j in range(m)]
            return _fsum(values)
        return _scipy_total(_np_empty((n, m), dtype=np.float64), matrix, order, n, m)
    finally:
        free(matrix)
        free(rows)
        free(order)
        free(col4row)


cdef object _scipy_total(object arr, double* matrix, Py_ssize_t* order, Py_ssize_t n, Py_ssize_t m):
    """scipy's own solver on the rows in order (a scipy release :func:`_assign` does not restate)."""
    global _optimize
    cdef double[:, ::1] view = arr
    cdef Py_ssize_t i, j
    for i in range(n):
        for j in range(m):
            view[i, j] = matrix[order[i] * m + j]
    if _optimize is None:
        import scipy.optimize

        _optimize = scipy.optimize
    rows, cols = _optimize.linear_sum_assignment(arr, maximize=True)
    return _fsum([view[r, c] for r, c in zip(rows.tolist(), cols.tolist())])


# --- the grouped match of large sets (family._matching._match_grouped, family._assignment.assign_groups) -----

cdef double* _rank_values = NULL


cdef int _compare_ranks(const void* x, const void* y) noexcept nogil:
    # np.argsort(-row, kind="stable") of one matrix row: the larger cell first, equal cells in column order
    cdef Py_ssize_t i = (<Py_ssize_t*>x)[0], j = (<Py_ssize_t*>y)[0]
    cdef double a = _rank_values[i], b = _rank_values[j]
    if a > b:
        return -1
    if a < b:
        return 1
    return -1 if i < j else (1 if i > j else 0)


cdef void _rank(double* row, Py_ssize_t n, Py_ssize_t* order) noexcept:
    """``order``: the columns of ``row`` best first, equal cells in column order (``_top_slots``' order)."""
    global _rank_values
    cdef Py_ssize_t j
    for j in range(n):
        order[j] = j
    _rank_values = row
    qsort(order, n, sizeof(Py_ssize_t), _compare_ranks)
    _rank_values = NULL


cdef Py_ssize_t _group(double* items, Py_ssize_t n, Py_ssize_t w, Py_ssize_t* first, Py_ssize_t* counts) except -1:
    """``_groups``: the distinct items in the order of their first copies (``first[g]`` the index of group g's
    first copy, ``counts[g]`` its copies); their number. Equal is ``==`` on every number, as tuples of floats
    compare (0.0 and -0.0 are one item; the parse leaves no NaN)."""
    global _rows_values, _rows_width
    cdef Py_ssize_t* order = <Py_ssize_t*>malloc(n * sizeof(Py_ssize_t))
    cdef Py_ssize_t* size = <Py_ssize_t*>malloc(n * sizeof(Py_ssize_t))
    cdef Py_ssize_t i, k, start, groups = 0
    cdef double* a
    cdef double* b
    if order == NULL or size == NULL:
        free(order); free(size)
        raise MemoryError()
    for i in range(n):
        order[i] = i
        size[i] = 0
    _rows_values, _rows_width = items, w
    qsort(order, n, sizeof(Py_ssize_t), _compare_rows)  # equal items together, each run's first copy first
    _rows_values = NULL
    start = 0
    for i in range(1, n + 1):
        if i < n:
            a = items + w * order[start]
            b = items + w * order[i]
            for k in range(w):
                if not a[k] == b[k]:
                    break
            else:
                continue
        size[order[start]] = i - start
        start = i
    for i in range(n):
        if size[i]:
            first[groups] = i
            counts[groups] = size[i]
            groups += 1
    free(order)
    free(size)
    return groups


cdef object _solve_rows(double* cells, Py_ssize_t nr, Py_ssize_t nc):
    """``_scipy_pairs`` of an nr x nc matrix (nr <= nc): the fsum of the cells scipy's solver picks on the rows in
    np.lexsort's order; None when it finds no assignment."""
    global _rows_values, _rows_width
    cdef Py_ssize_t* order = <Py_ssize_t*>malloc(nr * sizeof(Py_ssize_t))
    cdef Py_ssize_t* col4row = <Py_ssize_t*>malloc(nr * sizeof(Py_ssize_t))
    cdef double* rows = <double*>malloc(nr * nc * sizeof(double))
    cdef Py_ssize_t i, j
    if order == NULL or col4row == NULL or rows == NULL:
        free(order); free(col4row); free(rows)
        raise MemoryError()
    try:
        for i in range(nr):
            order[i] = i
        _rows_values, _rows_width = cells, nc
        qsort(order, nr, sizeof(Py_ssize_t), _compare_rows)
        _rows_values = NULL
        if not _scipy_ported():
            return _scipy_total(_np_empty((nr, nc), dtype=np.float64), cells, order, nr, nc)
        for i in range(nr):
            for j in range(nc):
                rows[i * nc + j] = cells[order[i] * nc + j]
        if _assign(nr, nc, rows, col4row) < 0:
            return None
        return _fsum([rows[i * nc + col4row[i]] for i in range(nr)])
    finally:
        free(order)
        free(col4row)
        free(rows)


cdef object _grouped_total(
    int kernel, double* preds, Py_ssize_t n, double* gts, Py_ssize_t m, double half_life,
    Py_ssize_t cells_left, Py_ssize_t work_left,
):
    """``_match_grouped``'s total of n x m items (n*m >= REDUCE_MIN_CELLS), or None when Python must decide.

    Identical items collapse into groups (first copies in order), the distinct matrix is computed, and
    ``assign_groups`` runs as written: the side with fewer items as rows (the matrix transposed when the
    prediction has more), each row group's own best cells when no column group is wanted more often than it
    exists, else scipy's solver on the copies that can matter (each group's top-N columns, at most N copies
    of each: N the rows), the rows in np.lexsort's order. The total is the fsum of the chosen cells, each
    copy once. ``cells_left`` and ``work_left`` are what the response's budget has left: a set that could
    charge more (its cells counted as a list matrix's, the solver's work as charged) returns None, and the
    Python pipeline charges it (and raises its parse failure where it must).
    """
    cdef Py_ssize_t w = WIDTH[kernel]
    cdef Py_ssize_t* p_first = <Py_ssize_t*>malloc(n * sizeof(Py_ssize_t))
    cdef Py_ssize_t* p_count = <Py_ssize_t*>malloc(n * sizeof(Py_ssize_t))
    cdef Py_ssize_t* g_first = <Py_ssize_t*>malloc(m * sizeof(Py_ssize_t))
    cdef Py_ssize_t* g_count = <Py_ssize_t*>malloc(m * sizeof(Py_ssize_t))
    cdef double* matrix = NULL
    cdef double* expanded = NULL
    cdef Py_ssize_t* used = NULL
    cdef Py_ssize_t* keep = NULL
    cdef Py_ssize_t* ranks = NULL
    cdef Py_ssize_t kp, kg, kr, kc, r, c, i, j, want, t, copy, total_rows, kept, small, large, best_c
    cdef Py_ssize_t* rc
    cdef Py_ssize_t* cc
    cdef double best, v
    cdef bint tall = n > m, conflict = False
    if p_first == NULL or p_count == NULL or g_first == NULL or g_count == NULL:
        free(p_first); free(p_count); free(g_first); free(g_count)
        raise MemoryError()
    try:
        kp = _group(preds, n, w, p_first, p_count)
        kg = _group(gts, m, w, g_first, g_count)
        if SET_COST + LIST_CELL_COST * kp * kg > cells_left:
            return None  # charge_set (and, for a list matrix, charge_list) could exceed the budget
        # The rows: the side assigned in full (assign_groups transposes when the prediction has more items).
        kr, kc = (kg, kp) if tall else (kp, kg)
        rc, cc = (g_count, p_count) if tall else (p_count, g_count)
        matrix = <double*>malloc(kr * kc * sizeof(double))
        used = <Py_ssize_t*>malloc(kc * sizeof(Py_ssize_t))
        keep = <Py_ssize_t*>malloc(kc * sizeof(Py_ssize_t))
        ranks = <Py_ssize_t*>malloc(kc * sizeof(Py_ssize_t))
        if matrix == NULL or used == NULL or keep == NULL or ranks == NULL:
            raise MemoryError()
        for i in range(kp):  # prim.matrix(distinct predictions, distinct targets), each cell the kernel's
            for j in range(kg):
                v = _similarity(kernel, preds + w * p_first[i], gts + w * g_first[j], half_life)
                if tall:
                    matrix[j * kc + i] = v
                else:
                    matrix[i * kc + j] = v
        # _own_best: a single row takes its first best column, a group its top cells (best first, equal cells in
        # column order, each column group offering its copies); zero cells earn nothing and claim no column.
        values = []
        for c in range(kc):
            used[c] = 0
        for r in range(kr):
            if rc[r] == 1:
                best, best_c = matrix[r * kc], 0
                for c in range(1, kc):
                    if matrix[r * kc + c] > best:
                        best, best_c = matrix[r * kc + c], c
                if best > 0.0:
                    used[best_c] += 1
                    values.append(best)
                continue
            _rank(matrix + r * kc, kc, ranks)
            want = rc[r]
            for i in range(kc):
                if want == 0:
                    break
                c = ranks[i]
                t = want if want < cc[c] else cc[c]
                want -= t
                v = matrix[r * kc + c]
                if v > 0.0:
                    used[c] += t
                    values.extend([v] * t)
        for c in range(kc):
            if used[c] > cc[c]:
                conflict = True
                break
        if not conflict:  # every group earns its upper bound; the rows left over take zero cells
            return _fsum(values)
        # _solve_expanded: at most N copies of a column group (N rows in all), only the groups' top-N columns
        # when those cannot cover every column.
        total_rows = 0
        for r in range(kr):
            total_rows += rc[r]
        kept = 0
        for c in range(kc):
            keep[c] = cc[c] if cc[c] < total_rows else total_rows
            kept += keep[c]
        if kr * total_rows < kept:
            for c in range(kc):
                used[c] = 0  # the most copies of column c some row's top-N slots take
            for r in range(kr):
                _rank(matrix + r * kc, kc, ranks)
                want = total_rows
                for i in range(kc):
                    if want == 0:
                        break
                    c = ranks[i]
                    t = want if want < keep[c] else keep[c]
                    want -= t
                    if t > used[c]:
                        used[c] = t
            kept = 0
            for c in range(kc):
                keep[c] = used[c]
                kept += keep[c]
        small, large = (total_rows, kept) if total_rows <= kept else (kept, total_rows)
        if small >= 2 and small * small * large > work_left:
            return None  # charge_solver would exceed the budget
        expanded = <double*>malloc(total_rows * kept * sizeof(double))
        if expanded == NULL:
            raise MemoryError()
        i = 0
        for r in range(kr):  # arr[np.ix_(row_group, col_group)]: rows and kept columns repeated, in order
            for t in range(rc[r]):
                j = 0
                for c in range(kc):
                    v = matrix[r * kc + c]
                    for copy in range(keep[c]):
                        expanded[i * kept + j] = v
                        j += 1
                i += 1
        return _solve_rows(expanded, total_rows, kept)
    finally:
        free(p_first); free(p_count); free(g_first); free(g_count)
        free(matrix); free(expanded); free(used); free(keep); free(ranks)


cdef object _set_budget(Py_ssize_t m, Py_ssize_t* cells, Py_ssize_t* work):
    """``AssignmentBudget.for_target((m,))``: a set's own budget (family._assignment)."""
    cdef Py_ssize_t p = m + m // MARGIN_DIVISOR + 1
    cdef Py_ssize_t c = SET_COST + LIST_CELL_COST * p * m, k = m * m * p
    c = c if c < MAX_TARGET_ASSIGNMENT_CELLS else MAX_TARGET_ASSIGNMENT_CELLS
    k = k if k < MAX_TARGET_ASSIGNMENT_WORK else MAX_TARGET_ASSIGNMENT_WORK
    cells[0] = c if c > MAX_ASSIGNMENT_CELLS else MAX_ASSIGNMENT_CELLS
    work[0] = k if k > MAX_ASSIGNMENT_WORK else MAX_ASSIGNMENT_WORK
    return None


cdef int _ported = -1


#: The scipy releases whose solver :func:`_assign` restates: their rectangular_lsap.cpp (and the
#: entry's conversion and ``maximize`` handling) are the same file, compared release by release.
SCIPY_RESTATED = ((1, 14), (1, 18))


def scipy_restated(str version):
    """Whether scipy ``version``'s ``linear_sum_assignment`` is the solver :func:`_assign` restates."""
    parts = version.split(".")[:2]
    try:
        release = (int(parts[0]), int(parts[1]))
    except (ValueError, IndexError):
        return False
    return SCIPY_RESTATED[0] <= release <= SCIPY_RESTATED[1]


cdef bint _scipy_ported():
    """Whether the installed scipy's solver is the one :func:`_assign` restates (else scipy's own is called)."""
    global _ported
    if _ported < 0:
        import scipy

        _ported = 1 if scipy_restated(scipy.__version__) else 0
    return _ported == 1


cdef object _parse_set(int kernel, object value, double** out, Py_ssize_t* count):
    """The family's set parse of a plain list of items: True and the items in ``out[0]``, else False."""
    if type(value) is not list:
        return False  # a string, a wrapper mapping, anything else: the Python parse
    cdef list items = <list>value
    cdef Py_ssize_t n = len(items), i, w = WIDTH[kernel]
    if _flat(kernel, items):  # one item given alone
        out[0] = <double*>malloc(w * sizeof(double))
        if out[0] == NULL:
            raise MemoryError()
        count[0] = 1
        return _item(kernel, value, out[0]) == 1
    if n > MAX_COLLECTION_ITEMS:
        return False
    out[0] = <double*>malloc((w * n + 1) * sizeof(double))
    if out[0] == NULL:
        raise MemoryError()
    count[0] = n
    for i in range(n):
        if not _item(kernel, items[i], out[0] + w * i):
            return False
    return True


cdef object _map_key(object raw_key, dict index):
    """parse_map's key: stripped, non-empty, not seen before; None otherwise (the Python parse decides)."""
    if type(raw_key) is not str:
        return None
    key = raw_key.strip()
    if not key or key in index:
        return None
    return key


cdef object _parse_map(int kernel, object value, double** out, dict index):
    """The family's map parse of a plain JSON object: True, the items in ``out[0]`` and ``index`` (key -> item
    number), else False (a string, a key empty or repeated after stripping, an item that does not parse)."""
    if type(value) is not dict:
        return False
    cdef dict raw_map = <dict>value
    cdef Py_ssize_t n = len(raw_map), i = 0, w = WIDTH[kernel]
    if n > MAX_COLLECTION_ITEMS:
        return False
    out[0] = <double*>malloc((w * n + 1) * sizeof(double))
    if out[0] == NULL:
        raise MemoryError()
    for raw_key, raw in raw_map.items():
        key = _map_key(raw_key, index)
        if key is None:
            return False
        if not _item(kernel, raw, out[0] + w * i):
            return False
        index[key] = i
        i += 1
    return True


cdef object _parse_set_map(int kernel, object value, double** out, dict index, list starts, list counts):
    """The family's set-map parse of a plain JSON object of plain lists: True, every item in ``out[0]``,
    ``index`` (key -> key number) and each key's first item and count; else False (the Python parse)."""
    if type(value) is not dict:
        return False
    cdef dict raw_map = <dict>value
    cdef Py_ssize_t w = WIDTH[kernel], total = 0, n, i = 0, k
    cdef list items
    if len(raw_map) > MAX_COLLECTION_ITEMS:
        return False
    for raw in raw_map.values():
        if type(raw) is not list:
            return False
        total += 1 if _flat(kernel, <list>raw) else len(<list>raw)
    if total > MAX_ANNOTATION_ITEMS:
        return False
    out[0] = <double*>malloc((w * total + 1) * sizeof(double))
    if out[0] == NULL:
        raise MemoryError()
    for raw_key, raw in raw_map.items():
        key = _map_key(raw_key, index)
        if key is None:
            return False
        items = <list>raw
        if _flat(kernel, items):  # one item given alone
            if not _item(kernel, items, out[0] + w * i):
                return False
            n = 1
        else:
            n = len(items)
            if n > MAX_COLLECTION_ITEMS:
                return False
            for k in range(n):
                if not _item(kernel, items[k], out[0] + w * (i + k)):
                    return False
        index[key] = len(starts)
        starts.append(i)
        counts.append(n)
        i += n
    return True


cdef inline tuple _item_tuple(double* item, Py_ssize_t w):
    """One parsed item as the family's parse returns it: a tuple of ``w`` floats."""
    if w == 2:
        return (item[0], item[1])
    return (item[0], item[1], item[2], item[3])


def parse_value(int kernel, int shape, object value):
    """The family's parse of a plain JSON ``value`` of ``shape`` (the codes above) as ``kernel`` restates it, or None.

    What ``make_parser`` over the primitive that declares the kernel (``Primitive.native``) returns for the
    same value: a tuple of floats for one item (boxes with their corners reordered), a list of them for a
    set or sequence (one flat item given alone is a one-item list, as ``is_flat`` reads it), a dict of
    them by stripped key for a map, a dict of lists for a set-map. None for anything else (a string, a
    tuple, a wrapper mapping, a key that is not text or is empty or repeated once stripped, an item the
    family refuses, too many items): the family's own parser then reads it, and says why it refuses.
    """
    cdef double* out = NULL
    cdef Py_ssize_t total = 0
    try:
        return _parse_into(kernel, shape, value, &out, &total, [])
    finally:
        free(out)


cdef object _parse_into(int kernel, int shape, object value, double** out, Py_ssize_t* total, list counts):
    """:func:`parse_value`'s work: the parsed value (None: not a plain one), with every item's numbers left in
    ``out[0]`` in the parsed value's order (the caller frees it), their number in ``total`` and, for a
    set-map, each key's number of items appended to ``counts``."""
    cdef Py_ssize_t count = 0, w = WIDTH[kernel], i
    cdef dict index
    if shape == SCALAR:
        out[0] = <double*>malloc(4 * sizeof(double))
        if out[0] == NULL:
            raise MemoryError()
        if not _item(kernel, value, out[0]):
            return None
        total[0] = 1
        return _item_tuple(out[0], w)
    if shape == SET or shape == SEQUENCE:
        if not _parse_set(kernel, value, out, &count):
            return None
        total[0] = count
        return [_item_tuple(out[0] + w * i, w) for i in range(count)]
    index = {}
    if shape == MAP:
        if not _parse_map(kernel, value, out, index):
            return None
        total[0] = len(index)
        return {key: _item_tuple(out[0] + w * <Py_ssize_t>n, w) for key, n in index.items()}
    if shape == SET_MAP:
        starts = []
        if not _parse_set_map(kernel, value, out, index, starts, counts):
            return None
        for n in counts:
            count += <Py_ssize_t>n
        total[0] = count
        return {
            key: [_item_tuple(out[0] + w * (<Py_ssize_t>starts[k] + i), w) for i in range(<Py_ssize_t>counts[k])]
            for key, k in index.items()
        }
    return None


cdef int _target_items(object target, double* out, Py_ssize_t n, Py_ssize_t w) except -1:
    """A parsed target set (tuples of ``w`` floats) into ``out``; 0 when it is not that."""
    cdef Py_ssize_t i, k
    for i in range(n):
        item = target[i]
        if type(item) is not tuple or len(item) != w:
            return 0
        for k in range(w):
            v = item[k]
            if type(v) is not float:
                return 0
            out[w * i + k] = <double>v
    return 1


cdef object _fenced(str stripped):
    """The final block of a right-stripped response ending with a fence (reading's ``final_block``), or None."""
    cdef Py_ssize_t close = len(stripped) - 3
    cdef Py_ssize_t opening = stripped.rfind("```", 0, close)
    if opening < 0:
        return None
    return _drop_json_tag(stripped[opening + 3 : close]).strip() or None


cdef str _drop_json_tag(str content):
    # A ``json`` info string (any case) right after the opening fence is not content (reading's _drop_json_tag).
    if content[:4].lower() == "json" and (len(content) == 4 or not (content[4].isalnum() or content[4] == "_")):
        return content[4:]
    return content


# --- answer_exact_match_v0 on JSON's own values (scoring._answers' _same and canonical), in C -----------

cdef int MAX_ANSWER_DEPTH = _limits.MAX_ANSWER_DEPTH
cdef str _LIST = "__list__"  # scoring._answers' tags of canonical containers
cdef str _DICT = "__dict__"
cdef str _BOOL = "__bool__"


cdef int _same(object value, object prepared, int depth) except -2:
    """``_answers._same(value, prepared, depth)``: 1 or 0, or -1 when the pipeline's own function must decide.

    For the exact types a JSON decoder gives (int, str, None, bool, float, list, dict with string keys),
    each scalar's canonical form compared with ``==`` as ``_same`` compares it; anything else, a depth near
    the limit (the pipeline's too-deep rule) or keys that collide after normalising returns -1.
    """
    if depth >= MAX_ANSWER_DEPTH:
        return -1
    cdef type kind = type(value)
    cdef Py_ssize_t i, size
    cdef double x
    if kind is int or value is None:
        return 1 if value == prepared else 0
    if kind is str:
        return 1 if (<str>value).strip().casefold() == prepared else 0
    if kind is bool:
        return 1 if (_BOOL, value) == prepared else 0
    if kind is float:
        x = <double>value
        if not isfinite(x):
            return 0  # canonical's no-match value equals nothing
        return 1 if (int(value) if x == floor(x) else value) == prepared else 0  # integral floats equal ints
    if kind is list:
        if not (type(prepared) is tuple and len(<tuple>prepared) == 2 and (<tuple>prepared)[0] == _LIST):
            return 0
        items = (<tuple>prepared)[1]
        if type(items) is not tuple:
            return -1
        size = len(<list>value)
        if len(items) != size:
            return 0
        for i in range(size):
            same = _same((<list>value)[i], items[i], depth + 1)
            if same != 1:
                return same
        return 1
    if kind is dict:
        if not (type(prepared) is tuple and len(<tuple>prepared) == 2 and (<tuple>prepared)[0] == _DICT):
            return 0
        pairs = (<tuple>prepared)[1]
        if type(pairs) is not tuple:
            return -1
        latest = {}
        for k, v in (<dict>value).items():
            if type(k) is not str:
                return -1
            latest[(<str>k).strip().casefold()] = v
        if len(latest) != len(<tuple>pairs):
            return 0
        if len(latest) != len(<dict>value):
            return -1  # keys that collide after normalising: the pipeline also checks the values overwritten
        for pair in <tuple>pairs:
            if type(pair) is not tuple or len(<tuple>pair) != 2:
                return -1
            key, item = pair
            if key not in latest:
                return 0
            same = _same(latest[key], item, depth + 1)
            if same != 1:
                return same
        return 1
    return -1


def same(object value, object prepared):
    """:func:`_same` at depth 0 (tests compare it with the pipeline's ``matches_answer_target``)."""
    return _same(value, prepared, 0)


# --- the lenient preparation of raw ground truth (scoring._pipeline's prepare_target), in C ----------

cdef object _DEFER = object()  # _canonical: a value the pipeline's own canonical form must read


cdef object _canonical(object value, int depth):
    """``_answers.canonical(value, depth)`` of JSON's own values, or :data:`_DEFER` (odd values, non-finite
    numbers, keys that are not strings, a depth near the limit)."""
    if depth >= MAX_ANSWER_DEPTH:
        return _DEFER
    cdef type kind = type(value)
    cdef double x
    if kind is int or value is None:
        return value
    if kind is str:
        return (<str>value).strip().casefold()
    if kind is bool:
        return (_BOOL, value)
    if kind is float:
        x = <double>value
        if not isfinite(x):
            return _DEFER
        return int(value) if x == floor(x) else value
    if kind is list:
        items = []
        for v in <list>value:
            c = _canonical(v, depth + 1)
            if c is _DEFER:
                return _DEFER
            items.append(c)
        return (_LIST, tuple(items))
    if kind is dict:
        normalized = {}
        for k, v in (<dict>value).items():
            if type(k) is not str:
                return _DEFER
            c = _canonical(v, depth + 1)
            if c is _DEFER:
                return _DEFER
            normalized[(<str>k).strip().casefold()] = c  # later key wins
        return (_DICT, tuple(sorted(normalized.items())))
    return _DEFER


def prepare(
    object answer_gt,
    object annotation_gt,
    object reward_contract,
    object registry,
    tuple sizes,
    type target_class,
    object unsearched,
    object answer_target_of,
    str relaxed_id,
):
    """``prepare_target``'s target for ground truth the contract lets be scored, or None: the pipeline prepares it.

    The common case, restated: ``answer_gt`` a dict (its value prepared by :func:`_canonical`, else by
    ``answer_target_of``, the pipeline's ``answer_target``), no pinned relaxed policy named, ``annotation_gt``
    a dict whose stripped ``type`` an installed family owns, a contract whose annotation side names that
    type (or none) and its current reward id, and a ``value``. Anything else (a problem to report, a
    missing family, a mapping that is not a dict) is None, and the pipeline's own steps say why.
    """
    if type(answer_gt) is not dict or type(annotation_gt) is not dict or type(reward_contract) is not dict:
        return None
    target = target_class()
    if "value" in <dict>answer_gt:
        side = (<dict>reward_contract).get("answer")
        if side is not None and (type(side) is not dict or not ((<dict>side).get("id") != relaxed_id)):
            return None  # perhaps the pinned relaxed policy (relaxed_answer)
        answer_type = (<dict>answer_gt).get("type")
        if isinstance(answer_type, str) and type(answer_type) is not str:
            return None  # a str subclass: the pipeline reads it
        spec = registry.answer_types.get((<str>answer_type).strip()) if type(answer_type) is str else None
        reads_json = spec.reads_json_strings if spec is not None else True
        value = (<dict>answer_gt)["value"]
        prepared = _DEFER
        if not (reads_json and type(value) is str and (<str>value).lstrip()[:1] in _JSON_STARTS):
            prepared = _canonical(value, 0)
        if prepared is _DEFER:
            prepared = answer_target_of(value, reads_json_strings=reads_json)
        target.answer, target.answer_parse_ok = prepared, 1.0
        if not reads_json:
            target.reads_json = False
    name = (<dict>annotation_gt).get("type")
    if type(name) is not str:
        return None
    name = (<str>name).strip()
    entry = registry.annotation_types.get(name)
    if entry is None:
        return None
    side = (<dict>reward_contract).get("annotation")
    if type(side) is not dict:
        return None
    declared = (<dict>side).get("type")
    if declared is not None and (type(declared) is not str or (<str>declared).strip() != name):
        return None
    if (<dict>side).get("id") != entry.current_reward_id or "value" not in <dict>annotation_gt:
        return None
    target.type_name = name
    target.entry, target.reward = entry, registry.reward_ids[entry.current_reward_id]
    target._value = (<dict>annotation_gt)["value"]
    if sizes[0] is not None or sizes[1] is not None or sizes[2] is not None or sizes[3] is not None:
        target._sizes, target._size = sizes, unsearched
    return target


# --- recovery (reading's recover_payload under the contract's lenient reading), in C -------------------

cdef Py_ssize_t MAX_RECOVERY_CANDIDATES = _limits.MAX_RECOVERY_CANDIDATES


cdef inline bint _holds_prediction(object value):
    return type(value) is dict and ("answer" in <dict>value or "annotation" in <dict>value)


cdef inline bint _may_hold(str text):
    # reading's _may_hold_prediction: a cheap filter before a candidate is parsed.
    return "answer" in text or "annotation" in text or "\\" in text


cdef Py_ssize_t _top_level_spans(str text, Py_ssize_t** out) except -1:
    """reading's ``top_level_objects``: balanced top-level ``{...}`` in one forward scan that skips strings.

    Character by character on the string's own buffer where the Python scan takes runs in one step: the
    same spans, as ``(start, end)`` pairs in ``out[0]`` (malloc'ed, the caller frees it; two numbers a
    span, never a Python object: a brace flood stays small); returns how many. A string ends at the first
    ``"`` after an even run of backslashes (``_string_end``); an unterminated one hides everything after
    it; closers at depth 0 are stray and ignored.
    """
    cdef Py_ssize_t n = len(text), i = 0, depth = 0, start = 0, run, count = 0, room = 16
    cdef int kind = PyUnicode_KIND(text)
    cdef void* data = PyUnicode_DATA(text)
    cdef Py_UCS4 c
    cdef Py_ssize_t* spans = <Py_ssize_t*>malloc(2 * room * sizeof(Py_ssize_t))
    cdef Py_ssize_t* grown
    if spans == NULL:
        raise MemoryError()
    out[0] = spans
    while i < n:
        c = PyUnicode_READ(kind, data, i)
        i += 1
        if c == 34:  # '"': to the quote that closes it
            run = 0  # backslashes right before the character read
            while True:
                if i >= n:
                    return count
                c = PyUnicode_READ(kind, data, i)
                i += 1
                if c == 34 and run % 2 == 0:
                    break
                run = run + 1 if c == 92 else 0
        elif c == 123:  # '{'
            if depth == 0:
                start = i - 1
            depth += 1
        elif c == 125 and depth:  # '}'
            depth -= 1
            if depth == 0:
                if count == room:
                    room *= 2
                    grown = <Py_ssize_t*>realloc(spans, 2 * room * sizeof(Py_ssize_t))
                    if grown == NULL:
                        raise MemoryError()
                    spans = out[0] = grown
                spans[2 * count] = start
                spans[2 * count + 1] = i
                count += 1
    return count


def top_level_objects(str text):
    """:func:`_top_level_spans` as reading's ``top_level_objects`` gives them (tests compare the two)."""
    cdef Py_ssize_t* spans = NULL
    cdef Py_ssize_t k, count
    try:
        count = _top_level_spans(text, &spans)
        return [(spans[2 * k], spans[2 * k + 1]) for k in range(count)]
    finally:
        free(spans)


def recovered(str text):
    """:func:`_recovered` (tests compare it with reading's ``recover_payload``)."""
    return _recovered(text)


cdef list _fenced_blocks(str text):
    """reading's ``fenced_blocks``: fences paired in order, a ``json`` tag dropped, stripped."""
    cdef list marks = []
    cdef Py_ssize_t k = text.find("```")
    while k >= 0:
        marks.append(k)
        k = text.find("```", k + 3)
    cdef list blocks = []
    cdef Py_ssize_t i
    for i in range(0, len(marks) - 1, 2):
        blocks.append(_drop_json_tag(text[<Py_ssize_t>marks[i] + 3 : <Py_ssize_t>marks[i + 1]]).strip())
    return blocks


cdef list _answer_tags(str text):
    """reading's ``answer_tags`` (every tag read): each open tag with the next close tag after it."""
    cdef list opens = [], closes = [], tags = []
    cdef Py_ssize_t k = text.find("<answer>")
    while k >= 0:
        opens.append(k)
        k = text.find("<answer>", k + 8)
    k = text.find("</answer>")
    while k >= 0:
        closes.append(k)
        k = text.find("</answer>", k + 9)
    cdef Py_ssize_t i = 0, j = 0, begin, finish
    while i < len(opens):
        begin = <Py_ssize_t>opens[i] + 8
        while j < len(closes) and <Py_ssize_t>closes[j] < begin:
            j += 1
        if j == len(closes):
            break
        tags.append(text[begin : <Py_ssize_t>closes[j]])
        finish = <Py_ssize_t>closes[j] + 9
        while i < len(opens) and <Py_ssize_t>opens[i] < finish:
            i += 1
    return tags


cdef object _GO_ON = object()  # _try: the candidate is not the payload, the next one is tried
NOTHING = object()  # _recovered: recovery finds no payload at all (reading's recover_payload returns None)
cdef object _NOTHING = NOTHING


cdef object _try(str candidate, Py_ssize_t* tried):
    """One recovery candidate: the payload, :data:`_GO_ON`, :data:`NOTHING`, or None when the pipeline must look."""
    if not _may_hold(candidate):
        return _GO_ON
    tried[0] += 1
    if tried[0] > MAX_RECOVERY_CANDIDATES:
        return _NOTHING  # recover_payload gives up: no payload
    value, ok = _json(candidate)
    if not ok:
        return None  # perhaps a Python literal: the pipeline's bounded literal reader
    return value if _holds_prediction(value) else _GO_ON


cdef object _recovered(str text):
    """The payload ``recover_payload`` finds in ``text`` (lenient), :data:`NOTHING`, or None when the pipeline must look.

    The candidates in its order: the whole response, the top-level objects last to first, the fenced
    blocks last to first, the ``<answer>`` tags last to first; the first JSON mapping holding ``answer`` or
    ``annotation`` is the payload. :data:`NOTHING` when no candidate holds one (every candidate tried being
    JSON) or the candidate limit is passed; None (the pipeline's extraction then runs) when a candidate
    tried is not JSON, or the whole response is a candidate.
    """
    if not _may_hold(text):
        return _NOTHING
    stripped = text.strip()
    if stripped.startswith("{") and stripped.endswith("}"):
        return None  # the whole response is a candidate: the callers never get here with one
    cdef Py_ssize_t tried = 0, k, count = 0
    cdef Py_ssize_t* spans = NULL
    try:
        if "}" in text:  # a truncated response closes nothing
            count = _top_level_spans(text, &spans)
        for k in range(count - 1, -1, -1):
            found = _try(text[spans[2 * k] : spans[2 * k + 1]], &tried)
            if found is not _GO_ON:
                return found
    finally:
        free(spans)
    for candidates in (_fenced_blocks(text), _answer_tags(text)):
        for k in range(len(<list>candidates) - 1, -1, -1):
            found = _try(<str>(<list>candidates)[k], &tried)
            if found is not _GO_ON:
                return found
    return _NOTHING


#: How many objects :func:`exact` looks at before it answers False (a shared or cyclic structure ends there).
cdef Py_ssize_t EXACT_BUDGET = 100_000


cdef inline bint _scalar(object item) noexcept:
    cdef type kind = type(item)
    return kind is float or kind is int or kind is str or kind is bool or item is None


cdef int _exact(object item, int depth, Py_ssize_t* budget) except -1:
    # Scalars inside a container are tested in place (no call per number of a box list).
    cdef type kind = type(item)
    budget[0] -= 1
    if budget[0] < 0 or depth > 256:
        return 0
    if _scalar(item):
        return 1
    if kind is list:
        budget[0] -= len(<list>item)
        for x in <list>item:
            if not _scalar(x) and not _exact(x, depth + 1, budget):
                return 0
        return 1
    if kind is tuple:
        budget[0] -= len(<tuple>item)
        for x in <tuple>item:
            if not _scalar(x) and not _exact(x, depth + 1, budget):
                return 0
        return 1
    if kind is dict:
        budget[0] -= 2 * len(<dict>item)
        for k, v in (<dict>item).items():
            if not (_scalar(k) or _exact(k, depth + 1, budget)) or not (_scalar(v) or _exact(v, depth + 1, budget)):
                return 0
        return 1
    return 0


def exact(object value):
    """Whether every object reachable from ``value`` through exact lists, tuples and dicts is exactly a str, int,
    float, bool, None, list, tuple or dict (then ``trace_tasks.core.reward_scoring.plain`` has nothing to convert).

    False for anything else, and past :data:`EXACT_BUDGET` objects or 256 levels: the caller then takes the
    general look (which handles shared and cyclic structures).
    """
    cdef Py_ssize_t budget = EXACT_BUDGET
    return _exact(value, 0, &budget) == 1


def score(
    str text,
    frozenset keys,
    object extract_of,
    bint answer_tag,
    object prepared,
    bint reads_json,
    double answer_parse_ok,
    object type_key,
    int shape,
    int kernel,
    object target,
    bint raw_target,
    object half_life_of,
    object target_ref,
    object half_life_px,
    str mean_key,
    str extra_key,
    dict template,
    double format_weight,
    int mode,
    bint gated,
    double answer_weight,
    double annotation_weight,
    double scale_x=1.0,
    double scale_y=1.0,
    bint y_first=False,
):
    """The result dict of ``text`` (see the module docstring), or what the Python pipeline goes on from.

    That is None, or ``extract_of``'s ``(extraction, literal budget left)`` when it was called.

    ``keys`` are the required keys of the mode, ``prepared`` the prepared answer target (``Target.answer``),
    ``type_key`` the ``annotation_type_<name>`` indicator to set (None when no family owns the type);
    ``shape`` one of :data:`NO_REWARD`, :data:`UNKNOWN`, :data:`SCALAR`, :data:`SET` and ``kernel`` one
    of :data:`IOU`, :data:`SOFT_POINT`, :data:`SOFT_SEGMENT`; ``target`` the parsed target (None when it
    does not parse), ``half_life`` the scoring context's; ``mean_key`` the diagnostic of the mean similarity
    and ``extra_key`` the half-life diagnostic's (``""``: none); ``template`` the options' result template.
    ``scale_x``, ``scale_y``, ``y_first``: a declared frame's ``frame_scales``; the prediction is converted to
    pixels with them as the owner converts flat x/y items (:func:`_to_pixels`), unless they leave it as it is.
    """
    cdef bint framed = scale_x != 1.0 or scale_y != 1.0 or y_first  # x * 1.0 is x, bit for bit
    if len(text) > MAX_RESPONSE_CHARS:
        return None
    # The final object: extraction's plain ending first (plain_final_object, in C), else the pipeline's own
    # extraction (``extract_of``: extract() under the response's literal budget, as run() calls it), whose
    # format flags are then the result's. No object found: the Python steps (atomic answers, native shapes).
    stripped = text.rstrip()
    cdef bint alone = mode == ANNOTATION_ALONE
    cdef Py_ssize_t start = -1
    cdef bint structure_ok = True, json_ok = True, schema_ok
    payload = atomic = None
    cdef bint ok = False, nothing = False
    if stripped.endswith("}"):
        start = stripped.rfind('{"annotation"' if alone else '{"answer"')
        if start >= 0:
            payload, ok = _json(stripped[start:])
            ok = ok and type(payload) is dict
    elif stripped.endswith("```"):  # a fenced final block (final_block), read as check_format reads it
        block = _fenced(stripped)
        if block is not None:
            payload, ok = _json(block)
            # A mapping holding neither key is recovered past (recover_payload): the pipeline's extraction.
            ok = ok and _holds_prediction(payload)
    elif not (answer_tag and stripped.endswith("</answer>")):
        # No final block at all (check_format's flags are all 0): recovery, in C while every candidate it
        # tries is JSON (a Python literal is the pipeline's).
        payload = _recovered(text)
        nothing = payload is _NOTHING
        ok = payload is not None and not nothing
        structure_ok = json_ok = schema_ok = False
        if nothing:  # no payload: the atomic answer, and no annotation
            if mode != ANNOTATION_ALONE:
                tags = _answer_tags(text)  # the last <answer> pair's content, else the whole response
                atomic = (<str>tags[len(tags) - 1]).strip() if tags else text.strip()
            payload = None
            bare = text.strip()
            if bare.startswith("[") and bare.endswith("]"):
                return None  # perhaps a model-native annotation (the pipeline's failure path)
    # What a decline after the pipeline's own extraction returns: that extraction and the literal budget it
    # left, so the Python steps go on from it instead of reading the response again.
    declined = None
    if ok:
        if structure_ok:
            schema_ok = len(<dict>payload) == len(keys) and all([k in <dict>payload for k in keys])
    elif not nothing:
        declined = extract_of(text, keys, answer_tag)
        ext = declined[0]
        payload = ext.payload
        if type(payload) is not dict:
            return declined
        fmt = ext.format
        structure_ok, json_ok, schema_ok = fmt.structure_ok, fmt.json_ok, fmt.schema_ok
    cdef dict value = <dict>payload if payload is not None else {}
    cdef bint matched = False
    cdef type kind
    if not alone:
        predicted = value.get("answer") if payload is not None else atomic
        kind = type(predicted)
        if kind is int and type(prepared) is int:
            matched = predicted == prepared
        elif kind is str and type(prepared) is str and not (reads_json and predicted.lstrip()[:1] in _JSON_STARTS):
            matched = predicted.strip().casefold() == prepared
        elif predicted is None:
            return declined  # no answer in the object: the atomic answer, the Python pipeline's
        else:  # the general comparison: in C for JSON's own values, else the very function the pipeline calls
            same = -1 if kind is str or prepared is _NEVER_MATCHES else _same(predicted, prepared, 0)
            matched = same == 1 if same >= 0 else _matches(predicted, prepared, reads_json_strings=reads_json)

    cdef double ann_reward = 0.0, ann_parse_ok = 0.0, total = 0.0, s, half_life = 0.0
    cdef Py_ssize_t n = 0, m = 0, count = 0, union, w, i, cells_left, work_left
    cdef double item[4]
    cdef double* preds = NULL
    cdef double* gts = NULL
    cdef dict index
    cdef list target_keys = None
    diagnostics = None
    prediction = value.get("annotation")
    if shape == UNKNOWN and prediction is not None:
        return declined  # a scorer only Python knows
    if shape >= 0 and prediction is not None and (raw_target or target is not None):
        if kernel < 0 or kernel > SOFT_SEGMENT:
            return declined  # a kernel of a later version: Python scores it
        w = WIDTH[kernel]
        try:
            # The target's m items into gts (a map's keys in target_keys, in the target's order).
            if raw_target:  # a lenient target, read here from plain JSON as the owner's parse reads it
                if shape == SCALAR:
                    gts = <double*>malloc(4 * sizeof(double))
                    if gts == NULL:
                        raise MemoryError()
                    if not _item(kernel, target, gts):
                        return declined
                    m = 1
                elif shape == MAP:
                    index = {}
                    if not _parse_map(kernel, target, &gts, index):
                        return declined
                    target_keys = list(index)
                    m = len(target_keys)
                elif shape == SET_MAP:
                    index = {}
                    target_starts, target_counts = [], []
                    if not _parse_set_map(kernel, target, &gts, index, target_starts, target_counts):
                        return declined
                    target_keys = list(index)
                    m = len(target_keys)
                elif not _parse_set(kernel, target, &gts, &m):
                    return declined
            elif shape == SET_MAP:  # a prepared set-map: key -> list of tuples of floats
                if type(target) is not dict:
                    return declined
                target_keys = list(<dict>target)
                target_starts, target_counts, flat_items = [], [], []
                for values in (<dict>target).values():
                    if type(values) is not list:
                        return declined
                    target_starts.append(len(flat_items))
                    target_counts.append(len(<list>values))
                    flat_items.extend(<list>values)
                m = len(target_keys)
                gts = <double*>malloc((w * len(flat_items) + 1) * sizeof(double))
                if gts == NULL:
                    raise MemoryError()
                if not _target_items(flat_items, gts, len(flat_items), w):
                    return declined
            else:  # a prepared target: the owner's parse, tuples of floats
                if shape == SCALAR:
                    target = (target,)
                elif shape == MAP:
                    if type(target) is not dict:
                        return declined
                    target_keys = list(<dict>target)
                    target = list((<dict>target).values())
                elif type(target) is not list:
                    return declined
                m = len(target)
                gts = <double*>malloc((w * m + 1) * sizeof(double))
                if gts == NULL:
                    raise MemoryError()
                if not _target_items(target, gts, m, w):
                    return declined
            if kernel != IOU:  # a distance kernel: the scoring context's half-life, found only now
                half_life = half_life_of(target_ref, half_life_px)
            if shape == SCALAR:
                if not _item(kernel, prediction, item):
                    return declined
                if framed:
                    _to_pixels(item, 1, w, scale_x, scale_y, y_first)
                s = _similarity(kernel, item, gts, half_life)
                ann_reward = s
                diagnostics = {
                    "annotation_pred_size": 1.0,
                    "annotation_gt_size": 1.0,
                    "annotation_assigned_count": 1.0,
                    mean_key: s,
                }
            elif shape == SET:
                if not _parse_set(kernel, prediction, &preds, &n):
                    return declined
                if framed:
                    _to_pixels(preds, n, w, scale_x, scale_y, y_first)
                if n == 0 or m == 0:
                    total, count = 0.0, 0
                    ann_reward = 1.0 if n == 0 and m == 0 else 0.0 / (n if n > m else m)
                elif n == 1 and m == 1:
                    total, count = _similarity(kernel, preds, gts, half_life), 1
                    ann_reward = total / 1
                else:
                    if n * m > MAX_MATRIX_CELLS:
                        return declined  # match_set's parse failure: Python's
                    if n * m >= REDUCE_MIN_CELLS:  # the grouped match, with the set's own budget
                        _set_budget(m, &cells_left, &work_left)
                        summed = _grouped_total(kernel, preds, n, gts, m, half_life, cells_left, work_left)
                    else:
                        summed = _set_total(kernel, preds, n, gts, m, half_life)
                    if summed is None:
                        return declined  # no assignment (never for finite similarities): Python's solver decides
                    total, count = summed, (n if n < m else m)
                    ann_reward = total / (n if n > m else m)
                diagnostics = {
                    "annotation_pred_size": <double>n,
                    "annotation_gt_size": <double>m,
                    "annotation_assigned_count": <double>count,
                    mean_key: total / count if count else 0.0,
                }
            elif shape == SEQUENCE:  # match_sequence: index-aligned, summed in order
                if not _parse_set(kernel, prediction, &preds, &n):
                    return declined
                if framed:
                    _to_pixels(preds, n, w, scale_x, scale_y, y_first)
                count = n if n < m else m
                for i in range(count):
                    total += _similarity(kernel, preds + w * i, gts + w * i, half_life)
                ann_reward = 1.0 if n == 0 and m == 0 else total / (n if n > m else (m if m > 1 else 1))
                diagnostics = {
                    "annotation_pred_len": <double>n,
                    "annotation_gt_len": <double>m,
                    "annotation_assigned_count": <double>count,
                    mean_key: total / count if count else 0.0,
                }
            elif shape == MAP:  # the keyed shape: one item per key, the shared keys in the target's order
                index = {}
                if not _parse_map(kernel, prediction, &preds, index):
                    return declined
                n = len(index)
                if framed:
                    _to_pixels(preds, n, w, scale_x, scale_y, y_first)
                for i in range(m):
                    position = index.get(target_keys[i])
                    if position is None:
                        continue
                    s = _similarity(kernel, preds + w * <Py_ssize_t>position, gts + w * i, half_life)
                    total += s
                    count += 1
                union = n + m - count
                ann_reward = 1.0 if union == 0 else total / union
                diagnostics = {
                    "annotation_pred_size": <double>n,
                    "annotation_gt_size": <double>m,
                    "annotation_assigned_count": <double>count,
                    "annotation_shared_key_count": <double>count,
                    "annotation_missing_key_count": <double>(m - count),
                    "annotation_extra_key_count": <double>(n - count),
                    mean_key: total / count if count else 0.0,
                }
            elif shape == SET_MAP:  # keyed sets: each shared key matched by assignment, one budget for all
                index = {}
                pred_starts, pred_counts = [], []
                if not _parse_set_map(kernel, prediction, &preds, index, pred_starts, pred_counts):
                    return declined
                n = len(index)
                if framed:
                    _to_pixels(preds, sum(pred_counts), w, scale_x, scale_y, y_first)
                shared = []
                cells = work = 0
                for i in range(m):
                    position = index.get(target_keys[i])
                    if position is None:
                        continue
                    shared.append((i, position))
                    a, b = pred_counts[position], target_counts[i]
                    if a >= 1 and b >= 1 and a * b > 1:
                        cells += SET_COST + LIST_CELL_COST * a * b
                        small, large = (a, b) if a <= b else (b, a)
                        if small >= 2:
                            work += small * small * large
                if cells > MAX_ASSIGNMENT_CELLS or work > MAX_ASSIGNMENT_WORK:
                    return declined  # the shared budget's concern: Python charges it
                mean_sum, mean_keys = 0.0, 0
                for i, position in shared:
                    a, b = pred_counts[position], target_counts[i]
                    p_items = preds + w * <Py_ssize_t>pred_starts[position]
                    g_items = gts + w * <Py_ssize_t>target_starts[i]
                    if a == 0 or b == 0:
                        total += 1.0 if a == 0 and b == 0 else 0.0 / (a if a > b else b)
                        continue
                    if a == 1 and b == 1:
                        key_total, key_count, denominator = _similarity(kernel, p_items, g_items, half_life), 1, 1
                    else:
                        if a * b >= REDUCE_MIN_CELLS:  # the grouped match; the shared budget is checked above
                            summed = _grouped_total(kernel, p_items, a, g_items, b, half_life, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX)
                        else:
                            summed = _set_total(kernel, p_items, a, g_items, b, half_life)
                        if summed is None:
                            return declined
                        key_total, key_count, denominator = summed, (a if a < b else b), (a if a > b else b)
                    total += key_total / denominator
                    count += key_count
                    mean_sum += key_total / key_count
                    mean_keys += 1
                union = n + m - len(shared)
                ann_reward = 1.0 if union == 0 else total / union
                diagnostics = {
                    "annotation_pred_size": <double>n,
                    "annotation_gt_size": <double>m,
                    "annotation_assigned_count": <double>count,
                    "annotation_shared_key_count": <double>len(shared),
                    "annotation_missing_key_count": <double>(m - len(shared)),
                    "annotation_extra_key_count": <double>(n - len(shared)),
                    mean_key: mean_sum / mean_keys if mean_keys else 0.0,
                }
            else:
                return declined
        finally:
            free(preds)
            free(gts)
        ann_parse_ok = 1.0
        if extra_key:
            diagnostics[extra_key] = half_life

    # compose_result (trace_tasks.scoring._results), expression for expression
    cdef double answer_reward = 1.0 if matched else 0.0
    cdef double task
    if mode == ANSWER_ONLY:
        task = answer_reward
    elif alone:  # nothing to gate on: the formula and the weights do not apply
        task = ann_reward
    elif gated:
        task = answer_reward * (answer_weight + annotation_weight * ann_reward)
    else:
        task = answer_weight * answer_reward + annotation_weight * ann_reward
    cdef double format_score = 1.0 if schema_ok else 0.0
    cdef dict result = template.copy()
    result["overall"] = (1.0 - format_weight) * task + format_weight * format_score
    result["format"] = format_score
    result["accuracy"] = answer_reward
    result["answer_reward"] = answer_reward
    result["annotation_reward"] = ann_reward
    result["task_reward_raw"] = task
    result["task_reward_effective"] = task
    result["task_reward_gated"] = task
    result["format_structure_ok"] = 1.0 if structure_ok else 0.0
    result["format_json_ok"] = 1.0 if json_ok else 0.0
    result["format_schema_ok"] = format_score
    result["answer_parse_ok"] = answer_parse_ok
    result["annotation_parse_ok"] = ann_parse_ok
    result["json_found"] = 1.0 if payload is not None else 0.0
    result["zero_reward"] = 1.0 if task == 0.0 else 0.0
    if type_key is not None:
        result[type_key] = 1.0
    if diagnostics:
        result.update(diagnostics)
    return result


# --- the common label, validated and looked at in C (the reward server's lane: trace_tasks.data._quick) ---

#: Answer rules (a plan's ``rule``): what a built-in answer type's target is when the lane takes it, each a
#: value validation certainly accepts (tests/data/test_quick_compile.py compares the two).
cpdef enum:
    WHOLE = 0  # integer: an exact int
    REAL = 1  # number: an exact int, or a finite float
    TEXT = 2  # string (read as written): text with more than whitespace
    LITERAL_TEXT = 3  # option_letter, pi_expression: the same, not starting as a JSON literal might
    TRUTH = 4  # boolean: an exact bool
    INDICES = 5  # index_list: a non-empty list of exact ints and strings
    GRID = 6  # matrix: a non-empty list of such lists

#: The authoring rules the lane looks at, one bit each, in the order of ``lane_setup``'s ``rules``.
cpdef enum:
    NORMALIZED = 1
    ZERO_SEGMENT = 2
    DUPLICATE = 4
    SINGLE_KEY = 8
    EMPTY_MAP = 16
    MISSING_SIZE = 32
    CONFLICTING_SIZE = 64

cdef tuple _lane_fields = ()
cdef tuple _lane_rules = ()
cdef frozenset _lane_size_keys = frozenset()
cdef object _lane_size_from = None
cdef object _lane_budget = None
cdef double _lane_small_px = 0.0
cdef type _lane_instance = None
cdef type _lane_target = None
cdef object _lane_context = None
cdef dict _lane_contexts = None
cdef object _lane_plan_of = None
#: The plans of the pairs of types met, for the registry they were made with (made by ``plan_of`` on first sight).
cdef dict _lane_plans = {}
cdef object _lane_plans_registry = None
#: Longest pair of type names (characters, both together) whose plan is remembered.
cdef Py_ssize_t MAX_PLAN_NAMES = 512
cdef object _NO_INPUTS = None


def lane_setup(
    tuple fields,
    tuple rules,
    frozenset size_keys,
    object size_from,
    object budget_problem,
    double small_image_px,
    type instance_class,
    type target_class,
    object scoring_context,
    dict contexts,
    object plan_of,
):
    """What :func:`check_label` reads of the Python side, given once: the compiled fields in order, the rule
    ids of the bits, metadata's size keys, ``size_from``, the set-map budget check, ``SMALL_IMAGE_PX``, the
    compiled instance's and the target's classes, ``scoring_context`` and the contexts it keeps (by
    ``(size, None)``), and ``plan_of(answer type, annotation type, registry)``, a pair's plan or None."""
    global _lane_fields, _lane_rules, _lane_size_keys, _lane_size_from, _lane_budget, _lane_small_px
    global _lane_instance, _lane_target, _lane_context, _lane_contexts, _lane_plan_of, _lane_plans_registry
    _lane_fields, _lane_rules, _lane_size_keys = fields, rules, size_keys
    _lane_size_from, _lane_budget, _lane_small_px = size_from, budget_problem, small_image_px
    _lane_instance, _lane_target, _lane_context, _lane_contexts = instance_class, target_class, scoring_context, contexts
    _lane_plan_of = plan_of
    _lane_plans.clear()
    _lane_plans_registry = None


def lane_ready():
    """Whether :func:`lane_setup` was called."""
    return _lane_plan_of is not None


cdef extern from "Python.h":
    int PyObject_GenericSetAttr(object o, object name, object value) except -1


cdef object _lane_compiled(
    dict fields, object spec, object entry, object reward, object answer, object parsed,
    object size_image, object size_meta, object registry,
):
    """``CompiledInstance._assemble`` of what the lane found, field for field (no relaxed policy, no model size):
    the frozen record's slots are set as its ``__init__`` sets them, without a Python call per field."""
    size = size_image if size_image is not None else size_meta
    context = _lane_contexts.get((size, None))  # scoring_context's own memo, looked up without a call
    if context is None:
        context = _lane_context(size, None)
    target = _lane_target()
    target.answer, target.answer_parse_ok, target.reads_json = answer, 1.0, spec.reads_json_strings
    target.type_name, target.entry, target.reward = entry.name, entry, reward
    target._parsed, target._size, target._context = parsed, size, context
    target.model_size, target.relaxed = None, None
    instance = _lane_instance.__new__(_lane_instance)
    PyObject_GenericSetAttr(instance, "data", fields)
    PyObject_GenericSetAttr(instance, "answer_spec", spec)
    PyObject_GenericSetAttr(instance, "annotation_entry", entry)
    PyObject_GenericSetAttr(instance, "reward_entry", reward)
    PyObject_GenericSetAttr(instance, "target", parsed)
    PyObject_GenericSetAttr(instance, "image_size", size)
    PyObject_GenericSetAttr(instance, "half_life_px", context.half_life_px)
    PyObject_GenericSetAttr(instance, "_prepared", target)
    PyObject_GenericSetAttr(instance, "_size_image", size_image)
    PyObject_GenericSetAttr(instance, "_size_meta", size_meta)
    PyObject_GenericSetAttr(instance, "_registry", registry)
    return instance


cdef bint _text_or_whole(list items):
    cdef type kind
    for v in items:
        kind = type(v)
        if kind is not int and kind is not str:
            return False
    return True


cdef object _lane_answer(int rule, object value):
    """The answer target as the scorer prepares it (``_canonical``) when ``value`` keeps ``rule``, else _DEFER."""
    cdef type kind = type(value)
    if rule == WHOLE:
        return value if kind is int else _DEFER
    if rule == REAL:
        if kind is int or (kind is float and isfinite(<double>value)):
            return _canonical(value, 0)
        return _DEFER
    if rule == TEXT or rule == LITERAL_TEXT:
        if kind is not str:
            return _DEFER
        stripped = (<str>value).strip()
        if not stripped or (rule == LITERAL_TEXT and (<str>value).lstrip()[:1] in _JSON_STARTS):
            return _DEFER  # no target, or a JSON literal validation reads first
        return stripped.casefold()
    if rule == TRUTH:
        return (_BOOL, value) if kind is bool else _DEFER
    if rule == INDICES or rule == GRID:
        if kind is not list or not value:
            return _DEFER
        if rule == INDICES:
            if not _text_or_whole(<list>value):
                return _DEFER
        else:
            for row in <list>value:
                if type(row) is not list or not _text_or_whole(<list>row):
                    return _DEFER
        return _canonical(value, 0)
    return _DEFER


cdef object _lane_side(object value):
    """``_image_size._side`` of an exact int or float (None: not a side, or another type)."""
    cdef double d
    return d if _coordinate(value, &d) and d > 0 else None


cdef object _lane_pair(object value):
    """``size_from`` of ``[width, height]``, two exact numbers in an exact list or tuple (None otherwise)."""
    cdef type kind = type(value)
    if (kind is not list and kind is not tuple) or len(value) != 2:
        return None
    w, h = _lane_side(value[0]), _lane_side(value[1])
    return None if w is None or h is None else (w, h)


cdef tuple _NESTED_KEYS = NESTED_KEYS
cdef tuple _WIDTH_KEYS = WIDTH_KEYS
cdef tuple _HEIGHT_KEYS = HEIGHT_KEYS


cdef object _first_side(dict mapping, tuple keys):
    """``_image_size._first_present``: the side under the first of ``keys`` present (None: none, or no side)."""
    for key in keys:
        if key in mapping:
            value = mapping[key]
            kind = type(value)
            if kind is int or kind is float:
                return _lane_side(value)
            if value is None or kind is str or kind is bool or kind is list or kind is dict or kind is tuple:
                return None  # never a side (_side: not a real number, or a boolean)
            return _DEFER  # a number of another type (numpy's): size_from reads it
    return None


cdef object _meta_size(object value, int depth):
    """``size_from(value)`` of the usual metadata (mappings nested at most twice, ``[w, h]`` pairs of exact
    numbers), or _DEFER for anything else size_from might read (text, other lists, numpy values)."""
    cdef type kind = type(value)
    if kind is dict:
        if depth > 2:
            return _DEFER
        for key in _NESTED_KEYS:
            if key in <dict>value:
                found = _meta_size((<dict>value)[key], depth + 1)
                if found is not None:
                    return found  # a size, or _DEFER
        w, h = _first_side(<dict>value, _WIDTH_KEYS), _first_side(<dict>value, _HEIGHT_KEYS)
        if w is _DEFER or h is _DEFER:
            return _DEFER
        return None if w is None or h is None else (w, h)
    if kind is list or kind is tuple:
        found = _lane_pair(value)
        return _DEFER if found is None else found  # not a pair of exact numbers: size_from looks inside
    if value is None or kind is int or kind is float or kind is bool:
        return None
    return _DEFER


cdef bint _same_item(double* a, double* b, Py_ssize_t w) noexcept:
    cdef Py_ssize_t k
    for k in range(w):
        if a[k] != b[k]:
            return False
    return True


cdef int _has_copies(double* items, Py_ssize_t n, Py_ssize_t w) except -1:
    """Whether two of ``n`` items are equal (tuple equality: -0.0 equals 0.0), as the lint's duplicate check finds."""
    global _rows_values, _rows_width
    cdef Py_ssize_t i, j
    cdef Py_ssize_t* order
    if n <= 16:
        for i in range(n):
            for j in range(i + 1, n):
                if _same_item(items + w * i, items + w * j, w):
                    return 1
        return 0
    order = <Py_ssize_t*>malloc(n * sizeof(Py_ssize_t))
    if order == NULL:
        raise MemoryError()
    try:
        for i in range(n):
            order[i] = i
        _rows_values, _rows_width = items, w  # equal items are neighbours in the lexicographic order
        qsort(order, n, sizeof(Py_ssize_t), _compare_rows)
        for i in range(n - 1):
            if _same_item(items + w * order[i], items + w * order[i + 1], w):
                return 1
        return 0
    finally:
        free(order)


cdef int _lane_lint(
    int kernel, int shape, double* items, Py_ssize_t total, list counts, Py_ssize_t keys,
    object size_image, object size_meta, bint distance,
) except -1:
    """The bits of the rules ``data._lint._own_warnings`` would warn about for this parsed target (no rule skipped)."""
    cdef int fired = 0
    cdef Py_ssize_t w = WIDTH[kernel], i, start
    cdef double min_x = INFINITY, min_y = INFINITY, max_x = -INFINITY, max_y = -INFINITY, x, y, width, height
    size = size_image if size_image is not None else size_meta
    for i in range(total * w):  # every item is flat (x, y) pairs: boxes, segments and points alike
        if i % 2 == 0:
            x = items[i]
            min_x = x if x < min_x else min_x
            max_x = x if x > max_x else max_x
        else:
            y = items[i]
            min_y = y if y < min_y else min_y
            max_y = y if y > max_y else max_y
    if total > 0:  # _coordinate_warnings
        if min_x >= 0 and min_y >= 0 and max_x <= 1 and max_y <= 1 and (size is None or max(size) > 2):
            fired |= NORMALIZED
        elif size is not None and min_x >= 0 and min_y >= 0 and max_x <= 1000 and max_y <= 1000:
            width, height = size
            if (width <= _lane_small_px and max_x > width) or (height <= _lane_small_px and max_y > height):
                fired |= NORMALIZED
    if kernel == SOFT_SEGMENT:
        for i in range(total):
            if items[w * i] == items[w * i + 2] and items[w * i + 1] == items[w * i + 3]:
                fired |= ZERO_SEGMENT
                break
    if shape == SET:
        if _has_copies(items, total, w):
            fired |= DUPLICATE
    elif shape == SET_MAP:
        start = 0
        for n in counts:
            if _has_copies(items + w * start, <Py_ssize_t>n, w):
                fired |= DUPLICATE
                break
            start += <Py_ssize_t>n
    if (shape == MAP or shape == SET_MAP) and keys == 1:
        fired |= SINGLE_KEY
    elif shape == MAP and keys == 0:
        fired |= EMPTY_MAP
    if distance and size_image is None and size_meta is None:
        fired |= MISSING_SIZE
    if size_image is not None and size_meta is not None and size_image != size_meta:
        fired |= CONFLICTING_SIZE
    return fired


def check_label(dict label, object skip, object registry):
    """The common label of the reward server, validated, compiled and linted in C, or None.

    ``label`` is a label as decoded from JSON, ``skip`` the rules already logged, ``registry`` the process's.
    Each pair of types has its plan (``data._quick``: the answer spec, the owner's entry, the current
    reward's entry, the contract the pair is written with, the kernel and shape codes, the answer rule,
    whether the type is scored by distance) or None (no lane for the pair). Returns ``(compiled instance,
    other scorer inputs)``, what the general path makes of the label, when it is valid as validation would
    find it and every rule it breaks is in ``skip``; None for anything else (the general path validates,
    compiles and lints it, and says why).
    """
    global _lane_plans_registry
    answer_gt, annotation_gt, contract = label.get("answer_gt"), label.get("annotation_gt"), label.get("reward_contract")
    if type(answer_gt) is not dict or type(annotation_gt) is not dict or type(contract) is not dict:
        return None
    if len(<dict>answer_gt) != 2 or len(<dict>annotation_gt) != 2:
        return None
    if "value" not in <dict>answer_gt or "value" not in <dict>annotation_gt:
        return None
    answer_type, annotation_type = (<dict>answer_gt).get("type"), (<dict>annotation_gt).get("type")
    if type(answer_type) is not str or type(annotation_type) is not str:
        return None
    if registry is not _lane_plans_registry:  # plugins reloaded: other entries, perhaps other contracts
        _lane_plans.clear()
        _lane_plans_registry = registry
    pair = (answer_type, annotation_type)
    plan = _lane_plans.get(pair, _DEFER)
    if plan is _DEFER:
        plan = _lane_plan_of(answer_type, annotation_type, registry)
        # Kept only while ``registry`` is still the lane's (another thread's call after a pin clears the plans,
        # perhaps while this one was made), and for names as short as a registered type's: a stream of long
        # unknown names keeps nothing.
        if registry is _lane_plans_registry and len(<str>answer_type) + len(<str>annotation_type) <= MAX_PLAN_NAMES:
            if len(_lane_plans) >= 4096:  # ever-new pairs: keep memory bounded
                _lane_plans.clear()
            _lane_plans[pair] = plan
    if plan is None:
        return None
    spec, entry, reward, expected, kernel, shape, rule, distance = <tuple>plan
    # The contract: exact types before the comparison (a str subclass could answer it as it likes).
    version, side_a, side_t = contract.get("reward_contract_version"), contract.get("answer"), contract.get("annotation")
    if type(version) is not str or type(side_a) is not dict or type(side_t) is not dict:
        return None
    for v in (<dict>side_a).values():
        if type(v) is not str:
            return None
    for v in (<dict>side_t).values():
        if type(v) is not str:
            return None
    if contract != expected:
        return None
    image_sizes = label.get("image_sizes")
    if label.get("model_image_size") is not None or type(image_sizes) is str:
        return None
    image_size, metadata = label.get("image_size"), label.get("metadata")
    size_image = size_meta = None
    if image_size is not None:
        size_image = _lane_pair(image_size)
        if size_image is None:
            return None
    if metadata is not None:
        if type(metadata) is not dict:
            return None
        for key in <dict>metadata:
            if type(key) is not str:
                return None
        if not _lane_size_keys.isdisjoint(<dict>metadata):
            size_meta = _meta_size(metadata, 0)
            if size_meta is _DEFER:
                size_meta = _lane_size_from(metadata)
            if size_meta is None and size_image is None:
                return None  # size keys without a size: validation's problem
    prepared = _lane_answer(rule, (<dict>answer_gt)["value"])
    if prepared is _DEFER:
        return None
    cdef double* out = NULL
    cdef Py_ssize_t total = 0
    cdef list counts = []
    cdef int fired
    try:
        parsed = _parse_into(kernel, shape, (<dict>annotation_gt)["value"], &out, &total, counts)
        if parsed is None:
            return None
        if shape == SET and _lane_budget((total,)) is not None:  # validation's own check (remembered by sizes)
            return None
        if shape == SET_MAP and _lane_budget(tuple(counts)) is not None:
            return None
        keys = len(parsed) if shape == MAP or shape == SET_MAP else 0
        fired = _lane_lint(kernel, shape, out, total, counts, keys, size_image, size_meta, distance)
    finally:
        free(out)
    if fired:
        for i in range(len(_lane_rules)):
            if fired & (1 << i) and _lane_rules[i] not in skip:
                return None  # a rule not logged yet: the general path lints and logs it
    fields = {}
    for name in _lane_fields:
        value = label.get(name)
        if value is not None:
            fields[name] = value
    compiled = _lane_compiled(fields, spec, entry, reward, prepared, parsed, size_image, size_meta, registry)
    return compiled, ({} if image_sizes is None else {"image_sizes": image_sizes})


# ---- results stacked for a trainer's logs (scoring._results.columns) ----------------------------------------


def columns(list results, tuple keys):
    """``scoring._results.columns`` restated: ``(overall, logs)`` with the same values, bit for bit, or None.

    The Python function's values: each key's ``float(result.get(key, 0.0))`` over the results, and each result's
    ``min(max(float(result.get("overall", 0.0)), 0.0), 1.0)`` (NaN stays NaN, -0.0 stays -0.0: ``max`` and
    ``min`` keep their first argument on a tie or an unordered pair), read in the same order (result by result,
    key by key), into lists made at their length. None when a result is not a dict or a key is repeated: the
    Python function then reads them.
    """
    cdef Py_ssize_t n = len(results), count = len(keys), i, k
    cdef dict logs = {}
    cdef list overall = [None] * n
    cdef list lists = []
    cdef list column
    cdef double v
    for result in results:
        if type(result) is not dict:
            return None
    for key in keys:
        column = [None] * n
        lists.append(column)
        logs[key] = column
    if len(logs) != count:
        return None
    for i in range(n):
        result = results[i]
        for k in range(count):
            value = (<dict>result).get(keys[k], 0.0)
            (<list>lists[k])[i] = value if type(value) is float else PyNumber_Float(value)
        value = (<dict>result).get("overall", 0.0)
        v = <double>(value if type(value) is float else PyNumber_Float(value))
        if 0.0 > v:
            v = 0.0
        if 1.0 < v:
            v = 1.0
        overall[i] = v
    return overall, logs
