"""Names beyond a plain local, global or attribute: cells, deletions, imports, `super()`.

These handlers are methods of the InstructionTranslator (vm.py), kept in a file of their
own because a small model needs none of them: closure cells (a nested function's free
variables), 3.12's and 3.13's fused loads and stores of locals, `del`, assignments to
globals (written back to the module after the graph), `import` inside a function, and
3.12's LOAD_SUPER_ATTR.
"""

import importlib
import sys

from ..errors import ObservedException, Unsupported
from ..python.builtins_table import class_of
from ..python.callables import SuperVariable
from ..sources import ClosureSource, ImportSource, attr_of, item_of
from ..variables import NULL, CellVariable, LazyVariable, Variable


class Names:
    """The handlers of InstructionTranslator for cells, globals, `del`, `super()` and imports."""

    # --- locals: 3.12's comprehensions, 3.13's fused instructions -----------------------------

    def LOAD_FAST_LOAD_FAST(self, inst):  # 3.13: two LOAD_FASTs in one; argval holds both names
        for name in inst.argval:
            self.push(self.read_local(name))

    def LOAD_FAST_AND_CLEAR(self, inst):
        # 3.12 inlined comprehensions save the outer variable of the same name, NULL if unbound
        self.push(self.locals.pop(inst.argval, NULL))

    def STORE_FAST_STORE_FAST(self, inst):  # 3.13: the top of the stack goes to the first name
        for name in inst.argval:
            self.store_local(name, self.pop())

    def STORE_FAST_LOAD_FAST(self, inst):  # 3.13: STORE_FAST the first name, LOAD_FAST the second
        stored, loaded = inst.argval
        self.store_local(stored, self.pop())
        self.push(self.read_local(loaded))

    # --- closure cells ------------------------------------------------------------------------

    def bind_closure(self, function):
        """The root frame's free variables: the cells of the traced function's closure."""
        cells = zip(self.code.co_freevars, function.__closure__ or (), strict=True)
        for index, (name, cell) in enumerate(cells):
            source = ClosureSource(name, index)
            self.cells[name] = self.outside_cell(cell, source, source)

    def outside_cell(self, cell, source, contents_source) -> CellVariable:
        """The CellVariable of a real cell object (one per cell, however it was reached)."""
        if id(cell) not in self.outside_cells:
            try:
                contents = LazyVariable(cell.cell_contents, contents_source)
            except ValueError:  # an empty cell: the variable is not assigned yet
                contents = None
            self.outside_cells[id(cell)] = (cell, CellVariable(contents, source))
        return self.outside_cells[id(cell)][1]

    def closure_cells(self, fn, source) -> list:
        """The CellVariables of the closure of `fn`, a function from outside at `source`."""
        cells = []
        for i, cell in enumerate(fn.__closure__ or ()):
            cell_source = item_of(attr_of(source, "__closure__"), i)
            cells.append(
                self.outside_cell(cell, cell_source, attr_of(cell_source, "cell_contents"))
            )
        return cells

    def MAKE_CELL(self, inst):
        self.cells[inst.argval] = CellVariable(self.locals.pop(inst.argval, None))

    def LOAD_CLOSURE(self, inst):
        self.push(self.cells[inst.argval])

    def LOAD_DEREF(self, inst):
        cell = self.cells[inst.argval]
        if cell.contents is None:
            raise ObservedException(
                NameError(f"free variable {inst.argval!r} read before assignment")
            )
        cell.contents = self.read(cell.contents)
        self.push(cell.contents)

    def STORE_DEREF(self, inst):
        cell = self.cells[inst.argval]
        cell.contents = self.pop()
        if cell.source is not None:  # a cell of a function from outside: written back after
            self.side_effects.store_attr(cell, "cell_contents", cell.contents)

    # --- globals the code assigns -------------------------------------------------------------

    def STORE_GLOBAL(self, inst):
        # written back once the graph has run, like an attribute of the module
        self.side_effects.store_attr(self.globals_owner(), inst.argval, self.pop())

    def pending_global(self, name):
        """The value the trace assigned to global `name`, if it did (None otherwise)."""
        if not self.side_effects.stores:
            return None
        try:
            return self.side_effects.load_attr(self.globals_owner(), name)
        except Unsupported:  # globals that are not a module's: nothing was assigned to them
            return None

    def globals_owner(self) -> Variable:
        """The module whose globals this frame reads, as the object its assignments change."""
        name = self.globals.get("__name__")
        module = sys.modules.get(name) if isinstance(name, str) else None
        if module is None or vars(module) is not self.globals:
            raise Unsupported("unsupported_mutation", "globals that are not a module's")
        return self.wrap(module, ImportSource(name))

    # --- `del` --------------------------------------------------------------------------------

    def DELETE_FAST(self, inst):
        self.read_local(inst.argval)
        del self.locals[inst.argval]

    def DELETE_ATTR(self, inst):
        self.pop().del_attr(self, inst.argval)

    def DELETE_SUBSCR(self, inst):
        key, container = self.pop(), self.pop()
        container.call_method(self, "__delitem__", [key], {})

    # --- `super()` ----------------------------------------------------------------------------

    def LOAD_SUPER_ATTR(self, inst):
        # 3.12: `super().name` in one instruction: [global super, __class__, self] -> attribute
        obj, cls = self.pop(), self.pop()
        self.pop()
        attr = SuperVariable(class_of(cls), obj).get_attr(self, inst.argval)
        self.push_callable(attr, null=bool(inst.arg & 1))

    # --- imports ------------------------------------------------------------------------------

    def IMPORT_NAME(self, inst):
        # `import a.b` binds `a`; `from a.b import c` reads `c` from `a.b` (IMPORT_FROM). The
        # import itself runs now: importing is what eager would do at this line too.
        fromlist, level = self.pop().as_python_constant(), self.pop().as_python_constant()
        if level:
            raise Unsupported("untraceable_call", "a relative import inside a function")
        name = inst.argval
        self.run_python(importlib.import_module, name)
        top = name if fromlist else name.partition(".")[0]
        self.push(self.wrap(sys.modules[top], ImportSource(top)))

    def IMPORT_FROM(self, inst):
        self.push(self.stack[-1].get_attr(self, inst.argval))
