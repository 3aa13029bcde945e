"""Building values in the VM: dicts, sets, strings, slices, and what comprehensions fill.

These handlers are methods of the InstructionTranslator (vm.py), kept in a file of
their own because they only assemble Variables the stack already holds: `[a, *b]`,
`{k: v}`, `{x for x in xs}`, `f"{n:>4}"`, `x[1:n]` are a BUILD_* opcode, or an empty
container filled one LIST_APPEND / MAP_ADD / SET_ADD at a time by a comprehension.
(BUILD_TUPLE and BUILD_LIST, which every program uses, are in vm.py.)
"""

from ..dynamic_shapes import shapes
from ..errors import ObservedException, Unsupported
from ..python.dicts import DictVariable
from ..python.objects import UserObjectVariable
from ..python.sequences import TupleVariable
from ..python.sets import SetVariable
from ..variables import ConstantVariable, TensorVariable


class Building:
    """The container-, string- and slice-building handlers of InstructionTranslator."""

    def BUILD_MAP(self, inst):
        flat = self.popn(2 * inst.arg)
        result = DictVariable({})
        for key, value in zip(flat[::2], flat[1::2], strict=True):
            result.setitem(self, key, value)
        self.push(result)

    def BUILD_SET(self, inst):
        self.push(SetVariable(self.popn(inst.arg)))

    def SET_ADD(self, inst):
        item = self.pop()
        self.stack[-inst.arg].call_method(self, "add", [item], {})

    def SET_UPDATE(self, inst):
        items = self.pop()
        self.stack[-inst.arg].call_method(self, "update", [items], {})

    def BUILD_CONST_KEY_MAP(self, inst):
        keys = self.pop().as_python_constant()
        self.push(DictVariable(dict(zip(keys, self.popn(inst.arg), strict=True))))

    def BUILD_STRING(self, inst):
        self.push(ConstantVariable("".join(p.as_python_constant() for p in self.popn(inst.arg))))

    # f"{value!r:>4}": 3.11 and 3.12 convert and format in one FORMAT_VALUE (its argument's
    # flags say which conversion, and whether a spec is on the stack); 3.13 in CONVERT_VALUE,
    # then FORMAT_SIMPLE or FORMAT_WITH_SPEC.

    def FORMAT_VALUE(self, inst):
        spec = self.pop() if inst.arg & 0x04 else ConstantVariable("")
        self.push(self.formatted(self.converted(self.pop(), inst.arg & 0x03), spec))

    def CONVERT_VALUE(self, inst):
        self.push(self.converted(self.pop(), inst.arg))

    def FORMAT_SIMPLE(self, inst):
        self.push(self.formatted(self.pop(), ConstantVariable("")))

    def FORMAT_WITH_SPEC(self, inst):
        spec = self.pop()
        self.push(self.formatted(self.pop(), spec))

    def converted(self, value, conversion: int):
        """`!s`, `!r` or `!a` (1, 2, 3) of a value; 0: the value as it is."""
        if conversion == 0:
            return value
        convert = {1: str, 2: repr, 3: ascii}[conversion]
        return ConstantVariable(self.run_python(convert, self.format_operand(value)))

    def formatted(self, value, spec):
        python_value = self.format_operand(value)
        spec = spec.as_python_constant()
        return ConstantVariable(self.run_python(format, python_value, spec))

    def format_operand(self, value):
        if isinstance(value, TensorVariable):
            raise Unsupported("item_call", "formatting a tensor into a string reads its data")
        return value.as_python_constant()

    def LIST_APPEND(self, inst):
        item = self.pop()
        self.stack[-inst.arg].items.append(item)

    def LIST_EXTEND(self, inst):
        items = self.pop().unpack(self)
        self.stack[-inst.arg].items.extend(items)

    def LIST_TO_TUPLE(self, inst):
        self.push(TupleVariable(self.pop().items))

    def MAP_ADD(self, inst):
        value = self.pop()
        key = self.pop()
        self.stack[-inst.arg].setitem(self, key, value)

    def DICT_UPDATE(self, inst):
        update = self.pop()
        if not isinstance(update, DictVariable):
            raise Unsupported("unsupported_value", f"`**` of {update}")
        self.stack[-inst.arg].update(self, update, {})  # the keys' Variables too

    def DICT_MERGE(self, inst):
        update = self.pop()
        target = self.stack[-inst.arg]
        if isinstance(update, UserObjectVariable) and update.items_var(self) is not None:
            update = update.items_var(self)  # `**output` of a dict subclass
        if not isinstance(update, DictVariable) or set(update.items) & set(target.items):
            raise ObservedException(TypeError("`**` of a non-dict, or a repeated keyword"))
        target.update(self, update, {})

    # --- slices: `x[a:b]` (3.12: BINARY_SLICE), `x[a:b:c]`, `x[:, :n]` ------------------------

    def make_slice(self, parts):
        if any(isinstance(p, shapes.SymNodeVariable) for p in parts):
            return shapes.SymSliceVariable(parts)  # `x[:, :n]` for a symbolic n
        if not all(p.is_python_constant() for p in parts):
            raise Unsupported("unsupported_value", "a slice whose bounds are not Python constants")
        return ConstantVariable(slice(*(p.as_python_constant() for p in parts)))

    def BUILD_SLICE(self, inst):
        self.push(self.make_slice(self.popn(inst.arg)))

    def BINARY_SLICE(self, inst):
        stop, start, container = self.pop(), self.pop(), self.pop()
        self.push(container.getitem(self, self.make_slice([start, stop])))

    def STORE_SLICE(self, inst):
        stop, start, container, value = self.pop(), self.pop(), self.pop(), self.pop()
        container.setitem(self, self.make_slice([start, stop]), value)
