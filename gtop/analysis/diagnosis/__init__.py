"""Why the GPU idles and what a fix buys: the verdict, the what-if replay, ranked gains, the
step."""
