/* What the files of vksycl._native share (native/module.c defines the helpers). */
#ifndef VKSYCL_NATIVE_H
#define VKSYCL_NATIVE_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Makes a type from `spec` (on `base`, or object's) and adds it to the module as `name`. */
int vksycl_add_type(PyObject *module, const char *name, PyType_Spec *spec, PyObject *base);
/* Sets `*str` to the interned string `text` once; -1 with an error set on failure. */
int vksycl_intern(PyObject **str, const char *text);

int vksycl_add_event_core(PyObject *module);
int vksycl_add_interned(PyObject *module);
int vksycl_add_capture_path(PyObject *module);

#endif
