#!/usr/bin/env bash
# Fill .whl/ and .gpu-libs/ (both git-ignored), what gpu_session.sh needs on the GPU
# machine beyond its image (Python 3.12, x86-64, no network): gtop's runtime packages
# that the image lacks, and libbpf for the BPF host tier. Run here, from the repo root,
# where pip can download; then carry [".whl", ".gpu-libs"] in every device call.
#   bash benchmarks/gpu_carry.sh
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl .gpu-libs .git/info
grep -qx "/.gpu-libs/" .git/info/exclude 2>/dev/null || echo "/.gpu-libs/" >> .git/info/exclude
platforms=(--platform manylinux2014_x86_64 --platform manylinux2010_x86_64 --platform manylinux1_x86_64)
for n in 5 12 17 24 27 28 31 34 35; do platforms+=(--platform "manylinux_2_${n}_x86_64"); done
# runtime dependencies missing from the image (KINDS.md lists what it has), and theirs
wheels="zstandard==0.25.0 textual==8.2.8 pyelftools==0.33 py-spy==0.4.3
  linkify-it-py==2.2.0 mdit-py-plugins==0.7.0 markdown-it-py==4.3.0 uc-micro-py==2.0.0
  mdurl==0.1.2 platformdirs==4.14.7 prometheus-client==0.26.0 austin-dist==3.7.0"
for spec in $wheels; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp "${platforms[@]}" -d .whl "$spec"
done
lib=$(ldconfig -p | awk '/libbpf\.so\.1 .*x86-64/ {print $NF; exit}')
if [ -z "$lib" ]; then echo "gpu_carry: libbpf.so.1 not found (apt-get install libbpf1)" >&2; exit 1; fi
cp -L "$lib" .gpu-libs/libbpf.so.1
du -sh .whl .gpu-libs
