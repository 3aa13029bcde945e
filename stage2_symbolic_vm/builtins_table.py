"""Python builtins, `math` and `operator`: one small function per builtin, in one table.

Most builtins fold: on constants they are simply called (`min(2, 3)` is 2 in
the trace). The few that build iterators (`range`, `enumerate`, `zip`) make
an IteratorVariable that a `for` loop unrolls. `operator` functions on
tensors are recorded like the Python operators they stand for. Anything not
in the table is a call the VM cannot trace, such as `print`
(torch/_dynamo/variables/builtin.py is this table, 2,000 lines long).
"""

import builtins
import math
import operator
import types

from .errors import Unsupported
from .functions import SuperVariable
from .operators import binary_op, unary_op
from .variables import (
    ConstantVariable,
    DictVariable,
    DictViewVariable,
    IteratorVariable,
    ListVariable,
    ObjectVariable,
    SequenceVariable,
    TensorVariable,
    TupleVariable,
    Variable,
    constant_args,
)

# Builtins that are pure functions of constants: folded when every argument is a constant.
FOLDABLE = {
    abs,
    all,
    any,
    bool,
    chr,
    complex,
    divmod,
    float,
    int,
    max,
    min,
    ord,
    pow,
    round,
    sorted,
}
FOLDABLE |= {str, repr, format, slice, hash}
# Builtins that a tensor answers with a tensor op (`abs(x)` is `x.__abs__()`).
TENSOR_BUILTINS = {abs, pow, divmod, round}
PYTHON_MODULES = (math, operator)


class BuiltinVariable(Variable):
    """A builtin function, or a function of `math` / `operator`."""

    def __init__(self, fn, source=None):
        self.fn, self.source = fn, source

    def python_type(self):
        return type(self.fn)

    def as_python_object(self):
        return self.fn

    def call(self, tx, args, kwargs):
        handler = HANDLERS.get(self.fn)
        if handler is not None:
            return handler(tx, *args, **kwargs)
        if any(isinstance(a, TensorVariable) for a in args):
            if self.fn in (int, float, bool, complex, str, repr, format):
                raise Unsupported("item_call", f"`{self.fn.__name__}()` of a tensor reads its data")
            if self.fn in TENSOR_BUILTINS or getattr(self.fn, "__module__", "") == "_operator":
                return operator_call(tx, self.fn, args, kwargs)
        if self.fn in (sorted, all, any) and len(args) == 1 and not args[0].is_python_constant():
            args = [TupleVariable(args[0].unpack(tx))]  # `sorted(d)`, `all(flags)`: fold the items
        foldable = self.fn in FOLDABLE or getattr(self.fn, "__module__", "") in (
            "math",
            "_operator",
        )
        if foldable and all(a.is_python_constant() for a in [*args, *kwargs.values()]):
            args, kwargs = constant_args(args, kwargs)
            return tx.wrap_constant_result(
                tx.run_python(self.fn, *args, **kwargs), self.fn.__name__
            )
        if isinstance(self.fn, type) and issubclass(self.fn, BaseException):
            args, kwargs = constant_args(args, kwargs)  # an exception about to be raised
            return ObjectVariable(self.fn(*args, **kwargs))
        if self.fn is bool and len(args) == 1:
            return ConstantVariable(args[0].truth(tx))
        raise Unsupported(
            "untraceable_call", f"call to `{self.fn.__name__}`, which the VM does not trace"
        )

    def __repr__(self):
        return f"BuiltinVariable({self.fn.__name__})"


def operator_call(tx, fn, args, kwargs):
    """`operator.add(x, 1)`, `abs(x)`: the same as the Python operator in the code."""
    if fn is operator.getitem and len(args) == 2:
        return args[0].getitem(tx, args[1])
    if len(args) == 2 and not kwargs:
        return binary_op(tx, fn, *args)
    if len(args) == 1 and not kwargs:
        return unary_op(tx, fn, args[0])
    return tx.record_call(fn, args, kwargs)


class PythonModuleVariable(Variable):
    """`math` or `operator`: their functions fold on constants."""

    def __init__(self, module, source):
        self.module, self.source = module, source

    def get_attr(self, tx, name):
        if not hasattr(self.module, name):
            raise Unsupported("eager_error", f"module {self.module.__name__!r} has no {name!r}")
        value = getattr(self.module, name)
        return BuiltinVariable(value) if callable(value) else ConstantVariable(value)


