/*
 * _eval_frame.c -- stage 1 of minidynamo: a PEP 523 frame evaluator.
 *
 * CPython runs every Python function call by handing a frame (the function's
 * code, globals and a fresh array of local-variable slots holding the
 * arguments) to the interpreter's "eval frame" function. PEP 523 made that
 * function replaceable: `_PyInterpreterState_SetEvalFrameFunc` installs ours,
 * and from then on every new frame passes through `minidynamo_eval` below
 * before its first instruction runs. That is where TorchDynamo starts
 * (torch/csrc/dynamo/eval_frame.c), and where minidynamo starts.
 *
 * For each new frame of a plain Python function we call a Python callback
 * with a small `Frame` object describing it. The callback answers:
 *   None         -> run the frame as usual (_PyEval_EvalFrameDefault);
 *   a callable   -> call it with the frame's argument slots instead, and
 *                   return its result (or exception) as the call's;
 *   SKIP         -> run the frame as usual, and never ask this callback about
 *                   this code object again (skip_marks.c remembers).
 *
 * A reader who knows C but not CPython's internals needs three facts:
 *   1. `_PyInterpreterFrame` (internal/pycore_frame.h, read through
 *      Py_BUILD_CORE) is the frame: the code (`f_code`; 3.13 calls it
 *      `f_executable`, as a frame may one day run something other than a
 *      code object), `f_globals`, `f_builtins`, the function (`f_func` in
 *      3.11, `f_funcobj` since 3.12) and `localsplus[]`, whose first slots
 *      are the arguments in order: positional, keyword-only, then the *args
 *      tuple and the **kwargs dict. FRAME_CODE and FRAME_FUNCTION below
 *      name the fields the same way on every version.
 *   2. Our function is called with a borrowed frame; the evaluator that
 *      runs it must also end it. 3.11 ends frames in the caller, 3.12 and
 *      3.13 in the evaluator -- see finish_without_running().
 *   3. The hook is per interpreter in CPython; we make it per thread by
 *      keeping the callback in thread-local storage.
 * And one consequence: while our evaluator is installed, CPython no longer
 * runs a Python call inside the caller's C frame ("inlining"), so every Python
 * frame costs C stack. Deep recursion would overflow the C stack where plain
 * CPython would not, so the evaluator steps aside when a thread is deep (see
 * run_frame()).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h> /* T_OBJECT, READONLY */

#include "skip_marks.h" /* SKIP answers, remembered per code object */

#if PY_VERSION_HEX < 0x030b0000 || PY_VERSION_HEX >= 0x030e0000
#error "minidynamo's frame evaluator supports CPython 3.11, 3.12 and 3.13 only"
#endif
#ifdef Py_GIL_DISABLED
/* The per-thread state below is safe because the GIL runs one thread at a time. */
#error "minidynamo's frame evaluator needs the GIL: use a default (not free-threaded) CPython"
#endif

#define Py_BUILD_CORE
#include <internal/pycore_frame.h>
#undef Py_BUILD_CORE

#if PY_VERSION_HEX >= 0x030d0000
#define FRAME_CODE(frame) _PyFrame_GetCode(frame) /* f_executable: code, in a function frame */
#else
#define FRAME_CODE(frame) ((frame)->f_code)
#endif
#if PY_VERSION_HEX >= 0x030c0000
#define FRAME_FUNCTION(frame) ((frame)->f_funcobj)
#else
#define FRAME_FUNCTION(frame) ((PyObject *)(frame)->f_func)
#endif

/* ---- Per-thread state ---------------------------------------------------
 * The callback of this thread (borrowed: the thread's CallbackHolder owns it,
 * see below) and whether the callback is running right now: while it runs,
 * every frame -- including the callback's own -- passes straight through, so
 * it cannot recurse into itself. torch keeps the same two facts in
 * thread-locals. `thread_depth` counts the frames this thread runs through our
 * evaluator, one inside the other, outside the callback. */
static _Thread_local PyObject *thread_callback = NULL;
static _Thread_local int thread_paused = 0;
static _Thread_local int thread_depth = 0;

/* How many threads have a callback. The evaluator is installed while one
 * does, so that a program not using the hook runs at full speed: with a
 * custom evaluator, CPython stops inlining Python-to-Python calls. */
