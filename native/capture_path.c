/* How a kernel's launch reads one capture path (`self.x`, `cfg.scale`, a module global, an
   explicit argument's attribute), in C: a plan reads every such path again at each
   launch to see whether the values are the ones its last command packed, which in
   Python costs an interpreter frame per path. `compiler/captures.py` builds one per path
   (`path_getter`; its `_PythonCapturePath` stands in where this module was not built);
   calling it with (kernel function, arguments) returns the value. Each step reads the
   object's own field where the object is the kind expected (a function, a bound method,
   a cell, a tuple), else asks Python as the stand-in does, so that an unexpected object
   fails with the same exception. */
#include "native.h"

#include <stddef.h>
#include <string.h>
#include <structmember.h>

/* where a path starts */
enum root {
    ROOT_SELF,    /* the object a kernel method is bound to */
    ROOT_CELL,    /* a closure cell of the kernel, by index */
    ROOT_FNCELL,  /* a closure cell of a device function (`outer`'s value), by name */
    ROOT_PARAM,   /* an explicit argument, by index */
    ROOT_GLOBAL,  /* a global of the kernel's own module, by name */
    ROOT_MODULE,  /* a global of another module: `key` is (module name, name) */
    ROOTS
};

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    int root;
    Py_ssize_t index;  /* ROOT_CELL, ROOT_PARAM */
    PyObject *key;     /* the name (ROOT_FNCELL, ROOT_GLOBAL), or (module, name) */
    PyObject *fields;  /* a tuple of attribute names read after the root */
    PyObject *outer;   /* ROOT_FNCELL: the path of the function whose cell it reads */
} CapturePath;

static PyObject *str_self, *str_closure, *str_globals, *str_code, *str_freevars;

/* fn.__closure__[i].cell_contents (new reference) */
static PyObject *cell_of(PyObject *fn, Py_ssize_t i) {
    PyObject *closure;
    if (PyMethod_Check(fn)) fn = PyMethod_GET_FUNCTION(fn);
    if (PyFunction_Check(fn)) {
        closure = Py_NewRef(PyFunction_GET_CLOSURE(fn) ? PyFunction_GET_CLOSURE(fn)
                                                       : Py_None);
    } else if ((closure = PyObject_GetAttr(fn, str_closure)) == NULL) {
        return NULL;
    }
    PyObject *cell;
    if (PyTuple_CheckExact(closure) && i < PyTuple_GET_SIZE(closure)) {
        cell = Py_NewRef(PyTuple_GET_ITEM(closure, i));
    } else {
        PyObject *at = PyLong_FromSsize_t(i);
        cell = at == NULL ? NULL : PyObject_GetItem(closure, at);
        Py_XDECREF(at);
    }
    Py_DECREF(closure);
    if (cell == NULL) return NULL;
    PyObject *value = NULL;
    if (PyCell_Check(cell)) {
        value = PyCell_GET(cell);
        if (value == NULL)
            PyErr_SetString(PyExc_ValueError, "Cell is empty");
        else
            Py_INCREF(value);
    } else {
        value = PyObject_GetAttrString(cell, "cell_contents");
    }
    Py_DECREF(cell);
    return value;
}

/* The index of `name` among the free variables of function `fn`'s code. */
static Py_ssize_t freevar_index(PyObject *fn, PyObject *name) {
    PyObject *code = PyObject_GetAttr(fn, str_code);
    if (code == NULL) return -1;
    PyObject *names = PyObject_GetAttr(code, str_freevars);
    Py_DECREF(code);
    if (names == NULL) return -1;
    Py_ssize_t i = PySequence_Index(names, name);
    Py_DECREF(names);
    return i;
}

static PyObject *root_value(CapturePath *self, PyObject *fn, PyObject *args) {
    switch (self->root) {
    case ROOT_SELF:
        if (PyMethod_Check(fn)) return Py_NewRef(PyMethod_GET_SELF(fn));
        return PyObject_GetAttr(fn, str_self);
    case ROOT_CELL:
        return cell_of(fn, self->index);
    case ROOT_FNCELL: {
        PyObject *outer_args[] = {fn, args};
        PyObject *f = PyObject_Vectorcall(self->outer, outer_args, 2, NULL);
        if (f == NULL) return NULL;
        Py_ssize_t i = freevar_index(f, self->key);
        PyObject *value = i < 0 ? NULL : cell_of(f, i);
        Py_DECREF(f);
        return value;
    }
    case ROOT_PARAM:
        if (PyTuple_CheckExact(args) && self->index < PyTuple_GET_SIZE(args))
            return Py_NewRef(PyTuple_GET_ITEM(args, self->index));
        PyObject *at = PyLong_FromSsize_t(self->index);
        PyObject *value = at == NULL ? NULL : PyObject_GetItem(args, at);
        Py_XDECREF(at);
        return value;
    case ROOT_GLOBAL: {
        PyObject *f = PyMethod_Check(fn) ? PyMethod_GET_FUNCTION(fn) : fn;
        PyObject *globals = PyFunction_Check(f) ? Py_NewRef(PyFunction_GET_GLOBALS(f))
                                                : PyObject_GetAttr(f, str_globals);
        if (globals == NULL) return NULL;
        PyObject *value = PyObject_GetItem(globals, self->key);
        Py_DECREF(globals);
        return value;
    }
    default: { /* ROOT_MODULE */
        PyObject *module = PyDict_GetItemWithError(PyImport_GetModuleDict(),
                                                   PyTuple_GET_ITEM(self->key, 0));
        if (module == NULL) {
            if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, PyTuple_GET_ITEM(self->key, 0));
            return NULL;
        }
        PyObject *namespace = PyModule_Check(module) ? PyModule_GetDict(module) : NULL;
        if (namespace == NULL) {
            PyErr_Clear();
            PyObject *owned = PyObject_GetAttrString(module, "__dict__");
            if (owned == NULL) return NULL;
            PyObject *value = PyObject_GetItem(owned, PyTuple_GET_ITEM(self->key, 1));
            Py_DECREF(owned);
            return value;
        }
        return PyObject_GetItem(namespace, PyTuple_GET_ITEM(self->key, 1));
    }
    }
}

