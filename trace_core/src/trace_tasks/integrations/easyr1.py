"""EasyR1 reward function, configured in the one-line reward file.

EasyR1 loads a file and calls ``compute_score(reward_inputs, **reward_function_kwargs)``::

    # trace_reward.py
    from trace_tasks.integrations.easyr1 import REWARD_NAME, REWARD_TYPE, make_compute_score  # noqa: F401
    compute_score = make_compute_score(format_weight=0.1)

    # config: worker.reward.reward_function=./trace_reward.py:compute_score

Current EasyR1 (since hiyouga/EasyR1#558, November 2025) reads ``REWARD_TYPE``
(``"batch"``) and ``REWARD_NAME`` from the file (``verl/workers/reward/function.py``
l.128-134 at HEAD) and has no ``reward_type`` config key any more (a YAML that
sets it fails with ``ConfigKeyError``). Older EasyR1 (v0.3.1, v0.3.2) picks the manager
with ``worker.reward.reward_type``: ``batch`` (the default) calls the function
with the list, ``sequential`` with one input at a time; :class:`ComputeScore`
takes either (a list gives a list, one mapping gives one dict).

Each input is ``{"response", "response_length", "ground_truth"}``; the ground
truth (``data.answer_key`` column) is the trace instance, a mapping or its JSON
string. Returns one dict per input: ``overall``, ``accuracy`` (EasyR1's
``RewardScore`` names both) and the logged components (``log_keys="charted"``:
:data:`~trace_tasks.integrations._common.CHARTED_KEYS`; ``"all"``: every key the
scorer always returns), plus, with ``diagnostics=True`` (default), the
per-type diagnostics (``annotation_assigned_iou_mean``, ...) of the rows whose
annotation was scored: EasyR1 logs the mean of each key over the rows that
have it (``reduce_metrics`` of ``reward/<key>``, ``verl/trainer/ray_trainer.py``
l.629-632), so ragged keys are fine there. (Online filtering reads its
``filter_key``, ``overall`` by default, per row: keep it an always-present key.)

With ``skip_special_tokens: false`` the response still ends with the
end-of-turn token (``<|im_end|>``, ``</s>``, a ``<pad>`` run...); it is
stripped the same way as for OpenRLHF
(:func:`~trace_tasks.integrations._common.strip_special_tokens`), so the final
object ends the text and keeps its format credit.

Errors: every input's instance is validated through the strict path
(:func:`trace_tasks.data.compile_instance`, cached by content, so a group
of rollouts compiles its ground truth once) before anything is scored. A
broken one raises :class:`~trace_tasks.data.InstanceError` (a
``ValueError``) naming ``reward_inputs[i].ground_truth (position i in this call)``
(EasyR1 passes no dataset row index) and listing every
problem; an invalid option raises :class:`~trace_tasks.errors.OptionError` (a
``ValueError``). EasyR1 calls the function
with no ``try`` (``verl/workers/reward/function.py`` l.95) inside a Ray actor
whose result the trainer takes with ``ray.get`` (``verl/trainer/ray_trainer.py``
l.519), so the run stops with the message. A ``response`` that is not text (a
list, ``None``, bytes) raises :class:`~trace_tasks.errors.ResponseTypeError`
naming ``reward_inputs[i].response`` instead of scoring 0 unflagged. Model
output (any text) never raises.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Union, overload

from trace_tasks.data import CompiledInstance
from trace_tasks.errors import OptionError
from trace_tasks.integrations._common import (
    compile_ground_truth,
    diagnostics,
    logged_keys,
    position,
    response_text,
    scorer_options,
    strip_special_tokens,
)

__all__ = ["REWARD_NAME", "REWARD_TYPE", "ComputeScore", "compute_score", "make_compute_score"]

#: EasyR1 reads these module attributes to pick its batch reward manager (a reward
#: file re-exports them).
REWARD_TYPE = "batch"
REWARD_NAME = "trace_tasks"

_Score = dict[str, float]


class ComputeScore:
    """EasyR1's ``compute_score``: a list of reward inputs (batch) or one input (sequential).

    Build it with :func:`make_compute_score`; ``options`` given at call time
    (``worker.reward.reward_function_kwargs``) override the factory's and are
    checked strictly, since nobody but the user passes them.
    """

    def __init__(self, *, log_keys: str, diagnostics: bool, options: Mapping[str, Any]) -> None:
        if not isinstance(diagnostics, bool):
            raise OptionError(f"diagnostics must be True or False, got {diagnostics!r}")
        self.log_keys = log_keys
        self.options = scorer_options(options, strict=True)
        self.keys = tuple(dict.fromkeys(("overall", "accuracy", *logged_keys(log_keys, self.options))))
        self.diagnostics = diagnostics

    @overload
    def __call__(self, reward_inputs: Mapping[str, Any], **options: Any) -> _Score: ...
    @overload
    def __call__(self, reward_inputs: Sequence[Mapping[str, Any]], **options: Any) -> list[_Score]: ...

    def __call__(self, reward_inputs: Any, **options: Any) -> Union[_Score, list[_Score]]:
        picked = {**self.options, **scorer_options(options, strict=True)} if options else self.options
        if isinstance(reward_inputs, Mapping):  # the sequential manager of EasyR1 v0.3.1-v0.3.2
            compiled = self._compile(reward_inputs, "reward_input")
            return self._score(reward_inputs, compiled, picked)
        # Every input first: a broken instance (or a response that is not text) raises before anything is scored.
        compiled_all = []
        for i, item in enumerate(reward_inputs):
            if not isinstance(item, Mapping):
                raise OptionError(f"reward_inputs[{i}] must be a mapping, got {type(item).__name__}")
            compiled_all.append(self._compile(item, f"reward_inputs[{i}]", f" ({position(i)})"))
        return [self._score(item, entry, picked) for item, entry in zip(reward_inputs, compiled_all, strict=True)]

    @staticmethod
    def _compile(item: Mapping[str, Any], name: str, at: str = "") -> tuple[CompiledInstance, dict[str, Any]]:
        entry = compile_ground_truth(item.get("ground_truth"), where=f"{name}.ground_truth{at}")
        response_text(item.get("response"), where=f"{name}.response{at}")  # a list, None or bytes is a caller's bug
        return entry

    def _score(
        self, item: Mapping[str, Any], entry: tuple[CompiledInstance, dict[str, Any]], options: Mapping[str, Any]
    ) -> _Score:
        instance, inputs = entry
        text = strip_special_tokens(item["response"])  # text: checked by _compile
        result = instance.score(text, **inputs, **options)
        scores = {key: float(result.get(key, 0.0)) for key in self.keys}
        if self.diagnostics:
            scores.update(diagnostics(result))
        return scores

    def __repr__(self) -> str:
        return f"ComputeScore(log_keys={self.log_keys!r}, diagnostics={self.diagnostics!r}, **{self.options!r})"


def make_compute_score(*, log_keys: str = "charted", diagnostics: bool = True, **options: Any) -> ComputeScore:
    """An EasyR1 reward function with ``options`` (scorer options, checked now)."""
    return ComputeScore(log_keys=log_keys, diagnostics=diagnostics, options=options)


#: Ready-made function with the default options.
compute_score = make_compute_score()