static Py_ssize_t threads_with_callback = 0;

/* The evaluator before ours: CPython's, or another tool's (torch.compile
 * installs its own). Frames we let run go to it, and it comes back when no
 * thread has a callback. */
static _PyFrameEvalFunction previous_eval = NULL;

/* Frames deeper than this in one thread run without our evaluator: each
 * hooked frame costs C stack (a C frame of ours) and, since 3.12, two units of
 * CPython's C-recursion budget (1,500 on 3.12; on 3.13 it depends on the build),
 * which plain CPython does not spend.
 * While a thread is that deep, the evaluator steps aside for every thread
 * (the hook is per interpreter): the frames below run as CPython runs them,
 * uncompiled, and a warning says so once. */
#define MAX_HOOKED_DEPTH 400
static Py_ssize_t threads_too_deep = 0;
static int warned_too_deep = 0;

/* Code objects marked by skip_code() carry this in their "extra" slot, an
 * array CPython reserves on code objects for tools like us (PEP 523). */
static Py_ssize_t skip_index = -1;
#define SKIP_MARK ((void *)1)

/* The SKIP object callbacks return; the marks it leaves are in skip_marks.c. */
static PyObject *skip_answer = NULL;

/* The exception we raise into a frame to make CPython (3.12 and later) unwind it. */
static PyObject *unwind_marker = NULL;

/* ---- The Frame object handed to the callback ----------------------------
 * A snapshot, not the live frame: it holds strong references, so a callback
 * may keep it after the call has returned. */
typedef struct {
    PyObject_HEAD
    PyObject *code;
    PyObject *globals;
    PyObject *builtins;
    PyObject *function;
    PyObject *slots;     /* tuple: the argument slots, in order */
    PyObject *arguments; /* dict name -> value, built on first access */
} FrameObject;

static PyTypeObject FrameType;

/* The number of argument slots: positional, keyword-only, *args, **kwargs. */
static Py_ssize_t
argument_slot_count(PyCodeObject *code)
{
    return code->co_argcount + code->co_kwonlyargcount +
           ((code->co_flags & CO_VARARGS) != 0) + ((code->co_flags & CO_VARKEYWORDS) != 0);
}

static PyObject *
frame_snapshot(_PyInterpreterFrame *frame)
{
    PyCodeObject *code = FRAME_CODE(frame);
    Py_ssize_t n = argument_slot_count(code);
    PyObject *slots = PyTuple_New(n);
    if (slots == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTuple_SET_ITEM(slots, i, Py_NewRef(frame->localsplus[i]));
    }
    FrameObject *self = PyObject_GC_New(FrameObject, &FrameType);
    if (self == NULL) {
        Py_DECREF(slots);
        return NULL;
    }
    self->code = Py_NewRef((PyObject *)code);
    self->globals = Py_NewRef(frame->f_globals);
    self->builtins = Py_NewRef(frame->f_builtins);
    self->function = Py_NewRef(FRAME_FUNCTION(frame));
    self->slots = slots;
    self->arguments = NULL;
    PyObject_GC_Track(self);
    return (PyObject *)self;
}

static PyObject *
frame_arguments(FrameObject *self, void *Py_UNUSED(closure))
{
    if (self->arguments == NULL) {
        /* The argument names are the first names of co_varnames. */
        PyObject *names = PyObject_GetAttrString(self->code, "co_varnames");
        if (names == NULL) {
            return NULL;
        }
        PyObject *arguments = PyDict_New();
        for (Py_ssize_t i = 0; arguments != NULL && i < PyTuple_GET_SIZE(self->slots); i++) {
            if (PyDict_SetItem(arguments, PyTuple_GET_ITEM(names, i),
                               PyTuple_GET_ITEM(self->slots, i)) < 0) {
                Py_CLEAR(arguments);
            }
        }
        Py_DECREF(names);
        self->arguments = arguments;
    }
    return Py_XNewRef(self->arguments);
}

static PyObject *
frame_repr(FrameObject *self)
{
    PyCodeObject *code = (PyCodeObject *)self->code;
    return PyUnicode_FromFormat("<Frame %U at %U:%d>", code->co_qualname, code->co_filename,
                                code->co_firstlineno);
}

