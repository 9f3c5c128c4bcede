/*
 * fast.c - vlcs._isolation._fast: the module table's reads and the doors
 * into the import system, in C.
 *
 * Once a context exists, sys.modules is a dict subclass that answers each
 * owner (a context, or the base) with its own modules
 * (python/vlcs/_isolation/modtable.py, rules in owners.py).  Written in
 * Python, every read of it - `"pandas" in sys.modules`, `sys.modules["os"]`,
 * a function-level `import os` - ran Python code and walked frames, in the
 * base too: 10 to 80 times a dict lookup.  This module answers the cases
 * the rules decide from what C sees cheaply, and hands every other case to
 * the Python methods unchanged (_slow_getitem, _slow_contains, _slow_get,
 * the Python __import__):
 *
 *   1. a shared name (the standard library, vlcs.share) is the storage's;
 *      a name in no table at all is absent for everyone;
 *   2. a thread acting for an owner (a module executing for it, an import
 *      whose owner was decided) gets that owner's answer;
 *   3. a read made by Python code (the interpreter is on a subscript, `in`
 *      or .get) belongs to the nearest frame of an owned module; code of a
 *      base module run by a thread in no context is the base's;
 *   4. otherwise the thread's context, or the base.
 *
 * Reads from C code (PyImport_GetModule) once contexts have extension
 * modules, and everything else, go to Python, which may walk the native
 * stack.  Owners' tables are plain dicts: answering from one is one lookup.
 * The commonest reads take decide_quickly first (docs/design.md, the
 * table's reads in C): a known name, a known module's code, no thread
 * acting, the thread's context remembered until libvlcs says it changed.
 *
 * Frames are read as CPython lays them out (3.10's frame objects, 3.11+'s
 * _PyInterpreterFrame through the internal headers), which is why this is
 * built per Python version.  Every call here runs with the GIL held.
 *
 * One translation unit of parts, each a file: the reads' short path
 * (decide_quickly, always inlined) runs through the frames, the map and the
 * decisions, and their state is the module's own (static).  The parts, in
 * the order each needs the ones before it:
 *
 *   fast_frames.c   the thread state and the frames, per CPython version
 *   fast_map.c      owners' maps and the last decisions remembered
 *   fast_decide.c   the state the package sets; whose read it is
 *   fast_table.c    the table type
 *   fast_doors.c    the import statement's door, import_module, Routed
 *   fast_module.c   the thread state's place (3.12+), the package's notices,
 *                   the module
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h> /* first, as CPython asks; its pyconfig.h defines _GNU_SOURCE */
#include <structmember.h> /* T_OBJECT, T_PYSSIZET, READONLY: 3.10 and 3.11 have them only here */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "guarded_call.h"

#if PY_VERSION_HEX >= 0x030B0000
#define Py_BUILD_CORE 1
#include <internal/pycore_frame.h>
#if PY_VERSION_HEX < 0x030C0000
#undef _PyGC_FINALIZED /* Python.h's, which the core's headers define again alike */
#include <internal/pycore_pystate.h>
#endif
#undef Py_BUILD_CORE
#else
#include <frameobject.h>
#define Py_BUILD_CORE 1
#include <internal/pycore_pystate.h>
#undef Py_BUILD_CORE
#endif

#if PY_VERSION_HEX < 0x030A0000 || PY_VERSION_HEX >= 0x030E0000
#error "vlcs's module table reads the frames of CPython 3.10 to 3.13"
#endif

#include "fast_frames.c"
#include "fast_map.c"
#include "fast_decide.c"
#include "fast_table.c"
#include "fast_doors.c"
#include "fast_module.c"
