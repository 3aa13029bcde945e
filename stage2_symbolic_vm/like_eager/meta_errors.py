"""An error of an op run on meta tensors: the program's, or the stand-in's.

The VM runs each op on meta tensors, and an error the op raises there is the error eager
raises (a shape mismatch, a wrong argument): the traced code raises it. One kind is not:
a meta tensor has no data, so an op that reads a tensor's data as a number (a 0-d tensor
given where a size goes, `x.view(b, torch.div(n, 2))`, which eager reads with `.item()`)
fails on meta tensors where eager succeeds. Taking that failure for the program's made
the VM predict an exception eager never raises (stage 3's divergence check caught it, on
Hugging Face's Longformer). Such an error is a break, as `.item()` is; Dynamo breaks there
too unless it captures scalar outputs.
"""

from ..errors import ObservedException, Unsupported


def meta_error(error: Exception, shown: str) -> Exception:
    """What to raise for `error`, raised by op `shown` on meta tensors."""
    if isinstance(error, RuntimeError) and "meta tensor" in str(error):
        why = f"{shown} reads a tensor's data as a number, which a meta tensor does not have"
        return Unsupported("item_call", why)
    return ObservedException(error, shown)