def length(tx, value):
    if isinstance(value, TensorVariable):
        if value.meta.dim() == 0:
            raise Unsupported("eager_error", "len() of a 0-d tensor")
        return ConstantVariable(value.meta.shape[0])
    if isinstance(value, (SequenceVariable, DictVariable, DictViewVariable)):
        return ConstantVariable(len(value.items))
    if value.is_python_constant():
        return ConstantVariable(tx.run_python(len, value.as_python_constant()))
    if hasattr(value, "module"):  # a ModuleList, Sequential or ModuleDict
        return ConstantVariable(len(value.unpack(tx)))
    raise Unsupported("unsupported_value", f"len() of {value}")


def class_of(value):
    """The class(es) named by the second argument of isinstance."""
    if isinstance(value, TupleVariable):
        return tuple(class_of(v) for v in value.items)
    if not hasattr(value, "as_python_object"):
        raise Unsupported("unsupported_value", f"isinstance() against {value}")
    return value.as_python_object()


def is_instance(tx, value, classes):
    if not isinstance(value, TensorVariable) and value.source is not None:
        tx.trace.assume("type", value.source)
    return ConstantVariable(tx.run_python(issubclass, value.python_type(), class_of(classes)))


def enumerate_(tx, iterable, start=None):
    first = start.as_python_constant() if start is not None else 0
    items = iterable.unpack(tx)
    return IteratorVariable(
        TupleVariable([ConstantVariable(first + i), v]) for i, v in enumerate(items)
    )


def zip_(tx, *iterables, strict=None):
    columns = [it.unpack(tx) for it in iterables]
    if strict is not None and strict.as_python_constant() and len({len(c) for c in columns}) > 1:
        raise Unsupported("eager_error", "zip() arguments have different lengths")
    return IteratorVariable(TupleVariable(row) for row in zip(*columns, strict=False))


def next_(tx, iterator, *default):
    if not isinstance(iterator, IteratorVariable):
        raise Unsupported("unsupported_value", f"next() of {iterator}")
    item = iterator.next_item()
    if item is None and not default:
        raise Unsupported("eager_error", "next() raises StopIteration")
    return default[0] if item is None else item


def dict_(tx, *args, **kwargs):
    items = {}
    if args and isinstance(args[0], DictVariable):
        items.update(args[0].items)
    elif args:
        for pair in args[0].unpack(tx):
            key, value = pair.unpack(tx)
            items[key.as_python_constant()] = value
    items.update(kwargs)
    return DictVariable(items)


def sum_(tx, iterable, start=None):
    total = start if start is not None else ConstantVariable(0)
    for item in iterable.unpack(tx):
        total = binary_op(tx, operator.add, total, item)
    return total


def min_max(fn):
    def fold(tx, *args, **kwargs):
        values = args[0].unpack(tx) if len(args) == 1 else list(args)
        if kwargs or not all(v.is_python_constant() for v in values):
            raise Unsupported(
                "data_dependent_branch", f"`{fn.__name__}()` of tensors compares their values"
            )
        return ConstantVariable(tx.run_python(fn, [v.as_python_constant() for v in values]))

    return fold


def super_(tx, *args):
    """`super()` reads the method's `__class__` cell and first argument, as CPython does."""
    if args:
        cls, obj = args
        return SuperVariable(class_of(cls), obj)
    cell = tx.cells.get("__class__")
    first = tx.code.co_varnames[0] if tx.code.co_argcount else None
    if cell is None or cell.contents is None or first is None:
        raise Unsupported("unsupported_value", "super() outside a method")
    return SuperVariable(class_of(tx.read(cell.contents)), tx.read_local(first))


def getattr_(tx, obj, name):
    return obj.get_attr(tx, name.as_python_constant())


HANDLERS = {
    len: length,
    isinstance: is_instance,
    range: lambda tx, *args: ConstantVariable(tx.run_python(range, *constant_args(args, {})[0])),
    enumerate: enumerate_,
    zip: zip_,
    reversed: lambda tx, seq: IteratorVariable(reversed(seq.unpack(tx))),
    iter: lambda tx, it: (
        it if isinstance(it, IteratorVariable) else IteratorVariable(it.unpack(tx))
    ),
    next: next_,
    list: lambda tx, it=None: ListVariable(it.unpack(tx) if it is not None else []),
    tuple: lambda tx, it=None: TupleVariable(it.unpack(tx) if it is not None else []),
    dict: dict_,
    sum: sum_,
    min: min_max(min),
    max: min_max(max),
    super: super_,
    getattr: getattr_,
}


def is_modeled_builtin(value) -> bool:
    return isinstance(value, (types.BuiltinFunctionType, type)) and (
        getattr(builtins, getattr(value, "__name__", ""), None) is value
        or getattr(value, "__module__", None) in ("math", "_operator")
    )
