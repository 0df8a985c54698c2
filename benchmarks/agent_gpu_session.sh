#!/usr/bin/env bash
# The agent's GPU-machine work (issue 3), one step at a time or all in order.
#   OUT=/tmp/gtop-out bash benchmarks/agent_gpu_session.sh [tests|overhead|fidelity|fixture]
# Carried wheels in .whl/ (hypno cp312, pyinjector cp312) are installed to /tmp/site.
set -u
OUT=${OUT:-/tmp/gtop-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD:/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
fi
status=0
for step in ${*:-tests overhead fidelity fixture}; do
  echo "=== $step $(date +%T)"
  case $step in
    tests) python3 -m pytest -m gpu -q -p no:cacheprovider tests/agent 2>&1 | tail -40 ;;
    overhead) python3 benchmarks/agent_overhead.py "$OUT/agent_overhead.json" || status=1 ;;
    fidelity) python3 benchmarks/agent_fidelity.py "$OUT/agent_fidelity.json" || status=1 ;;
    fixture) python3 benchmarks/record_cuda_fixture.py "$OUT/cuda_fixture" || status=1 ;;
    *) echo "unknown step $step"; status=1 ;;
  esac
done
exit $status
