"""Reductions that answer with positions: `max(x, dim)` and `min(x, dim)` (values and
indices), `argmax`, `argmin`; and `max(x, other)`, elementwise."""

import math

import torch

from ..ir import ops
from ..lowering import (
    _check_not_empty,
    _dim,
    _dims,
    is_tensor,
    make_pointwise,
    make_reduction,
    register,
    reindex,
)
from .views import reshape_to


def _max_min(kind):
    """`max(x)`; `max(x, other)`, elementwise; `max(x, dim)`, the values and their indices,
    two reductions over the same rows (when only `.values` is read, the scheduler drops
    the indices)."""

    def lower(graph, out, x, dim=None, keepdim=False, *, other=None):
        other = dim if is_tensor(dim) else other
        if other is not None:
            return make_pointwise(getattr(ops, f"{kind}imum"), x, other, dtype=out.dtype)
        _check_not_empty(x, _dims(dim), kind)
        if dim is None:
            return make_reduction(graph, x, [], False, kind, out.dtype)
        values = make_reduction(graph, x, [dim], keepdim, kind, out.dtype)
        indices = make_reduction(graph, x, [dim], keepdim, f"arg{kind}", torch.int64)
        return getattr(torch.return_types, kind)((values, indices))  # eager's named tuple

    return lower


def _arg_reduction(kind):
    def lower(graph, out, x, dim=None, keepdim=False):
        _check_not_empty(x, _dims(dim), kind)
        if dim is None:
            flat = reshape_to(graph, x, (math.prod(x.ranges),))
            result = make_reduction(graph, flat, [0], False, kind, torch.int64)
            return reindex(result, (1,) * len(x.ranges), lambda idx: []) if keepdim else result
        return make_reduction(graph, x, [_dim(dim, len(x.ranges))], keepdim, kind, torch.int64)

    return lower


register("max")(_max_min("max"))
register("min")(_max_min("min"))
register("argmax")(_arg_reduction("argmax"))
register("argmin")(_arg_reduction("argmin"))
