/* Kompute's binding is built as vksycl._kp, private to vksycl, so Python looks for
   PyInit__kp; the binding (PYBIND11_MODULE(kp, m)) defines PyInit_kp. */
#include <Python.h>

PyObject *PyInit_kp(void);

PyMODINIT_FUNC PyInit__kp(void) { return PyInit_kp(); }
