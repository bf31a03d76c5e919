"""Streaming statistics of a run: a mean's spread, the statistics of GRPO groups, paired differences.

Everything here is bounded: :class:`Moments` is three numbers (count, sum, sum of squares), a group keeps
its rows' counts (its distinct predicted answers up to
:data:`~trace_tasks.limits.MAX_GROUP_ANSWERS`), and :class:`PairedDiffs` keeps
a seeded reservoir of at most :data:`~trace_tasks.limits.MAX_BOOTSTRAP_DIFFERENCES`
differences for its bootstrap interval.
"""

from __future__ import annotations

import array
import math
import random
from typing import Any

from trace_tasks.limits import MAX_BOOTSTRAP_DIFFERENCES, MAX_GROUP_ANSWERS

#: Bootstrap resamples of a paired interval, and the seed that makes it reproducible.
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 0


class Moments:
    """Count, sum and sum of squares of a stream: a mean's spread in three numbers.

    Sums rather than Moments's running mean: merging two streams adds them, so
    a summary merged from workers or Ray blocks equals the one stream's (the
    means were sums over counts already). The variance is
    ``(sum of squares - sum^2 / n) / (n - 1)``; for rewards and metrics (values
    of order 1) the cancellation costs no digit a table or a JSON reader sees.
    """

    __slots__ = ("n", "sq", "total")

    def __init__(self) -> None:
        self.n = 0
        self.total = 0.0
        self.sq = 0.0

    def add(self, value: float) -> None:
        self.n += 1
        self.total += value
        self.sq += value * value

    def merge(self, other: Moments) -> None:
        self.n += other.n
        self.total += other.total
        self.sq += other.sq

    @property
    def mean(self) -> float:
        return self.total / self.n if self.n else 0.0

    def _deviations(self) -> float:
        """The sum of squared deviations from the mean (never below 0)."""
        return max(self.sq - self.total * self.total / self.n, 0.0) if self.n else 0.0

    def population_std(self) -> float:
        """The population standard deviation (0.0 for fewer than 2 values)."""
        return math.sqrt(self._deviations() / self.n) if self.n > 1 else 0.0

    def stderr(self) -> float | None:
        """The standard error of the mean: the sample standard deviation over ``sqrt(n)``; ``None`` below 2 values."""
        if self.n < 2:
            return None
        return math.sqrt(self._deviations() / (self.n - 1)) / math.sqrt(self.n)


#: Why a zero-variance group gives no signal (counts; a group can have both of the first two causes).
ZERO_VARIANCE_CAUSES = ("all_wrong_answer", "all_unparsed", "identical_other")


class OpenGroup:
    """The group being read: the rows of one id so far (counts and flags only, and its distinct predicted answers)."""

    __slots__ = ("all_equal", "all_unparsed", "all_wrong", "annotation_type", "answers", "any_correct", "first", "id", "overall")

    def __init__(self, row_id: str, annotation_type: str, overall: float) -> None:
        self.id = row_id
        self.annotation_type = annotation_type
        self.first = overall
        self.overall = Moments()
        self.all_equal = True
        self.any_correct = False
        self.all_wrong = True
        self.all_unparsed = True
        #: predicted answer (as JSON) -> [rows, first row index, correct]; ``None`` once too many to keep.
        self.answers: dict[str, list[Any]] | None = {}

    def add(self, overall: float, accuracy: float | None, parsed: bool | None, answer: str | None) -> None:
        self.all_equal = self.all_equal and overall == self.first
        self.overall.add(overall)
        correct = accuracy == 1.0
        self.any_correct = self.any_correct or correct
        self.all_wrong = self.all_wrong and accuracy == 0.0
        self.all_unparsed = self.all_unparsed and parsed is False
        answers = self.answers
        if answers is None or answer is None:
            return
        found = answers.get(answer)
        if found is not None:
            found[0] += 1
        elif len(answers) >= MAX_GROUP_ANSWERS:
            self.answers = None
        else:
            answers[answer] = [1, self.overall.n, correct]

    @property
    def rows(self) -> int:
        return self.overall.n

    def majority_correct(self) -> bool | None:
        """Whether the most frequent predicted answer (ties: the first seen) is correct; ``None``: no comparable answer."""
        if not self.answers:
            return None
        _, _, correct = min(self.answers.values(), key=lambda a: (-a[0], a[1]))
        return bool(correct)


