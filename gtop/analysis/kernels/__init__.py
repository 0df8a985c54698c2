"""What ran on the GPU: kernels, copies and API calls summarised, kernel names, probed launches."""