static int
frame_traverse(FrameObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->code);
    Py_VISIT(self->globals);
    Py_VISIT(self->builtins);
    Py_VISIT(self->function);
    Py_VISIT(self->slots);
    Py_VISIT(self->arguments);
    return 0;
}

static int
frame_clear(FrameObject *self)
{
    Py_CLEAR(self->code);
    Py_CLEAR(self->globals);
    Py_CLEAR(self->builtins);
    Py_CLEAR(self->function);
    Py_CLEAR(self->slots);
    Py_CLEAR(self->arguments);
    return 0;
}

static void
frame_dealloc(FrameObject *self)
{
    PyObject_GC_UnTrack(self);
    frame_clear(self);
    PyObject_GC_Del(self);
}

static PyMemberDef frame_members[] = {
    {"code", T_OBJECT, offsetof(FrameObject, code), READONLY, "the code object about to run"},
    {"globals", T_OBJECT, offsetof(FrameObject, globals), READONLY, "the function's globals"},
    {"builtins", T_OBJECT, offsetof(FrameObject, builtins), READONLY, "the frame's builtins"},
    {"function", T_OBJECT, offsetof(FrameObject, function), READONLY, "the function called"},
    {"slots", T_OBJECT, offsetof(FrameObject, slots), READONLY,
     "the argument slots in order: positional, keyword-only, *args, **kwargs"},
    {NULL},
};

static PyGetSetDef frame_getset[] = {
    {"arguments", (getter)frame_arguments, NULL, "the arguments by name (a dict)", NULL},
    {NULL},
};

static PyTypeObject FrameType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "stage1_eval_frame.Frame",
    .tp_doc = "What the callback sees of a frame about to run.",
    .tp_basicsize = sizeof(FrameObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_dealloc = (destructor)frame_dealloc,
    .tp_traverse = (traverseproc)frame_traverse,
    .tp_clear = (inquiry)frame_clear,
    .tp_repr = (reprfunc)frame_repr,
    .tp_members = frame_members,
    .tp_getset = frame_getset,
};

/* ---- SKIP, the third answer of a callback ---------------------------------- */
static PyObject *
skip_repr(PyObject *Py_UNUSED(self))
{
    return PyUnicode_FromString("SKIP");
}

static PyTypeObject SkipType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "stage1_eval_frame.Skip",
    .tp_doc = "The callback's answer: run this frame as usual and do not ask about its code again.",
    .tp_basicsize = sizeof(PyObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_repr = skip_repr,
};

/* ---- Ending a frame that we did not run ----------------------------------
 * In 3.11 the caller (_PyEval_Vector) clears and pops the frame after the
 * evaluator returns, so there is nothing to do. Since 3.12 the evaluator must do
 * it, and the functions that do are private to CPython. Rather than copy them
 * (torch copies them into cpython_defs.c), we ask CPython to do it: we enter
 * the default evaluator with `throwflag` set and a pending exception, as
 * generator.throw() does. The frame has not started, no exception handler
 * covers that point, so CPython unwinds it -- clearing its slots and popping
 * it exactly as for any exception -- and returns NULL. We then drop our marker
 * exception and put back the replacement's own result or exception.
 * (A tracer or sys.monitoring tool sees that frame start and unwind.) */
static PyObject *
finish_without_running(PyThreadState *tstate, _PyInterpreterFrame *frame, PyObject *result)
{
#if PY_VERSION_HEX >= 0x030c0000
    PyObject *pending = PyErr_GetRaisedException(); /* the replacement's, if it raised */
    PyErr_SetRaisedException(Py_NewRef(unwind_marker));
    PyObject *unwound = _PyEval_EvalFrameDefault(tstate, frame, 1);
    assert(unwound == NULL);
    Py_XDECREF(unwound);
    PyErr_Clear();
    /* 3.13 counts a frame that has not started as started (its instr_ptr is at the first
     * instruction; 3.12's prev_instr was before it), so the unwinding adds the frame to the
     * marker's traceback, which would keep every replaced frame's arguments alive. */
    PyException_SetTraceback(unwind_marker, Py_None);
    PyErr_SetRaisedException(pending);
#else
    (void)tstate;
    (void)frame;
#endif
    return result;
}

