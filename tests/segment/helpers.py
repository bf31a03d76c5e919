"""Score one segment annotation through the public entry point (shared with the other soft-distance family)."""

from ..support.soft_distance import ANSWER_GT, LN2, contract, expected_similarity, reward, score, score_text

__all__ = ["ANSWER_GT", "LN2", "contract", "expected_similarity", "reward", "score", "score_text"]
