"""Passes that make the kernels fast without changing what they compute, and a warm start
that does not compile again what an earlier process compiled.

linear.py            `F.linear` as one product, into memory the wrapper plans
bias_addmm.py        `mm + bias` as one `addmm`
attention_masks.py   a mask broadcast along the keys copied, for a fused attention (GPU)
sibling_products.py  products of one input by several weights as one (a GPU rule)
split_reductions.py  a reduction over much into few results in two kernels (a GPU rule)
reuse.py             a value read twice: stored once, or computed again in each reader
channels_last.py     images between convolutions stored channels-last
parallel_loops.py    the C++ outer loops: on all cores when worth it, SIMD when pointwise
outer_reductions.py  the C++ loops turned round: SIMD over the last outer dim
stash.py             a reduction loop stores a costly value for a later loop to read
memory_plan.py       the wrapper's dead buffers reused or deleted
dead_buffers.py      buffers that nothing reads are not computed
graph_cache.py       whole compiled graphs kept on disk, for the next process
aot_cache.py         training plans (forward and backward graphs) kept on disk
graph_text.py        graphs, inputs and the wrappers' objects spelled as JSON, stably
"""
