"""A TorchScript function (`@torch.jit.script`, `torch.jit.trace` of a function): its Python.

A ScriptFunction is a C++ object: calling it runs TorchScript's interpreter, which the VM
cannot look inside. torch.jit keeps the Python function it was made from in
`_torchdynamo_inline`, and torch.compile traces that one instead
(torch/_dynamo/variables/builder.py, `wrap_jit_function`): so does the VM, and DeBERTa's
scripted helpers are in its graph. For `torch.jit.trace` this is the Python as written, not
the trace made of one call of it, as under torch.compile.
"""

import torch

from ..sources import attr_of

INLINE = "_torchdynamo_inline"  # torch.jit's attribute: the Python function it compiled


def is_script_function(value) -> bool:
    return isinstance(value, torch.jit.ScriptFunction) and hasattr(value, INLINE)


def wrap_script_function(tx, value, source):
    """Its Python function, read through the ScriptFunction (its type guarded, as torch does)."""
    if source is not None:
        tx.trace.assume("type", source)
    return tx.wrap(getattr(value, INLINE), attr_of(source, INLINE))
