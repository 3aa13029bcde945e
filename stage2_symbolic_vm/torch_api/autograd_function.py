"""`torch.autograd.Function`: its forward traced where no gradient can flow."""

import torch

from ..errors import Unsupported
from ..python.objects import UserClassVariable
from ..python.sequences import TupleVariable
from ..tensor_ops import tensor_variables
from ..variables import ConstantVariable, Variable


class AutogradFunctionVariable(UserClassVariable):
    """A `torch.autograd.Function` subclass. `Fn.apply(x)` where no gradient can flow (grad
    mode off, or no input requires grad) is its forward, inlined with a real `FunctionCtx`
    made in the trace; with gradients it is a graph break, as its backward would be lost
    (torch/_dynamo traces both into one higher-order op, autograd_function_apply)."""

    def get_attr(self, tx, name):
        if name == "apply":
            return AutogradApplyVariable(self)
        return super().get_attr(tx, name)


class AutogradApplyVariable(Variable):
    """`Fn.apply`, bound to its AutogradFunctionVariable."""

    def __init__(self, function: AutogradFunctionVariable):
        self.function = function

    def call(self, tx, args, kwargs):
        tx.trace.assume("grad_mode")
        tensors = tensor_variables([*args, *kwargs.values()])
        if tx.root().grad_enabled and any(t.meta.requires_grad for t in tensors):
            raise Unsupported(
                "untraceable_call",
                f"{self.function.cls.__qualname__}.apply on tensors that require grad: the VM "
                "traces forward only, and its backward would be lost",
            )
        ctx = tx.wrap(torch.autograd.function.FunctionCtx, None).call(tx, [], {})
        needs_grad = ConstantVariable((False,) * len(args))
        ctx.set_attr(tx, "needs_input_grad", TupleVariable(needs_grad.unpack(tx)))
        function, cls = self.function, self.function.cls
        forward = function.get_attr(tx, "forward")
        if cls.setup_context is torch.autograd.Function.setup_context:  # forward(ctx, ...)
            return forward.call(tx, [ctx, *args], kwargs)
        output = forward.call(tx, list(args), kwargs)  # the newer style: setup_context apart
        setup = function.get_attr(tx, "setup_context")
        setup.call(tx, [ctx, TupleVariable(list(args)), output], {})
        return output

    def __repr__(self):
        return f"AutogradApplyVariable({self.function.cls.__qualname__})"
