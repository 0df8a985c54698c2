"""eBPF sources: the C programs, their shared layout header, the prebuilt CO-RE objects and
the libbpf binding that loads them."""
