#!/bin/sh
# Rebuild offcpu.bpf.o from offcpu.bpf.c, reproducibly:
#   vmlinux.h is dumped by bpftool from the running kernel's BTF (CO-RE relocates the
#   offsets at load time, so the object runs on other kernels with BTF);
#   DWARF is stripped (it holds build paths); .BTF/.BTF.ext stay for CO-RE.
# Usage: build.sh [OUT]   (default: offcpu.bpf.o next to this script)
# Needs: clang (14+), llvm-strip, bpftool, libbpf headers (libbpf-dev).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/offcpu.bpf.o}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$here/offcpu.bpf.c" "$here/offcpu.h" "$tmp/"
bpftool btf dump file /sys/kernel/btf/vmlinux format c > "$tmp/vmlinux.h"
cd "$tmp"
clang -target bpf -D__TARGET_ARCH_x86 -O2 -g -Wall -Werror -Werror=implicit-int -std=gnu11 \
    -fdebug-prefix-map="$tmp"=. -fno-ident \
    -c offcpu.bpf.c -o offcpu.bpf.o
llvm-strip -g offcpu.bpf.o 2>/dev/null || llvm-strip-14 -g offcpu.bpf.o
cp offcpu.bpf.o "$out"
