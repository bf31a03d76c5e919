"""Bounds that keep scoring linear in the response and bounded in the annotation.

Past any of these, the content is treated as a parse failure (zero reward with
flags), never as an exception and never as minutes of work. They are documented
in ``docs/limits.md``; change both together.
"""

from __future__ import annotations

#: Largest response (in characters) that is scanned for the final block; a longer
#: response is scanned only in its last ``MAX_RESPONSE_CHARS`` characters (the
#: final object is at the end). 1 Mi keeps the worst recovery scan (a flood of
#: tiny objects followed by the word "answer") near 0.3 s.
MAX_RESPONSE_CHARS = 1024 * 1024

#: Largest text handed to the Python-literal compatibility reader in one call.
MAX_LITERAL_CHARS = 32 * 1024

#: Largest total of text handed to the literal reader while scoring one response
#: (recovery candidates and annotation strings together; each read counts at least
#: ``trace_tasks.reading._literals.MIN_LITERAL_CHARGE``). At up to ~1.5 us per character this caps the
#: literal reader near 50 ms per response; with the caller-side budgets below, all
#: literal reading of one call stays near 0.1 s (issue 17's target: 0.1 s plus 0.1 s
#: per MiB). One literal of the largest size (``MAX_LITERAL_CHARS``) still fits.
MAX_LITERAL_BUDGET = 32 * 1024

#: Largest total of the caller's strings read by the literal reader while parsing the
#: annotation target in one lenient ``score_trace_response`` call (a set-map of
#: 10,000 literal strings cost 0.3 s per call). Compiled instances parse their
#: target once, when compiled, without it.
MAX_TARGET_LITERAL_BUDGET = 16 * 1024

#: Deepest bracket nesting the literal reader accepts (its parser recurses).
MAX_LITERAL_DEPTH = 64

#: Deepest ``[``/``{`` nesting (outside strings) handed to the JSON decoder. The C
#: decoder recurses once per level and is bounded only by ``sys.getrecursionlimit()``:
#: a host that raises the limit to 100,000 lets ``[`` * 100,000 overflow the C stack
#: (SIGSEGV). Checked before decoding, so the bound holds under any recursion limit.
#: 1,000 is the interpreter's default limit, so under it nothing changes (deeper JSON
#: already failed), and 1,000 levels use a few hundred KB of C stack at most.
MAX_JSON_DEPTH = 1000

#: How many recovery candidates (objects, fenced blocks, tags) are tried per response.
MAX_RECOVERY_CANDIDATES = 512

#: Deepest nesting of an answer value that is compared; deeper is a non-match.
MAX_ANSWER_DEPTH = 256

#: Most items in one annotation collection (set, sequence, map keys).
MAX_COLLECTION_ITEMS = 10_000

#: Most items parsed from one annotation value, summed over every key of a set-map
#: (a map's keys are its items). ``MAX_COLLECTION_ITEMS`` bounds each key only:
#: 10,000 keys of 15 points (1 MiB) parsed 150,000 points, ~0.17 s. Twice
#: ``MAX_COLLECTION_ITEMS``, so one collection at its cap and more keys still fit.
MAX_ANNOTATION_ITEMS = 20_000

#: Most cells of one assignment matrix (predicted x target items).
MAX_MATRIX_CELLS = 1_000_000

#: Most similarity cells computed for the assignments of one response, across every
#: key of a set-map: distinct predicted x distinct target items (identical items are
#: collapsed first, so a repetition loop costs one row), plus ``trace_tasks.family._assignment.SET_COST``
#: per set, a Python-computed cell counting ``trace_tasks.family._assignment.LIST_CELL_COST``. Twice
#: ``MAX_MATRIX_CELLS``, so one set at that cap fits; ~0.1 s at most. A large target
#: raises it (up to ``MAX_TARGET_ASSIGNMENT_CELLS``).
MAX_ASSIGNMENT_CELLS = 2_000_000

#: Most solver work for the assignments of one response, across every key: the sum
#: of rows^2 x columns over the matrices handed to scipy after the reductions of
#: ``family/_assignment.py`` (its worst case, near-identical rows, 0.3-0.85 ns per unit at
#: load 3.6-4.9, 2-3 ns at load 5-6: ~15 ms to 0.15 s). A large target raises it (up
#: to ``MAX_TARGET_ASSIGNMENT_WORK``).
MAX_ASSIGNMENT_WORK = 50_000_000

