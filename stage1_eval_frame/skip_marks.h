/*
 * skip_marks.h -- stage 1's memory of SKIP answers (skip_marks.c), and the
 * names of CPython's "code extra" functions, which 3.12 renamed.
 */
#ifndef MINIDYNAMO_SKIP_MARKS_H
#define MINIDYNAMO_SKIP_MARKS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#if PY_VERSION_HEX >= 0x030c0000
/* 3.12 renamed the PEP 523 "code extra" functions; the old names warn. */
#define _PyEval_RequestCodeExtraIndex PyUnstable_Eval_RequestCodeExtraIndex
#define _PyCode_GetExtra PyUnstable_Code_GetExtra
#define _PyCode_SetExtra PyUnstable_Code_SetExtra
#endif

/* At import: reserve the extra slot and the list of marked codes. */
int skip_marks_init(void);
/* Does `callback` skip this code? The hot path for every hooked frame. */
int is_skipped_by(PyCodeObject *code, PyObject *callback);
/* Mark `code` as skipped by `callback` (0, or -1 with an exception set). */
int skip_for(PyObject *code, PyObject *callback);
/* Forget the marks of one code object, or of every code when `code` is NULL. */
int clear_marks(PyObject *code);
/* A new list of the live callbacks that skip `code`. */
PyObject *skipping_callbacks(PyObject *code);

#endif
