#!/usr/bin/env bash
# The unit tests and the notebooks under every CPU instruction set torch can use on this machine
# (ATEN_CPU_CAPABILITY) and with 1 and 2 threads (MINITF_THREADS). Usage: tests/matrix.sh [PYTHON]
set -euo pipefail
py=${1:-.venv/bin/python}
best=$("$py" -c "import torch; print(torch.backends.cpu.get_cpu_capability().lower())")
case "$best" in
  avx512*) caps="default avx2 avx512" ;;
  avx2) caps="default avx2" ;;
  *) caps="default" ;;  # ARM, or x86 without AVX2: torch has one set of kernels
esac
for cap in $caps; do
  for threads in 1 2; do
    echo "== ATEN_CPU_CAPABILITY=$cap MINITF_THREADS=$threads"
    ATEN_CPU_CAPABILITY=$cap MINITF_THREADS=$threads "$py" -m pytest --nbval -q tests notebooks
  done
done
