"""argmax and argmin in C++, as torch picks the index: the first extreme wins a tie, and the
first NaN beats everything.

OpenMP has no reduction that carries an index, so the loop is sequential: an accumulator
holds the best value so far and its flat position in the reduction ranges, and a value
replaces it when it is better, or NaN, unless the accumulator already holds a NaN
(`acc != acc`). Lowered by lowerings/reductions.py; the loop is `CppKernel`'s.
"""

from .. import codegen_cpp as cpp
from ..ir import contiguous_strides
from ..kernel_writer import Value
from ..performance import stash
from ..scheduler import SchedulerNode


def arg_reduction_loop(writer, node: SchedulerNode, acc: str):
    """The loop of an argmax/argmin node, in `writer`'s kernel: its result is the index."""
    data = node.buffer.data
    t = writer.overrides.ctype(data.src_dtype)
    better = ">" if data.reduction_type == "argmax" else "<"
    start = writer.overrides.start(data.reduction_type, t, data.src_dtype.is_floating_point)
    writer.lines.append(f"{t} {acc} = {start};")
    writer.lines.append(f"int64_t {acc}_index = 0;")
    strides = contiguous_strides(data.reduction_ranges)  # its flat position, as torch counts
    flat = " + ".join(f"{stride}*r{i}" for i, stride in enumerate(strides)) or "0"
    with writer.block() as body:
        value = node.call_inner_fn(writer, writer.n)
        if node.name in writer.stashes:
            stash.store(writer, node, value, body)
        body.append(
            f"if (!({acc} != {acc}) && ({value} != {value} || {value} {better} {acc})) "
            f"{{ {acc} = {value}; {acc}_index = {flat}; }}"
        )
    writer.lines += cpp.loop_nest("r", data.reduction_ranges, body, "")
    writer.define(node, Value(f"{acc}_index", None))
