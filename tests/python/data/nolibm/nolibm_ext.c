/* An extension module that calls libm without listing it (no DT_NEEDED on
 * libm), as pandas' tslibs and mypyc's helpers do: in a plain process the
 * python executable's libm satisfies it. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

static PyObject *calc(PyObject *self, PyObject *args)
{
    (void)self;
    double a, b;
    if (!PyArg_ParseTuple(args, "dd", &a, &b))
        return NULL;
    return Py_BuildValue("dd", fmod(a, b), nextafter(a, b));
}

static PyMethodDef methods[] = {{"calc", calc, METH_VARARGS, "fmod and nextafter"}, {0}};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "nolibm_ext", 0, -1, methods};
PyMODINIT_FUNC PyInit_nolibm_ext(void) { return PyModule_Create(&def); }
