/* `sycl.event`'s fields and its completion test, in C: every launch makes an event and
   most ask an earlier one whether it completed, which as Python cost a call frame and
   a dozen attribute stores. Built into vksycl's native module (`vksycl._native.EventCore`);
   `runtime/event.py` derives `sycl.event` from it and adds the rest in Python. */
#include "native.h"

#include <stddef.h>
#include <structmember.h>

typedef struct {
    PyObject_HEAD
    PyObject *weakrefs;
    PyObject *engine;         /* the engine that runs its work, None for a default event */
    PyObject *issued;         /* True once every step was handed to the device or run */
    PyObject *issued_signal;  /* a threading.Event, only for deferred commands */
    PyObject *submission;     /* the Submission or Part of its work, or None */
    PyObject *error;          /* its asynchronous error, or None */
    PyObject *profiling;      /* whether its queue profiles */
    PyObject *times;          /* profiling times, or the function computing them */
    PyObject *deps;           /* weak references to the events it waited for */
} EventCore;

static PyObject *str_done;
static PyObject *str_is_complete;
static PyObject *empty_tuple;

static int core_init(EventCore *self, PyObject *args, PyObject *kwds) {
    static char *names[] = {"engine", "profiling", "submission", NULL};
    PyObject *engine = Py_None, *profiling = Py_False, *submission = Py_None;
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (kwds == NULL && n <= 3) { /* the scheduler's positional call, parsed by hand */
        if (n > 0) engine = PyTuple_GET_ITEM(args, 0);
        if (n > 1) profiling = PyTuple_GET_ITEM(args, 1);
        if (n > 2) submission = PyTuple_GET_ITEM(args, 2);
    } else if (!PyArg_ParseTupleAndKeywords(args, kwds, "|OOO:event", names, &engine,
                                            &profiling, &submission)) {
        return -1;
    }
    PyObject *issued = (engine == Py_None || submission != Py_None) ? Py_True : Py_False;
    Py_XSETREF(self->engine, Py_NewRef(engine));
    Py_XSETREF(self->issued, Py_NewRef(issued));
    Py_XSETREF(self->issued_signal, Py_NewRef(Py_None));
    Py_XSETREF(self->submission, Py_NewRef(submission));
    Py_XSETREF(self->error, Py_NewRef(Py_None));
    Py_XSETREF(self->profiling, Py_NewRef(profiling));
    Py_XSETREF(self->times, Py_NewRef(Py_None));
    Py_XSETREF(self->deps, Py_NewRef(empty_tuple));
    return 0;
}

/* issued, and its work (if any) done: `Submission.done()` / `Part.done()` */
static PyObject *core_is_complete(EventCore *self, PyObject *Py_UNUSED(ignored)) {
    if (self->issued == NULL) Py_RETURN_FALSE;
    int issued = PyObject_IsTrue(self->issued);
    if (issued < 0) return NULL;
    if (!issued) Py_RETURN_FALSE;
    if (self->submission == NULL || self->submission == Py_None) Py_RETURN_TRUE;
    return PyObject_CallMethodNoArgs(self->submission, str_done);
}

/* whether work submitted to `engine` from now on runs after this event's work: it
   completed (as the event's own `is_complete` says), or its GPU work is already in that
   engine's queue */
static PyObject *core_ordered_on(EventCore *self, PyObject *engine) {
    if (self->issued == NULL) Py_RETURN_FALSE;
    int issued = PyObject_IsTrue(self->issued);
    if (issued < 0) return NULL;
    if (!issued) Py_RETURN_FALSE;
    if (self->engine == engine) Py_RETURN_TRUE;
    return PyObject_CallMethodNoArgs((PyObject *)self, str_is_complete);
}

static int core_traverse(EventCore *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->engine);
    Py_VISIT(self->issued);
    Py_VISIT(self->issued_signal);
    Py_VISIT(self->submission);
    Py_VISIT(self->error);
    Py_VISIT(self->profiling);
    Py_VISIT(self->times);
    Py_VISIT(self->deps);
    return 0;
}

static int core_clear(EventCore *self) {
    Py_CLEAR(self->engine);
    Py_CLEAR(self->issued);
    Py_CLEAR(self->issued_signal);
    Py_CLEAR(self->submission);
    Py_CLEAR(self->error);
    Py_CLEAR(self->profiling);
    Py_CLEAR(self->times);
    Py_CLEAR(self->deps);
    return 0;
}

static void core_dealloc(EventCore *self) {
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (self->weakrefs != NULL) PyObject_ClearWeakRefs((PyObject *)self);
    core_clear(self);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

#define FIELD(name, member) {name, T_OBJECT, offsetof(EventCore, member), 0, NULL}
static PyMemberDef core_members[] = {
    FIELD("_engine", engine),
    FIELD("_issued", issued),
    FIELD("_issued_signal", issued_signal),
    FIELD("_submission", submission),
    FIELD("_error", error),
    FIELD("_profiling", profiling),
    FIELD("_times", times),
    FIELD("_deps", deps),
    {"__weaklistoffset__", T_PYSSIZET, offsetof(EventCore, weakrefs), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyMethodDef core_methods[] = {
    {"is_complete", (PyCFunction)core_is_complete, METH_NOARGS,
     "Whether the command's work is handed over and done."},
    {"ordered_on", (PyCFunction)core_ordered_on, METH_O,
     "Whether work submitted to the engine from now on runs after this event's."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot core_slots[] = {
    {Py_tp_doc, "The fields of sycl.event and its completion test."},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_init, core_init},
    {Py_tp_traverse, core_traverse},
    {Py_tp_clear, core_clear},
    {Py_tp_dealloc, core_dealloc},
    {Py_tp_members, core_members},
    {Py_tp_methods, core_methods},
    {0, NULL},
};

static PyType_Spec core_spec = {
    "vksycl._native.EventCore", sizeof(EventCore), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC, core_slots,
};

/* Adds EventCore to the module. */
int vksycl_add_event_core(PyObject *module) {
    if (vksycl_intern(&str_done, "done") < 0 ||
        vksycl_intern(&str_is_complete, "is_complete") < 0)
        return -1;
    if (empty_tuple == NULL && (empty_tuple = PyTuple_New(0)) == NULL) return -1;
    return vksycl_add_type(module, "EventCore", &core_spec, NULL);
}
