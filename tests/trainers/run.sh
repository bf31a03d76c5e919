#!/usr/bin/env bash
# The opt-in trainer layer: a real TRL GRPOTrainer, 2 steps on CPU, with a tiny model built locally.
#
#   tests/trainers/run.sh                      # TRL 1.16.0 in .venv-trainers/
#   TRL_VERSION=1.13.0 tests/trainers/run.sh   # another TRL in .venv-trainers-1.13.0/
#   tests/trainers/run.sh -k mixed             # extra arguments go to pytest
#
# The environment is built with pip, not uv: `pip install torch==2.13.0` takes the
# CPU wheel (found through pip's find-links here, or PyPI's CPU index with
# TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu), where a uv lock of TRL
# pulls CUDA torch and its nvidia-* wheels. It is built once and reused while
# requirements.txt and TRL_VERSION stay the same.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
TRL_VERSION="${TRL_VERSION:-1.16.0}"
TORCH_VERSION="${TORCH_VERSION:-2.13.0}"
if [[ "$TRL_VERSION" == "1.16.0" ]]; then
    VENV="${TRAINERS_VENV:-$ROOT/.venv-trainers}"
else
    VENV="${TRAINERS_VENV:-$ROOT/.venv-trainers-$TRL_VERSION}"
fi
PYTHON="${PYTHON:-python3}"

# HARNESSES=1 adds ms-swift and lmms-eval (tests/trainers/test_harnesses.py).
HARNESSES="${HARNESSES:-0}"
harness_pins=()
[[ "$HARNESSES" == "1" ]] && harness_pins=("ms-swift==4.6.0" "lmms-eval==0.7.3")
stamp="torch==$TORCH_VERSION trl==$TRL_VERSION harnesses=$HARNESSES $(sha256sum "$HERE/requirements.txt" | cut -c1-16)"
if [[ ! -f "$VENV/.trainers-stamp" || "$(cat "$VENV/.trainers-stamp")" != "$stamp" ]]; then
    echo "building $VENV ($stamp)" >&2
    [[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
    pip=("$VENV/bin/python" -m pip install --quiet)
    if [[ "$("$VENV/bin/python" -c 'import torch; print(torch.__version__)' 2>/dev/null)" == "$TORCH_VERSION"* ]]; then
        :  # an update of requirements.txt reuses the installed torch
    elif [[ -n "${TORCH_INDEX_URL:-}" ]]; then
        "${pip[@]}" --index-url "$TORCH_INDEX_URL" "torch==$TORCH_VERSION"
    else
        "${pip[@]}" "torch==$TORCH_VERSION"
    fi
    # torch is pinned again so that nothing below can replace the CPU build.
    "${pip[@]}" "torch==$TORCH_VERSION" "trl==$TRL_VERSION" ${harness_pins[@]+"${harness_pins[@]}"} -r "$HERE/requirements.txt" \
        -e "$ROOT/trace_core" -e "$ROOT/trace_plugins_bbox" -e "$ROOT/trace_plugins_point" -e "$ROOT/trace_plugins_segment"
    echo "$stamp" > "$VENV/.trainers-stamp"
fi

cd "$ROOT"
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 WANDB_DISABLED=true TOKENIZERS_PARALLELISM=false
exec "$VENV/bin/python" -m pytest -m trainers tests/trainers -p no:cacheprovider -v "$@"
