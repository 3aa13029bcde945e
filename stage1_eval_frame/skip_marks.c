/*
 * skip_marks.c -- stage 1: which callbacks answered SKIP for a code object.
 *
 * A callback that answers SKIP for a frame is not asked again about its code
 * object: later frames of that code run as usual without leaving C, so a frame
 * that will never be compiled (torch's own code, a function with nothing to
 * compile, one that cannot be captured) costs nothing after its first call.
 * torch does the same with the SKIP_CODE marker it keeps in the code's extra
 * slot (torch/csrc/dynamo/extra_state.cpp).
 *
 * torch's marker holds for every callback; ours names the callback that asked
 * for it. Two compile() calls with different options have different callbacks,
 * and "nothing to compile here" for one (run eagerly, say) must not hide the
 * frame from the other (which may have fullgraph=True, or compile that very
 * function). So the mark is a list of *weak* references to the callbacks that
 * skip the code, kept in a second extra slot: weak, so that a code object of
 * torch, which lives as long as the process, does not keep a compile()'s
 * callback (and its caches and graphs) alive; and a dead callback's reference
 * reads None, so a new callback that happens to get its address is not taken
 * for it. `marked_codes` lists (weakly) every code that has a list of marks,
 * so that clear_skip_marks() can find them: when the callbacks' caches are
 * reset, their marks must go too. */
#include "skip_marks.h"

static Py_ssize_t marks_index = -1;
static PyObject *marked_codes = NULL; /* list of weak references to code objects */
static Py_ssize_t marked_codes_pruned = 0; /* its length after the last pruning */

/* What a weak reference points to (borrowed), or Py_None once the object died.
 * 3.13 deprecates PyWeakref_GET_OBJECT, whose borrowed answer another thread
 * could free where there is no GIL; we run with the GIL held (see the check in
 * _eval_frame.c), so the object lives while we use it, as on 3.11 and 3.12. */
static PyObject *
referent(PyObject *ref)
{
#if PY_VERSION_HEX >= 0x030d0000
    PyObject *object = NULL;
    if (PyWeakref_GetRef(ref, &object) <= 0) { /* dead (0); -1 only for a non-weakref */
        return Py_None;
    }
    Py_DECREF(object); /* the object's other owners keep it alive */
    return object;
#else
    return PyWeakref_GET_OBJECT(ref);
#endif
}

/* The marks of a code object (a borrowed list), or NULL if it has none. */
static PyObject *
marks_of(PyObject *code)
{
    void *extra = NULL;
    if (_PyCode_GetExtra(code, marks_index, &extra) < 0) {
        PyErr_Clear(); /* cannot happen for a code object and a valid index */
        return NULL;
    }
    return (PyObject *)extra;
}

/* Does `callback` skip this code? The hot path for every hooked frame. */
int
is_skipped_by(PyCodeObject *code, PyObject *callback)
{
    PyObject *marks = marks_of((PyObject *)code);
    if (marks == NULL) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(marks); i++) {
        if (referent(PyList_GET_ITEM(marks, i)) == callback) {
            return 1;
        }
    }
    return 0;
}

/* Drop the references to dead objects from a list of weak references. */
static int
drop_dead_references(PyObject *refs)
{
    Py_ssize_t kept = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(refs); i++) {
        PyObject *ref = PyList_GET_ITEM(refs, i);
        if (referent(ref) != Py_None) {
            Py_INCREF(ref);
            PyList_SetItem(refs, kept++, ref); /* drops the reference it replaces */
        }
    }
    return PyList_SetSlice(refs, kept, PyList_GET_SIZE(refs), NULL);
}

/* Remember that this code has a list of marks, for clear_skip_marks(). Codes
 * that died are pruned whenever the list has doubled since the last pruning. */
static int
remember_marked(PyObject *code)
{
    PyObject *ref = PyWeakref_NewRef(code, NULL);
    if (ref == NULL) {
        return -1;
    }
    int failed = PyList_Append(marked_codes, ref);
    Py_DECREF(ref);
    if (!failed && PyList_GET_SIZE(marked_codes) >= 2 * marked_codes_pruned + 64) {
        failed = drop_dead_references(marked_codes);
        marked_codes_pruned = PyList_GET_SIZE(marked_codes);
    }
    return failed;
}

/* Mark `code` as skipped by `callback`. A callback that cannot be weakly
 * referenced (an instance of a class with __slots__ and no __weakref__) is not
 * marked: it is asked again at each frame of the code, which is slower, not wrong. */
int
skip_for(PyObject *code, PyObject *callback)
{
    PyObject *ref = PyWeakref_NewRef(callback, NULL);
    if (ref == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) {
            return -1;
        }
        PyErr_Clear(); /* "cannot create weak reference to ... object": no mark */
        return 0;
    }
    PyObject *marks = marks_of(code);
    if (marks == NULL) { /* the list lives as long as the code: free_marks() drops it */
        marks = PyList_New(0);
        if (marks == NULL || _PyCode_SetExtra(code, marks_index, marks) < 0) {
            Py_XDECREF(marks);
            Py_DECREF(ref);
            return -1;
        }
        if (remember_marked(code) < 0) {
            Py_DECREF(ref);
            return -1;
        }
    }
    /* Dead callbacks' references go, so that the list stays as short as the
     * number of live callbacks that skip this code. Two threads may both have
     * asked the callback before either marked the code: mark it once. */
    int failed = drop_dead_references(marks);
    if (!failed && !is_skipped_by((PyCodeObject *)code, callback)) {
        failed = PyList_Append(marks, ref);
    }
    Py_DECREF(ref);
    return failed;
}

/* CPython calls this when a code object with marks is freed. */
static void
free_marks(void *marks)
{
    Py_XDECREF((PyObject *)marks);
}

int
clear_marks(PyObject *code)
{
    if (code != NULL) {
        PyObject *marks = marks_of(code);
        return marks == NULL ? 0 : PyList_SetSlice(marks, 0, PyList_GET_SIZE(marks), NULL);
    }
    /* Each code's list is emptied, not taken away: it stays in `marked_codes`. */
    if (drop_dead_references(marked_codes) < 0) {
        return -1;
    }
    marked_codes_pruned = PyList_GET_SIZE(marked_codes);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(marked_codes); i++) {
        PyObject *marks = marks_of(referent(PyList_GET_ITEM(marked_codes, i)));
        if (marks != NULL && PyList_SetSlice(marks, 0, PyList_GET_SIZE(marks), NULL) < 0) {
            return -1;
        }
    }
    return 0;
}

PyObject *
skipping_callbacks(PyObject *code)
{
    PyObject *callbacks = PyList_New(0);
    PyObject *marks = marks_of(code);
    for (Py_ssize_t i = 0; callbacks != NULL && marks != NULL && i < PyList_GET_SIZE(marks); i++) {
        PyObject *callback = referent(PyList_GET_ITEM(marks, i));
        if (callback != Py_None && PyList_Append(callbacks, callback) < 0) {
            Py_CLEAR(callbacks);
        }
    }
    return callbacks;
}

int
skip_marks_init(void)
{
    marks_index = _PyEval_RequestCodeExtraIndex(free_marks);
    marked_codes = PyList_New(0);
    return marks_index < 0 || marked_codes == NULL ? -1 : 0;
}
