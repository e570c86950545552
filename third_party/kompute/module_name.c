/* Kompute's binding is built as vksycl._kp, private to vksycl, so Python looks for
   PyInit__kp; the binding (PYBIND11_MODULE(kp, m)) defines PyInit_kp. The module also
   holds vksycl's native types (native/): added by an execution step after the binding's
   own where pybind11 initializes in phases (PEP 489), else to the module it returns. */
#include <Python.h>

PyObject *PyInit_kp(void);
int vksycl_add_native(PyObject *module);
int vksycl_add_interned(PyObject *module);

enum { MOST_SLOTS = 16 };
static PyModuleDef_Slot slots[MOST_SLOTS];
static PyModuleDef with_native;

static int add_native(PyObject *module) {
    return vksycl_add_native(module) < 0 ? -1 : vksycl_add_interned(module);
}

PyMODINIT_FUNC PyInit__kp(void) {
    PyObject *made = PyInit_kp();
    if (made == NULL) return NULL;
    if (!PyObject_TypeCheck(made, &PyModuleDef_Type)) {  /* a module: single phase */
        if (add_native(made) < 0) {
            Py_DECREF(made);
            return NULL;
        }
        return made;
    }
    const PyModuleDef *binding = (const PyModuleDef *)made;
    int n = 0;
    for (const PyModuleDef_Slot *s = binding->m_slots; s != NULL && s->slot; ++s) {
        if (n == MOST_SLOTS - 2) {
            PyErr_SetString(PyExc_ImportError, "vksycl._kp: too many module slots");
            return NULL;
        }
        slots[n++] = *s;
    }
    slots[n++] = (PyModuleDef_Slot){Py_mod_exec, (void *)add_native};
    slots[n] = (PyModuleDef_Slot){0, NULL};
    with_native = *binding;
    with_native.m_base = (PyModuleDef_Base)PyModuleDef_HEAD_INIT;
    with_native.m_slots = slots;
    return PyModuleDef_Init(&with_native);
}
