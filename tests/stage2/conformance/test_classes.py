"""Class statements inside the compiled function (Lib/test/test_class.py, test_super.py,
test_abc.py in CPython's manner): the body is traced, the class is the trace's own, and
what the class cannot be (made anew at each call, where it leaves the frame) breaks the
graph with a reason (stage2_symbolic_vm/python/class_statements.py)."""

import abc
from collections.abc import Callable
from typing import ClassVar, Optional

import pytest
import torch

import stage4_fx
from stage4_fx.breaks import GraphBreakError
from tests.oracle import assert_same_as_eager
from tests.stage2.conformance import check, outcome

pytestmark = pytest.mark.stage2


def methods_and_attributes(x, n):
    class Scale:
        factor: int = n  # the enclosing function's variable, read by the body
        calls = ()  # a class attribute the instances replace through their class

        def __init__(self, shift):
            self.shift = shift

        def __call__(self, t):
            type(self).calls += (len(self.calls),)
            return t * self.factor + self.shift

    first, second = Scale(1), Scale(2)
    Scale.factor = n + 1  # an assignment to the class, seen by both
    return second(first(x)), Scale.calls, Scale.__name__, Scale.__qualname__


def test_methods_attributes_and_class_assignments():
    assert check(methods_and_attributes, torch.ones(2), 3)[1:3] == ((0, 1), "Scale")


def inheritance(x):
    class Base:
        def f(self, t):
            return t + 1

    class Child(Base):
        def f(self, t):
            return super().f(t) * 2  # the __class__ cell, filled with the new class

    child = Child()
    return child.f(x), isinstance(child, Base), type(child).__mro__[1] is Base


def test_inheritance_and_super_between_classes_made_here():
    assert check(inheritance, torch.ones(2))[1:] == (True, True)


def local_exception(x):
    class Stop(ValueError):
        pass

    try:
        raise Stop("early")
    except ValueError as error:
        caught = (type(error).__name__, str(error))
    return x + 1, caught


def test_an_exception_class_made_here():
    assert check(local_exception, torch.ones(2))[1] == ("Stop", "early")


def abstract(x):
    class Shape(abc.ABC):
        @abc.abstractmethod
        def area(self): ...

    class Square(Shape):
        def area(self):
            return 4

    return x + Square().area(), outcome(Shape)


def test_an_abstract_class_refuses_an_instance_as_in_cpython():
    assert check(abstract, torch.ones(2))[1] == "TypeError"


def annotated(x):
    class Config:  # annotations are evaluated when the body runs (3.11 to 3.13)
        width: int = 4
        bias: Optional[float] = None  # noqa: UP045 (typing's spelling, as much code has it)
        tags: ClassVar[list[str]] = ()
        scale: float | None = 2.0
        hook: Callable[[int], int] | None = None  # collections.abc's own __class_getitem__

    return x * Config.width, Config.__annotations__, Config.bias, Config.tags


def test_annotations_in_a_class_body_are_evaluated_as_in_cpython():
    annotations = check(annotated, torch.ones(2))[1]
    bias = Optional[float]  # noqa: UP045 (the spelling under test)
    tags = ClassVar[list[str]]
    hook = Callable[[int], int] | None
    expected = {"width": int, "bias": bias, "tags": tags, "scale": float | None, "hook": hook}
    assert annotations == expected


def decorated(x):
    class Box:
        def __init__(self):
            self._size = 1

        @property
        def size(self):
            return self._size

        @size.setter
        def size(self, value):
            self._size = value * 2

        @staticmethod
        def three():
            return 3

        @classmethod
        def named(cls):
            return cls.__name__

    box = Box()
    box.size = 5  # the setter made in the trace, not the class's stand-in
    return (
        x * box.size + Box.three() + box.three(),
        Box.named(),
        box.named(),
        isinstance(Box.size, property),
    )


def test_property_staticmethod_and_classmethod_in_a_class_body():
    assert check(decorated, torch.ones(2))[1:] == ("Box", "Box", True)


class Registered:
    subclasses: ClassVar[list] = []

    def __init_subclass__(cls):
        cls.subclasses.append(cls)


def escapes(x):
    class Local:
        pass

    return x + 1, Local


def subclass_hook(x):
    class Local(Registered):
        pass

    return x + 1


def with_metaclass(x):
    class Local(metaclass=abc.ABCMeta):
        @abc.abstractmethod
        def f(self): ...

    return x + 1


@pytest.mark.parametrize(
    ("fn", "reason"),
    [
        (escapes, "each call of the code makes a new one"),
        (subclass_hook, "has its own __init_subclass__"),
        (with_metaclass, "metaclass=..."),
    ],
    ids=["escapes", "init-subclass", "metaclass"],
)
def test_what_the_trace_cannot_be_breaks_with_a_reason(fn, reason):
    with pytest.raises(GraphBreakError, match=reason):
        stage4_fx.compile(fn, backend="eager", fullgraph=True)(torch.ones(2))


def test_a_class_that_leaves_the_frame_is_new_at_each_call():
    """Without fullgraph the escape breaks the graph, and each call returns its own class,
    as eager does (one made at trace time would be the same at every call)."""
    compiled = stage4_fx.compile(escapes, backend="eager")
    first, second = compiled(torch.ones(2))[1], compiled(torch.ones(2))[1]
    assert first is not second and first.__name__ == "Local"
    assert Registered.subclasses == []


class Outside:
    def scale(self):
        return 2


def inherits_from_outside(x):
    class Local(Outside):
        def shifted(self):
            return super().scale() + 10

    local = Local()
    return x * local.scale(), x * local.shifted()


def test_a_method_inherited_from_a_class_outside_is_guarded(monkeypatch):
    """The class made here is the trace's own, but what it inherits from a class outside
    is read through that class (`G['Outside'].__dict__['scale']`), so changing it there
    recompiles rather than replays the old method, through `self.scale()` and `super()`."""
    compiled = stage4_fx.compile(inherits_from_outside, backend="eager")
    assert_same_as_eager(compiled, inherits_from_outside, torch.ones(2))
    monkeypatch.setattr(Outside, "scale", lambda self: 3)
    assert_same_as_eager(compiled, inherits_from_outside, torch.ones(2))