/* Frames the hook shows to the callback: plain function frames that are
 * about to start. Generators, coroutines, module and class bodies (no
 * CO_OPTIMIZED), and frames resumed with an exception run as usual. */
static int
is_hookable(_PyInterpreterFrame *frame, int throwflag)
{
    PyCodeObject *code = FRAME_CODE(frame);
    void *extra = NULL;
    if (throwflag || frame->owner != FRAME_OWNED_BY_THREAD) {
        return 0;
    }
    if (!(code->co_flags & CO_OPTIMIZED) ||
        (code->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR))) {
        return 0;
    }
    if (_PyCode_GetExtra((PyObject *)code, skip_index, &extra) < 0) {
        PyErr_Clear();
        return 1;
    }
    return extra != SKIP_MARK;
}

/* ---- The evaluator ------------------------------------------------------ */
static void update_installed_evaluator(void);

/* Run a frame with the evaluator before ours, counting how deep this thread
 * is. The frame that reaches MAX_HOOKED_DEPTH uninstalls our evaluator for as
 * long as it runs: everything it calls runs (and recurses) as in plain
 * CPython. */
static PyObject *
run_frame(PyThreadState *tstate, _PyInterpreterFrame *frame, int throwflag)
{
    int stepped_aside = ++thread_depth == MAX_HOOKED_DEPTH;
    if (stepped_aside) {
        threads_too_deep++;
        update_installed_evaluator();
        if (!warned_too_deep && !PyErr_Occurred()) { /* not while an error is thrown in */
            warned_too_deep = 1;
            PyCodeObject *code = FRAME_CODE(frame); /* the warning points at the deep function */
            PyObject *message = PyUnicode_FromString(
                "minidynamo: frames nested deeper than 400 run without the frame hook (as "
                "plain Python), so that deep recursion does not overflow the C stack");
            if (message == NULL || PyErr_WarnExplicitObject(PyExc_RuntimeWarning, message,
                                                            code->co_filename,
                                                            code->co_firstlineno, NULL, NULL) < 0) {
                PyErr_Clear(); /* a warning turned into an error: the frame still runs */
            }
            Py_XDECREF(message);
        }
    }
    PyObject *result = previous_eval(tstate, frame, throwflag);
    thread_depth--;
    if (stepped_aside) {
        threads_too_deep--;
        update_installed_evaluator();
    }
    return result;
}

static PyObject *
minidynamo_eval(PyThreadState *tstate, _PyInterpreterFrame *frame, int throwflag)
{
    PyObject *callback = thread_callback;
    if (thread_paused) {
        /* The callback's own frames (the compiler: a VM inlining 32 calls deep is
         * hundreds of frames) are not counted: stepping aside for them would
         * unhook every thread while one compiles, and the compiler's depth is
         * bounded (MAX_INLINE_DEPTH) where a user's recursion is not. */
        return previous_eval(tstate, frame, throwflag);
    }
    if (callback == NULL || !is_hookable(frame, throwflag) ||
        is_skipped_by(FRAME_CODE(frame), callback)) {
        return run_frame(tstate, frame, throwflag);
    }

    /* Ask the callback, with the hook paused for this thread. The callback
     * may replace itself (set_eval_frame), so hold our own reference. */
    PyObject *snapshot = frame_snapshot(frame);
    if (snapshot == NULL) {
        return finish_without_running(tstate, frame, NULL);
    }
    Py_INCREF(callback);
    thread_paused = 1;
    PyObject *replacement = PyObject_CallOneArg(callback, snapshot);
    thread_paused = 0;

    if (replacement == skip_answer && skip_for((PyObject *)FRAME_CODE(frame), callback) < 0) {
        Py_CLEAR(replacement); /* no memory for the mark: the call raises MemoryError */
    }
    Py_DECREF(callback);
    if (replacement == Py_None || replacement == skip_answer) {
        Py_DECREF(replacement);
        Py_DECREF(snapshot);
        return run_frame(tstate, frame, throwflag);
    }
    if (replacement != NULL && !PyCallable_Check(replacement)) {
        PyErr_Format(PyExc_TypeError,
                     "the eval-frame callback must return None, SKIP or a callable, not %.100s",
                     Py_TYPE(replacement)->tp_name);
        Py_CLEAR(replacement);
    }
    /* A replacement that is replaced in turn never reaches the default
     * evaluator, which is where CPython counts recursion: count it here, so
     * that an endless chain raises RecursionError instead of overflowing the
     * C stack. The hook stays on while the replacement runs: what it calls
     * is seen. */
    PyObject *result = NULL;
    if (replacement != NULL && !Py_EnterRecursiveCall(" in a frame replaced by the hook")) {
        PyObject *slots = ((FrameObject *)snapshot)->slots;
        result = PyObject_Vectorcall(replacement, &PyTuple_GET_ITEM(slots, 0),
                                     PyTuple_GET_SIZE(slots), NULL);
        Py_LeaveRecursiveCall();
    }
    Py_XDECREF(replacement);
    Py_DECREF(snapshot);
    return finish_without_running(tstate, frame, result);
}

