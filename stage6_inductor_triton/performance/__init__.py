"""Speed on the GPU: block sizes tuned per kernel (autotune.py), launches recorded as CUDA
graphs and replayed (cudagraphs.py, `mode="reduce-overhead"`)."""
