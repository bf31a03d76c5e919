#!/usr/bin/env bash
# The opt-in framework layer: inspect-ai 0.3.285 and verifiers 0.4.0 themselves calling the trace
# adapters, on CPU, with nothing downloaded (inspect's scripted mockllm model; verifiers' Task.score).
#
#   tests/frameworks/run.sh                              # environment in .venv-frameworks/
#   tests/frameworks/run.sh -k inspect                   # extra arguments go to pytest
#   VERIFIERS_VERSION=0.3.1 tests/frameworks/run.sh      # the 0.3 Rubric, in .venv-frameworks-verifiers-0.3.1/
#
# Both need Python >= 3.11 and together pull about 900 MB (boto3, s3fs, textual, openai,
# anthropic, mcp...), so they live in their own pip environment, not in the locked dev group.
# Each environment is built once and reused while its requirements stay the same.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
VERIFIERS_VERSION="${VERIFIERS_VERSION:-0.4.0}"
PYTHON="${PYTHON:-python3}"
MEMBERS=(-e "$ROOT/trace_core" -e "$ROOT/trace_plugins_bbox" -e "$ROOT/trace_plugins_point" -e "$ROOT/trace_plugins_segment")

if [[ "$VERIFIERS_VERSION" == "0.4.0" ]]; then
    VENV="${FRAMEWORKS_VENV:-$ROOT/.venv-frameworks}"
    REQUIREMENTS=(-r "$HERE/requirements.txt")
    stamp="$(sha256sum "$HERE/requirements.txt" | cut -c1-16)"
    TESTS=(tests/frameworks)
else
    # verifiers' last Rubric (0.3.1) requires mcp<2, which verifiers 0.4.0 does not allow: its own environment.
    VENV="${FRAMEWORKS_VENV:-$ROOT/.venv-frameworks-verifiers-$VERIFIERS_VERSION}"
    REQUIREMENTS=("verifiers==$VERIFIERS_VERSION" "pytest==9.2.0")
    stamp="verifiers==$VERIFIERS_VERSION"
    TESTS=(tests/frameworks/test_verifiers_rubric.py)
fi

if [[ ! -f "$VENV/.frameworks-stamp" || "$(cat "$VENV/.frameworks-stamp")" != "$stamp" ]]; then
    echo "building $VENV ($stamp)" >&2
    [[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet "${REQUIREMENTS[@]}" "${MEMBERS[@]}"
    echo "$stamp" > "$VENV/.frameworks-stamp"
fi

cd "$ROOT"
exec "$VENV/bin/python" -m pytest -m frameworks "${TESTS[@]}" -p no:cacheprovider -v "$@"