/* ---- The module's functions --------------------------------------------- */
static void
update_installed_evaluator(void)
{
    PyInterpreterState *interp = PyInterpreterState_Get();
    int wanted = threads_with_callback > 0 && threads_too_deep == 0;
    _PyFrameEvalFunction current = _PyInterpreterState_GetEvalFrameFunc(interp);
    if (wanted && current != minidynamo_eval) {
        previous_eval = current; /* CPython's, or another tool's: we give it back */
        _PyInterpreterState_SetEvalFrameFunc(interp, minidynamo_eval);
    }
    else if (!wanted && current == minidynamo_eval) {
        _PyInterpreterState_SetEvalFrameFunc(interp, previous_eval);
    }
}

/* A thread's callback is owned by a small object in the thread's state dict
 * (PyThreadState_GetDict), so that when the thread ends -- CPython clears that
 * dict -- the callback is released and the thread stops counting, even if it
 * never turned the hook off. `thread_callback` is a fast borrowed copy. */
typedef struct {
    PyObject_HEAD
    PyObject *callback;
} HolderObject;

static void
holder_dealloc(HolderObject *self)
{
    if (self->callback != NULL) {
        threads_with_callback--;
        update_installed_evaluator();
        Py_CLEAR(self->callback);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject HolderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "stage1_eval_frame._CallbackHolder",
    .tp_doc = "Owns a thread's callback; released with the thread's state.",
    .tp_basicsize = sizeof(HolderObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)holder_dealloc,
};

static PyObject *holder_key = NULL; /* the key of the holder in the thread's state dict */

static PyObject *
set_eval_frame(PyObject *Py_UNUSED(module), PyObject *callback)
{
    if (callback != Py_None && !PyCallable_Check(callback)) {
        PyErr_Format(PyExc_TypeError,
                     "set_eval_frame() takes a callable or None, not %.100s",
                     Py_TYPE(callback)->tp_name);
        return NULL;
    }
    PyObject *thread_dict = PyThreadState_GetDict();
    if (thread_dict == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "set_eval_frame(): no thread state");
        return NULL;
    }
    PyObject *previous = Py_NewRef(thread_callback != NULL ? thread_callback : Py_None);
    if (callback == Py_None) {
        thread_callback = NULL;
        if (PyDict_DelItem(thread_dict, holder_key) < 0) { /* the holder lets go */
            PyErr_Clear();                                /* there was none */
        }
        return previous;
    }
    HolderObject *holder = PyObject_New(HolderObject, &HolderType);
    if (holder == NULL) {
        Py_DECREF(previous);
        return NULL;
    }
    holder->callback = Py_NewRef(callback);
    threads_with_callback++;
    thread_callback = callback;
    /* Replacing an older holder releases its callback (and uncounts it). */
    int failed = PyDict_SetItem(thread_dict, holder_key, (PyObject *)holder);
    Py_DECREF(holder);
    update_installed_evaluator();
    if (failed < 0) {
        Py_DECREF(previous);
        return NULL;
    }
    return previous;
}

/* evaluator(): which evaluator the interpreter uses now, for tests and curious readers. */
static PyObject *
evaluator(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    _PyFrameEvalFunction current = _PyInterpreterState_GetEvalFrameFunc(PyInterpreterState_Get());
    const char *name = current == minidynamo_eval           ? "minidynamo"
                       : current == _PyEval_EvalFrameDefault ? "default"
                                                              : "another tool's";
    return PyUnicode_FromString(name);
}

