/* The constructors of `sycl.range`, `sycl.id` and `sycl.nd_range`, in C. They are
   immutable, so equal arguments give the very object made before (a repeated launch then
   knows its range by identity); most launches spelled with a new range therefore find
   theirs in a dict, which as a Python `__new__` cost an interpreter frame per range
   (three for `nd_range(range(n), range(m))`). Built into `vksycl._native`. The class keeps the objects it made in its
   `_made` dict, by the arguments as they came and by the values they stand for, up to
   MOST_MADE of them. What is new is checked and defined in Python (`vksycl/ranges.py`):
   an index's `_sizes(values)`, an nd_range's `_define(global, local, offset)`. */
#include "native.h"

enum { MOST_MADE = 512 };

static PyObject *str_made, *str_sizes, *str_define;

/* The class's `_made` dict (a new reference), or NULL with an error set. */
static PyObject *made_of(PyTypeObject *cls) {
    PyObject *made = PyObject_GetAttr((PyObject *)cls, str_made);
    if (made != NULL && !PyDict_Check(made)) {
        PyErr_Format(PyExc_TypeError, "%s._made must be a dict", cls->tp_name);
        Py_CLEAR(made);
    }
    return made;
}

/* Keeps `found` under each key (NULL keys skipped), the dict emptied when full. */
static int keep(PyObject *made, PyObject *key, PyObject *other, PyObject *found) {
    if (PyDict_GET_SIZE(made) >= MOST_MADE) PyDict_Clear(made);
    if (key != NULL && PyDict_SetItem(made, key, found) < 0) return -1;
    if (other != NULL && PyDict_SetItem(made, other, found) < 0) return -1;
    return 0;
}

/* IndexBase: a tuple of sizes. `cls(*values)` is the object made before from the same
   values, else the one made from the same sizes, else a new one. */
static PyObject *index_new(PyTypeObject *cls, PyObject *args, PyObject *kwds) {
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_Format(PyExc_TypeError, "%s() takes no keyword arguments", cls->tp_name);
        return NULL;
    }
    PyObject *made = made_of(cls);
    if (made == NULL) return NULL;
    PyObject *found = PyDict_GetItemWithError(made, args);
    int hashable = 1;
    if (found != NULL) {
        Py_INCREF(found);
        Py_DECREF(made);
        return found;
    }
    if (PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) goto fail;
        PyErr_Clear();  /* a list among the values: made, never kept */
        hashable = 0;
    }
    PyObject *sizes = PyObject_CallMethodOneArg((PyObject *)cls, str_sizes, args);
    if (sizes == NULL) goto fail;
    found = hashable ? PyDict_GetItemWithError(made, sizes) : NULL;
    if (found != NULL) {
        Py_INCREF(found);
    } else if (!PyErr_Occurred()) {
        PyObject *one = PyTuple_Pack(1, sizes);
        /* tuple's own constructor, which fills a subclass's object */
        found = one == NULL ? NULL : PyTuple_Type.tp_new(cls, one, NULL);
        Py_XDECREF(one);
    }
    if (found != NULL && hashable && keep(made, args, sizes, found) < 0) Py_CLEAR(found);
    Py_DECREF(sizes);
    Py_DECREF(made);
    return found;
fail:
    Py_DECREF(made);
    return NULL;
}

static PyType_Slot index_slots[] = {
    {Py_tp_doc, "The constructor of vksycl's indices (range, id): equal values give the "
                "very object made before."},
    {Py_tp_new, index_new},
    {0, NULL},
};

static PyType_Spec index_spec = {
    "vksycl._native.IndexBase", 0, 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, index_slots,
};

/* NdRangeBase: `cls(global_range, local_range, offset=None)` is the object made before
   from the same arguments, else a new one that `_define` fills. With no arguments, an
   empty object (unpickling sets its fields). */
static PyObject *nd_range_new(PyTypeObject *cls, PyObject *args, PyObject *kwds) {
    static char *names[] = {"global_range", "local_range", "offset", NULL};
    PyObject *global = Py_None, *local = Py_None, *offset = Py_None;
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if ((kwds == NULL || !PyDict_GET_SIZE(kwds)) && n <= 3) {  /* parsed by hand */
        if (n > 0) global = PyTuple_GET_ITEM(args, 0);
        if (n > 1) local = PyTuple_GET_ITEM(args, 1);
        if (n > 2) offset = PyTuple_GET_ITEM(args, 2);
    } else if (!PyArg_ParseTupleAndKeywords(args, kwds, "|OOO:nd_range", names, &global,
                                            &local, &offset)) {
        return NULL;
    }
    if (global == Py_None) return cls->tp_alloc(cls, 0);
    PyObject *made = made_of(cls);
    if (made == NULL) return NULL;
    PyObject *key = PyTuple_Pack(3, global, local, offset);
    PyObject *found = NULL;
    if (key == NULL) goto done;
    found = PyDict_GetItemWithError(made, key);
    if (found != NULL) {
        Py_INCREF(found);
        goto done;
    }
    if (PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) goto done;
        PyErr_Clear();  /* a list among the arguments: made, never kept */
        Py_CLEAR(key);
    }
    found = cls->tp_alloc(cls, 0);
    if (found == NULL) goto done;
    PyObject *defined = PyObject_CallMethodObjArgs(found, str_define, global, local, offset,
                                                   NULL);
    if (defined == NULL || (key != NULL && keep(made, key, NULL, found) < 0)) Py_CLEAR(found);
    Py_XDECREF(defined);
done:
    Py_XDECREF(key);
    Py_DECREF(made);
    return found;
}

static PyType_Slot nd_range_slots[] = {
    {Py_tp_doc, "The constructor of vksycl's nd_range: equal arguments give the very "
                "object made before."},
    {Py_tp_new, nd_range_new},
    {0, NULL},
};

static PyType_Spec nd_range_spec = {
    "vksycl._native.NdRangeBase", 0, 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    nd_range_slots,
};

/* Adds IndexBase and NdRangeBase to the module. */
int vksycl_add_interned(PyObject *module) {
    if (vksycl_intern(&str_made, "_made") < 0 || vksycl_intern(&str_sizes, "_sizes") < 0 ||
        vksycl_intern(&str_define, "_define") < 0)
        return -1;
    if (vksycl_add_type(module, "IndexBase", &index_spec, (PyObject *)&PyTuple_Type) < 0)
        return -1;
    return vksycl_add_type(module, "NdRangeBase", &nd_range_spec, NULL);
}
