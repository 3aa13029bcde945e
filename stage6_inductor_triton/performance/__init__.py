"""Speed on the GPU: block sizes tuned per kernel (autotune.py), a graph's kernels compiled
at once in worker processes (compile_pool.py, compile_worker.py), launches recorded as CUDA
graphs and replayed (cudagraphs.py, `mode="reduce-overhead"`)."""
