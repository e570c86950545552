/* vksycl._native: vksycl's own C, the types every launch runs through that cost an
   interpreter frame or a dozen attribute stores as Python. Only CPython's API: it loads
   wherever the interpreter does, Vulkan loader or not, so the public vocabulary (ranges)
   may build on it. The Python modules that use it keep stand-ins for a source checkout
   where it was not built. */
#include "native.h"

int vksycl_add_type(PyObject *module, const char *name, PyType_Spec *spec, PyObject *base) {
    PyObject *type = base == NULL ? PyType_FromSpec(spec) : PyType_FromSpecWithBases(spec, base);
    if (type == NULL) return -1;
    int failed = PyModule_AddObjectRef(module, name, type);
    Py_DECREF(type);
    return failed;
}

int vksycl_intern(PyObject **str, const char *text) {
    if (*str == NULL) *str = PyUnicode_InternFromString(text);
    return *str == NULL ? -1 : 0;
}

static int add_types(PyObject *module) {
    if (vksycl_add_event_core(module) < 0 || vksycl_add_interned(module) < 0) return -1;
    return vksycl_add_capture_path(module);
}

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, (void *)add_types},
    {0, NULL},
};

static PyModuleDef native = {
    PyModuleDef_HEAD_INIT, "vksycl._native", "vksycl's own native types.", 0, NULL, slots,
};

PyMODINIT_FUNC PyInit__native(void) { return PyModuleDef_Init(&native); }
