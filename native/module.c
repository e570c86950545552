/* vksycl._native: vksycl's own C, the types every launch runs through that cost an
   interpreter frame or a dozen attribute stores as Python. Only CPython's API: it loads
   wherever the interpreter does, Vulkan loader or not, so the public vocabulary (ranges)
   may build on it. The Python modules that use it keep stand-ins for a source checkout
   where it was not built. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

int vksycl_add_event_core(PyObject *module);
int vksycl_add_interned(PyObject *module);
int vksycl_add_capture_path(PyObject *module);

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