#: A prediction of up to ``n + n // MARGIN_DIVISOR + 1`` items against a target set of
#: ``n`` (an honest answer with a few extra or repeated items) is a *plausible* one:
#: the assignment budget of a response grows with the target so that every plausible
#: prediction, however degenerate, is scored exactly (``trace_tasks.family._assignment.target_allowance``);
#: otherwise a complete answer could fail where one cut short is scored.
MARGIN_DIVISOR = 8

#: Most similarity cells (in the units of ``MAX_ASSIGNMENT_CELLS``) a target may make
#: a response's budget hold so that every plausible prediction fits. Validation refuses
#: a target that needs more (it could not score every honest prediction), naming this
#: limit; the lenient scorer grants at most this. Twice ``MAX_ASSIGNMENT_CELLS``: a set
#: of 562 items (562 x 633 cells at Python cost) or a set-map of 3,649 keys of 3.
MAX_TARGET_ASSIGNMENT_CELLS = 4_000_000

#: Most solver work (units of ``MAX_ASSIGNMENT_WORK``) a target may make a response's
#: budget hold so that every plausible prediction fits; validation refuses a target
#: that needs more, naming this limit. Four times ``MAX_ASSIGNMENT_WORK``: a set of up
#: to 562 items (562^2 x 633 units; 562 near-identical points against it took 48 ms
#: at load 3.6, 0.15 s at load 4.9).
MAX_TARGET_ASSIGNMENT_WORK = 200_000_000

#: Paired differences kept per cell (type, group, reward column) for a baseline's bootstrap interval
#: (``report --baseline``): a seeded reservoir; the mean and standard error use every difference.
MAX_BOOTSTRAP_DIFFERENCES = 5_000

#: Distinct predicted answers kept per GRPO group for ``majority@k``; a group with more has no comparable answers.
MAX_GROUP_ANSWERS = 256

#: Longest physical line (in bytes, without its terminator) the command-line readers
#: hold: ``score``, ``validate``, ``audit``, ``report`` and ``explain`` inputs. A longer
#: line is read past in chunks, never held, and becomes an error row naming this bound
#: (reading held a line whole, ~3.5x its size once parsed: one 64 MiB line in a 64 KB
#: ``.jsonl.gz`` added 225 MiB). 32 MiB is twice the server's largest request body
#: (``DEFAULT_MAX_REQUEST_BYTES``, 16 MiB), so any response a client can send to be
#: scored fits in one line with its instance; a line at the bound costs ~115 MiB.
MAX_LINE_BYTES = 32 * 1024 * 1024

#: Bytes of compiled instances one :class:`~trace_tasks.data.InstanceCache` keeps (the
#: adapters' shared cache, the reward server's, and the adapters' cache of rows by their
#: raw JSON each have their own): 128 MiB. An entry is charged its estimated size,
#: ``INSTANCE_ENTRY_BYTES_PER_KEY_BYTE`` times its content key's length (plus
#: ``INSTANCE_ENTRY_MIN_BYTES``); the least recently used entries are dropped past it, and an
#: entry larger than the whole bound is compiled without being kept. Counted by entries
#: alone (4,096), 1 MiB labels kept ~3 MiB each, ~12 GiB at the cap.
MAX_INSTANCE_CACHE_BYTES = 128 * 1024 * 1024

#: Measured bytes kept per byte of an instance's content key (its pickle, about its JSON
#: length) once compiled and cached, raw JSON key included: 3.0 for a 1 MiB string answer,
#: 7.2-9.9 for 500-box and 500-key sets and maps, 10.9 for a 500-point set (tracemalloc,
#: the largest of them rounded up).
INSTANCE_ENTRY_BYTES_PER_KEY_BYTE = 12
#: ... plus this much per container its key opens (``]``/``}`` opcodes of the pickle, ``[``/``{`` of a
#: raw JSON text, counted in C; a byte that only looks like one counts too): an empty list is one
#: byte of key and 64 bytes parsed, so a label of 1.5 million ``[]`` in its metadata kept ~5 times
#: its charge (the cache held 651 MB at its 128 MiB bound).
INSTANCE_ENTRY_BYTES_PER_CONTAINER = 64

#: Least an entry is charged, whatever its key: a small instance's compiled record and the
#: cache's own bookkeeping.
INSTANCE_ENTRY_MIN_BYTES = 4096