static PyObject *path_call(PyObject *op, PyObject *const *args, size_t nargsf,
                           PyObject *kwnames) {
    CapturePath *self = (CapturePath *)op;
    if (PyVectorcall_NARGS(nargsf) != 2 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "a capture path reads (function, arguments)");
        return NULL;
    }
    PyObject *value = root_value(self, args[0], args[1]);
    Py_ssize_t n = PyTuple_GET_SIZE(self->fields);
    for (Py_ssize_t k = 0; value != NULL && k < n; ++k)
        Py_SETREF(value, PyObject_GetAttr(value, PyTuple_GET_ITEM(self->fields, k)));
    return value;
}

/* the roots by name, in `enum root`'s order: what compiler/captures.py passes */
static const char *root_names[ROOTS] = {"self", "cell", "fncell", "param", "global",
                                        "module"};

static int path_init(PyObject *op, PyObject *args, PyObject *kwds) {
    static char *names[] = {"root", "index", "key", "fields", "outer", NULL};
    CapturePath *self = (CapturePath *)op;
    const char *name;
    Py_ssize_t index;
    PyObject *key, *fields, *outer;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "snOO!O:CapturePath", names, &name, &index,
                                     &key, &PyTuple_Type, &fields, &outer))
        return -1;
    int root = 0;
    while (root < ROOTS && strcmp(name, root_names[root]) != 0) ++root;
    if (root == ROOTS || index < 0) {
        PyErr_Format(PyExc_ValueError, "CapturePath: no root %s at %zd", name, index);
        return -1;
    }
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(fields); ++k) {
        if (!PyUnicode_Check(PyTuple_GET_ITEM(fields, k))) {
            PyErr_SetString(PyExc_TypeError, "CapturePath: fields are attribute names");
            return -1;
        }
    }
    if ((root == ROOT_MODULE && !(PyTuple_CheckExact(key) && PyTuple_GET_SIZE(key) == 2)) ||
        (root == ROOT_FNCELL && !PyCallable_Check(outer))) {
        PyErr_SetString(PyExc_TypeError, "CapturePath: a key or outer path of another kind");
        return -1;
    }
    self->root = root;
    self->index = index;
    Py_XSETREF(self->key, Py_NewRef(key));
    Py_XSETREF(self->fields, Py_NewRef(fields));
    Py_XSETREF(self->outer, Py_NewRef(outer));
    self->vectorcall = path_call;
    return 0;
}

static PyObject *path_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    CapturePath *self = (CapturePath *)type->tp_alloc(type, 0);
    if (self != NULL) {
        self->key = Py_NewRef(Py_None);
        self->fields = PyTuple_New(0);
        self->outer = Py_NewRef(Py_None);
        self->vectorcall = path_call;
        if (self->fields == NULL) Py_CLEAR(self);
    }
    return (PyObject *)self;
}

static int path_traverse(PyObject *op, visitproc visit, void *arg) {
    CapturePath *self = (CapturePath *)op;
    Py_VISIT(Py_TYPE(op));
    Py_VISIT(self->key);
    Py_VISIT(self->fields);
    Py_VISIT(self->outer);
    return 0;
}

static int path_clear(PyObject *op) {
    CapturePath *self = (CapturePath *)op;
    Py_CLEAR(self->key);
    Py_CLEAR(self->fields);
    Py_CLEAR(self->outer);
    return 0;
}

static void path_dealloc(PyObject *op) {
    PyTypeObject *type = Py_TYPE(op);
    PyObject_GC_UnTrack(op);
    path_clear(op);
    type->tp_free(op);
    Py_DECREF(type);
}

static PyMemberDef path_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(CapturePath, vectorcall), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot path_slots[] = {
    {Py_tp_doc, "CapturePath(root, index, key, fields, outer)(function, arguments): the "
                "value of one capture path of a kernel's launch."},
    {Py_tp_new, path_new},
    {Py_tp_init, path_init},
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_traverse, path_traverse},
    {Py_tp_clear, path_clear},
    {Py_tp_dealloc, path_dealloc},
    {Py_tp_members, path_members},
    {0, NULL},
};

static PyType_Spec path_spec = {
    "vksycl._native.CapturePath", sizeof(CapturePath), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL, path_slots,
};

/* Adds CapturePath to the module. */
int vksycl_add_capture_path(PyObject *module) {
    if (vksycl_intern(&str_self, "__self__") < 0 ||
        vksycl_intern(&str_closure, "__closure__") < 0 ||
        vksycl_intern(&str_globals, "__globals__") < 0 ||
        vksycl_intern(&str_code, "__code__") < 0 ||
        vksycl_intern(&str_freevars, "co_freevars") < 0)
        return -1;
    return vksycl_add_type(module, "CapturePath", &path_spec, NULL);
}