class GroupStats:
    """The statistics of closed groups (at least 2 rows) of one annotation type, or of all."""

    __slots__ = ("causes", "groups", "majority_correct", "majority_groups", "passed", "std_sum", "zero_variance")

    def __init__(self) -> None:
        self.groups = 0
        self.zero_variance = 0
        self.passed = 0
        self.std_sum = 0.0
        self.majority_groups = 0
        self.majority_correct = 0
        self.causes = dict.fromkeys(ZERO_VARIANCE_CAUSES, 0)

    def add(self, group: OpenGroup) -> None:
        self.groups += 1
        self.passed += group.any_correct
        self.std_sum += group.overall.population_std()
        majority = group.majority_correct()
        if majority is not None:
            self.majority_groups += 1
            self.majority_correct += majority
        if group.all_equal:
            self.zero_variance += 1
            self.causes["all_wrong_answer"] += group.all_wrong
            self.causes["all_unparsed"] += group.all_unparsed
            self.causes["identical_other"] += not (group.all_wrong or group.all_unparsed)

    def merge(self, other: GroupStats) -> None:
        self.groups += other.groups
        self.zero_variance += other.zero_variance
        self.passed += other.passed
        self.std_sum += other.std_sum
        self.majority_groups += other.majority_groups
        self.majority_correct += other.majority_correct
        for key, count in other.causes.items():
            self.causes[key] += count

    def copy(self) -> GroupStats:
        found = GroupStats()
        found.merge(self)
        return found

    def to_dict(self) -> dict[str, Any]:
        """The keys under ``metrics``: ``groups``, ``zero_variance_groups_share``, ``pass@k``, ``group_std_mean``, ..."""
        n = self.groups
        return {
            "groups": n,
            "zero_variance_groups_share": self.zero_variance / n if n else 0.0,
            "pass@k": self.passed / n if n else 0.0,
            "group_std_mean": self.std_sum / n if n else 0.0,
            "majority@k": self.majority_correct / self.majority_groups if self.majority_groups else 0.0,
            "majority_groups": self.majority_groups,
            **{f"zero_variance_{key}": count for key, count in self.causes.items()},
        }


class PairedDiffs:
    """Paired differences (now - before) of one cell: their mean and standard error, and a reservoir for the bootstrap.

    The mean and standard error are exact over every difference (:class:`Moments`);
    the bootstrap 95% interval resamples a seeded reservoir of at most ``limit``
    differences (all of them below the limit), so memory is bounded and the same
    rows in the same order give the same interval.
    """

    __slots__ = ("_rng", "limit", "reservoir", "spread")

    def __init__(self, limit: int = MAX_BOOTSTRAP_DIFFERENCES, seed: int = BOOTSTRAP_SEED) -> None:
        self.spread = Moments()
        self.reservoir = array.array("d")  # 8 bytes a difference
        self.limit = limit
        self._rng = random.Random(seed)

    def add(self, difference: float) -> None:
        self.spread.add(difference)
        seen = self.spread.n - 1
        if seen < self.limit:
            self.reservoir.append(difference)
        else:
            at = self._rng.randrange(seen + 1)
            if at < self.limit:
                self.reservoir[at] = difference

    @property
    def n(self) -> int:
        return self.spread.n

    @property
    def mean(self) -> float:
        return self.spread.mean

    def stderr(self) -> float | None:
        return self.spread.stderr()

    def interval(self, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> tuple[float, float] | None:
        """The percentile bootstrap 95% interval of the mean difference (``None`` below 2 differences).

        ``resamples`` means of the reservoir drawn with replacement by
        ``numpy.random.default_rng(seed).integers(0, k, (chunk, k))``, chunk
        after chunk of at most :data:`_CHUNK_CELLS` indices; the 2.5% and 97.5%
        quantiles of those means (numpy's linear quantile).
        """
        import numpy as np  # a dependency of the scorer (scipy's assignment); only a paired comparison needs it here

        k = len(self.reservoir)
        if k < 2:
            return None
        values = np.frombuffer(self.reservoir, dtype=np.float64).copy()
        rng = np.random.default_rng(seed)
        chunk = max(1, _CHUNK_CELLS // k)
        means = []
        for start in range(0, resamples, chunk):
            picks = rng.integers(0, k, size=(min(chunk, resamples - start), k))
            means.append(values[picks].mean(axis=1))
        low, high = np.quantile(np.concatenate(means), [0.025, 0.975])
        return float(low), float(high)


#: Indices drawn at once by the bootstrap (8 MB of int64), so its memory is bounded whatever the reservoir.
_CHUNK_CELLS = 1 << 20
