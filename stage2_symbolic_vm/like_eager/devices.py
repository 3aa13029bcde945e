"""Devices: a meta tensor's device is "meta", so the real one travels beside it.

TensorVariable keeps the device the real tensor would have (torch/_dynamo's FakeTensors
remember it themselves); each op's result gets the device eager would give it.
"""

import torch

from ..errors import ObservedException, Unsupported
from ..variables import ConstantVariable, TensorVariable


def result_device(name, tensors, args, kwargs, shown) -> torch.device:
    """The device of the result of op `name` (`shown` names it in an error)."""
    try:
        return device_of(name, tensors, args, kwargs)
    except RuntimeError as error:  # `device="gpu"`: the error eager raises there
        raise ObservedException(error, shown) from None


def device_of(name, tensors, args, kwargs) -> torch.device:
    """Meta tensors forget devices: the result lives where its inputs (or `device=`) say."""
    if name in ("cpu", "cuda"):
        return torch.device("cuda", 0) if name == "cuda" else torch.device("cpu")
    device = kwargs["device"].as_python_constant() if "device" in kwargs else None
    if name == "to" and device is None:  # x.to("cuda"), x.to(other_tensor), x.to(torch.float64)
        for arg in args[1:]:
            if isinstance(arg, TensorVariable):
                return arg.device
            if arg.is_python_constant() and isinstance(
                arg.as_python_constant(), (str, torch.device)
            ):
                device = arg.as_python_constant()
    if device is not None:
        return torch.device(device)
    # A CPU scalar tensor may meet a CUDA tensor (`x_cuda * torch.tensor(2.0)`): CUDA wins.
    devices = [t.device for t in tensors if t.device.type != "cpu"] or [t.device for t in tensors]
    return devices[0] if devices else torch.get_default_device()


def tensor_type(tx, tensor, args, kwargs):
    """`x.type()` names the tensor type of the real device (the meta tensor would say
    "torch.meta.FloatTensor"); `x.type(torch.float64)` converts, as `x.to` does."""
    if not args and not kwargs:
        name = torch.empty(0, dtype=tensor.meta.dtype).type()  # "torch.FloatTensor"
        if tensor.device.type != "cpu":
            name = name.replace("torch.", f"torch.{tensor.device.type}.", 1)
        return ConstantVariable(name)
    dtype = [*args, *kwargs.values()][0]
    name = dtype.as_python_constant()
    if isinstance(name, torch.dtype):
        return tx.record_call("type", [tensor, *args], kwargs)
    cpu_name = name.replace("torch.cuda.", "torch.", 1) if isinstance(name, str) else None
    if cpu_name not in TYPE_NAMES or len(args) + len(kwargs) > 1:  # `non_blocking=`, a class
        raise Unsupported("untraceable_call", f"`x.type({name!r})`: a type the VM does not map")
    # `x.type("torch.cuda.HalfTensor")` is `x.to("cuda", torch.float16)`: self when it is
    # one already, a copy otherwise, as Tensor.type answers.
    device = ConstantVariable("cuda" if cpu_name != name else "cpu")
    return tx.record_call("to", [tensor, device, ConstantVariable(TYPE_NAMES[cpu_name])], {})


# "torch.DoubleTensor" -> torch.float64, for the dtypes that have a legacy tensor type.
TYPE_NAMES = {
    torch.empty(0, dtype=dtype).type(): dtype
    for dtype in (
        torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32,
        torch.int16, torch.int8, torch.uint8, torch.bool,
    )
}  # fmt: skip