static PyObject *
get_eval_frame(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    return Py_NewRef(thread_callback != NULL ? thread_callback : Py_None);
}

/* 0 if `code` is a code object, else -1 with a TypeError naming the function. */
static int
check_code(PyObject *code, const char *function)
{
    if (PyCode_Check(code)) {
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "%s() takes a code object, not %.100s", function,
                 Py_TYPE(code)->tp_name);
    return -1;
}

static PyObject *
skip_code(PyObject *Py_UNUSED(module), PyObject *code)
{
    if (check_code(code, "skip_code") < 0 || _PyCode_SetExtra(code, skip_index, SKIP_MARK) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* clear_skip_marks(code=None): forget the SKIP answers of every callback, for
 * one code object or for all of them (a reset of the caches that gave them). */
static PyObject *
clear_skip_marks(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *code = Py_None;
    if (!PyArg_ParseTuple(args, "|O:clear_skip_marks", &code)) {
        return NULL;
    }
    if (code != Py_None && check_code(code, "clear_skip_marks") < 0) {
        return NULL;
    }
    if (clear_marks(code == Py_None ? NULL : code) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* skip_marks(code): the live callbacks that answered SKIP for this code. */
static PyObject *
skip_marks(PyObject *Py_UNUSED(module), PyObject *code)
{
    return check_code(code, "skip_marks") < 0 ? NULL : skipping_callbacks(code);
}

/* call_unhooked(fn, *args, **kwargs): run fn with the hook paused in this
 * thread -- how later stages run a compiled graph, which must not be traced. */
static PyObject *
call_unhooked(PyObject *Py_UNUSED(module), PyObject *const *args, size_t nargsf,
              PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "call_unhooked() needs a function to call");
        return NULL;
    }
    int was_paused = thread_paused;
    thread_paused = 1;
    PyObject *result = PyObject_Vectorcall(args[0], args + 1, nargs - 1, kwnames);
    thread_paused = was_paused;
    return result;
}

static PyMethodDef module_methods[] = {
    {"set_eval_frame", set_eval_frame, METH_O,
     "set_eval_frame(callback) -> previous callback of this thread (None to turn the hook off)"},
    {"get_eval_frame", get_eval_frame, METH_NOARGS, "The callback of this thread, or None."},
    {"evaluator", evaluator, METH_NOARGS,
     "Which frame evaluator the interpreter uses now: 'minidynamo', 'default', or another's."},
    {"skip_code", skip_code, METH_O,
     "Never show frames of this code object to the callback (they run as usual)."},
    {"clear_skip_marks", clear_skip_marks, METH_VARARGS,
     "clear_skip_marks(code=None): forget the callbacks' SKIP answers (for one code, or all)"},
    {"skip_marks", skip_marks, METH_O,
     "skip_marks(code) -> the callbacks that answered SKIP for this code object"},
    {"call_unhooked", (PyCFunction)(void (*)(void))call_unhooked,
     METH_FASTCALL | METH_KEYWORDS, "call_unhooked(fn, *args, **kwargs): call fn with the hook off"},
    {NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "stage1_eval_frame._eval_frame",
    .m_doc = "A PEP 523 frame evaluator that shows each new Python frame to a callback.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__eval_frame(void)
{
    if (PyType_Ready(&FrameType) < 0 || PyType_Ready(&HolderType) < 0 ||
        PyType_Ready(&SkipType) < 0) {
        return NULL;
    }
    previous_eval = _PyEval_EvalFrameDefault;
    holder_key = PyUnicode_InternFromString("minidynamo.callback");
    if (holder_key == NULL) {
        return NULL;
    }
    skip_index = _PyEval_RequestCodeExtraIndex(NULL);
    if (skip_index < 0 || skip_marks_init() < 0) {
        return NULL;
    }
    skip_answer = PyObject_New(PyObject, &SkipType);
    if (skip_answer == NULL) {
        return NULL;
    }
    unwind_marker = PyObject_CallFunction(PyExc_SystemError, "s",
                                          "minidynamo: unwinding a frame that was replaced");
    if (unwind_marker == NULL) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(module, "Frame", (PyObject *)&FrameType) < 0 ||
        PyModule_AddObjectRef(module, "SKIP", skip_answer) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
