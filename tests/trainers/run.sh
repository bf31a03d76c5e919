#!/usr/bin/env bash
# The opt-in trainer layer: a real TRL GRPOTrainer, 2 steps on CPU, with a tiny model built locally;
# with HARNESSES=1 also ms-swift 4.6.0 and lmms-eval 0.7.3 (tests/trainers/test_harnesses.py).
#
#   tests/trainers/run.sh                      # TRL 1.16.0 in .venv-trainers/
#   TRL_VERSION=1.13.0 tests/trainers/run.sh   # another TRL in .venv-trainers-1.13.0/
#   tests/trainers/run.sh -k mixed             # extra arguments go to pytest
#   HARNESSES=1 tests/trainers/run.sh          # and the harnesses, in .venv-trainers-harnesses/
#   HARNESSES=1 tests/trainers/run.sh -k harnesses   # the harnesses only
#
# The environments are built with pip, not uv: `pip install torch==2.13.0` takes the
# CPU wheel (found through pip's find-links here, or PyPI's CPU index with
# TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu), where a uv lock of TRL
# pulls CUDA torch and its nvidia-* wheels. Each is built once and reused while its
# requirements file and versions stay the same.
#
# ms-swift 4.6.0 requires trl<1.0 and transformers<5.20, so the harnesses get their
# own environment (requirements-harnesses.txt) beside TRL 1.16.0's.
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
HARNESSES="${HARNESSES:-0}"
HARNESSES_VENV="${HARNESSES_VENV:-$ROOT/.venv-trainers-harnesses}"
PYTHON="${PYTHON:-python3}"
MEMBERS=(-e "$ROOT/trace_core" -e "$ROOT/trace_plugins_bbox" -e "$ROOT/trace_plugins_point" -e "$ROOT/trace_plugins_segment")

# build VENV REQUIREMENTS PACKAGE...: a venv with the CPU torch, then the packages, the requirements and the members.
build() {
    local venv="$1" requirements="$2"
    shift 2
    local stamp
    stamp="torch==$TORCH_VERSION $* $(sha256sum "$requirements" | cut -c1-16)"
    [[ -f "$venv/.trainers-stamp" && "$(cat "$venv/.trainers-stamp")" == "$stamp" ]] && return 0
    echo "building $venv ($stamp)" >&2
    [[ -x "$venv/bin/python" ]] || "$PYTHON" -m venv "$venv"
    local pip=("$venv/bin/python" -m pip install --quiet)
    if [[ "$("$venv/bin/python" -c 'import torch; print(torch.__version__)' 2>/dev/null)" == "$TORCH_VERSION"* ]]; then
        :  # an update of the requirements reuses the installed torch
    elif [[ -n "${TORCH_INDEX_URL:-}" ]]; then
        "${pip[@]}" --index-url "$TORCH_INDEX_URL" "torch==$TORCH_VERSION"
    else
        "${pip[@]}" "torch==$TORCH_VERSION"
    fi
    # torch is pinned again so that nothing below can replace the CPU build.
    "${pip[@]}" "torch==$TORCH_VERSION" "$@" -r "$requirements" "${MEMBERS[@]}"
    echo "$stamp" > "$venv/.trainers-stamp"
}

build "$VENV" "$HERE/requirements.txt" "trl==$TRL_VERSION"
if [[ "$HARNESSES" == "1" ]]; then
    build "$HARNESSES_VENV" "$HERE/requirements-harnesses.txt" "ms-swift==4.6.0" "lmms-eval==0.7.3"
    # lmms-eval 0.7.3 (and timm) pull PyPI's torchvision 0.28.0, which does not import beside the CPU torch
    # ("operator torchvision::nms does not exist") and then breaks transformers' model imports; nothing the
    # harness tests run needs it, so it goes (transformers sees no torchvision and does without).
    "$HARNESSES_VENV/bin/python" -m pip uninstall --yes --quiet torchvision 2>/dev/null || true
fi

cd "$ROOT"
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 WANDB_DISABLED=true TOKENIZERS_PARALLELISM=false
if [[ "$HARNESSES" != "1" ]]; then
    exec "$VENV/bin/python" -m pytest -m trainers tests/trainers -p no:cacheprovider -v "$@"
fi
# Both layers, each in its own environment; pytest's 5 ("no tests collected", e.g. -k harnesses in TRL's) is no failure.
rc=0
"$VENV/bin/python" -m pytest -m trainers tests/trainers --ignore=tests/trainers/test_harnesses.py -p no:cacheprovider -v "$@" || rc=$?
[[ $rc -eq 5 ]] && rc=0
hrc=0
"$HARNESSES_VENV/bin/python" -m pytest -m trainers tests/trainers/test_harnesses.py -p no:cacheprovider -v "$@" || hrc=$?
[[ $hrc -eq 5 ]] && hrc=0
exit $(( rc != 0 ? rc : hrc ))
