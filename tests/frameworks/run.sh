#!/usr/bin/env bash
# The opt-in framework layer: inspect-ai 0.3.285 and verifiers 0.4.0 themselves calling the trace
# adapters, on CPU, with nothing downloaded (inspect's scripted mockllm model; verifiers' Task.score).
#
#   tests/frameworks/run.sh                 # environment in .venv-frameworks/
#   tests/frameworks/run.sh -k inspect      # extra arguments go to pytest
#
# Both need Python >= 3.11 and together pull about 900 MB (boto3, s3fs, textual, openai,
# anthropic, mcp...), so they live in their own pip environment, not in the locked dev group.
# It is built once and reused while requirements.txt stays the same.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
VENV="${FRAMEWORKS_VENV:-$ROOT/.venv-frameworks}"
PYTHON="${PYTHON:-python3}"
MEMBERS=(-e "$ROOT/trace_core" -e "$ROOT/trace_plugins_bbox" -e "$ROOT/trace_plugins_point" -e "$ROOT/trace_plugins_segment")

stamp="$(sha256sum "$HERE/requirements.txt" | cut -c1-16)"
if [[ ! -f "$VENV/.frameworks-stamp" || "$(cat "$VENV/.frameworks-stamp")" != "$stamp" ]]; then
    echo "building $VENV ($stamp)" >&2
    [[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet -r "$HERE/requirements.txt" "${MEMBERS[@]}"
    echo "$stamp" > "$VENV/.frameworks-stamp"
fi

cd "$ROOT"
exec "$VENV/bin/python" -m pytest -m frameworks tests/frameworks -p no:cacheprovider -v "$@"
