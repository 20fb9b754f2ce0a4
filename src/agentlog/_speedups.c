/* agentlog._speedups: the inner loop of a whole-path read, in C.
 *
 * ``follow`` is ``agentlog.backends.files.pathread._follow`` (the pure
 * Python loop, which stays, and which is used when this module is not
 * built): it takes events from a list of log lines, going back from
 * ``pos``, for as long as each line is exactly the event wanted next and
 * is certainly valid.  Per event the Python loop pays a checksum call, a
 * parse of the whole line into a dict (envelope included), four lookups,
 * a regular expression and the nine slot stores of a frozen ``Event``:
 * about 4 us on a 2-core VM, where the OpenAI Agents SDK's whole row costs
 * about 3.5 us.  Here the envelope is checked byte by byte in place and
 * only the payload is parsed (by orjson, the same parser), so an event
 * costs its checksum, its payload's parse and a few allocations.
 *
 * The contract that keeps this safe: this loop accepts a line only in the
 * exact layout agentlog's writer produces (members in order, no spaces,
 * branch_from and digest null, an optional numeric txn marker), with its
 * checksum intact and every envelope field matching the fast check's
 * patterns.  Anything else stops the loop, and the caller's general path,
 * which holds every rule, takes over.  So whatever it accepts, the Python
 * loop accepts too, and builds the same Event from it
 * (tests/test_speedups.py checks both on the same lines, hypothesis
 * generated, and the fuzz suite does the same).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <string.h>
#include <zlib.h>

#define NFIELDS 9 /* id parent_id kind role timestamp record digest branch_from extra */

static PyTypeObject *event_type = NULL;
static Py_ssize_t offsets[NFIELDS];
static PyObject *loads = NULL;       /* orjson.loads */
static PyObject *record_key = NULL;  /* "record" */

static const char ID_PREFIX[] = "{\"id\":\"";
static const char AFTER_ID[] = "\",\"parent_id\":\"";
static const char AFTER_PARENT[] = "\",\"branch_from\":null,\"kind\":\"";
static const char AFTER_KIND[] = "\",\"role\":";
static const char STAMP_KEY[] = ",\"timestamp\":\"";
static const char RECORD_KEY[] = "\",\"record\":";
static const char DIGEST_NULL[] = ",\"digest\":null";
static const char TXN_KEY[] = ",\"txn\":[";
static const char CRC_KEY[] = ",\"crc\":\"";

#define LIT(s) (sizeof(s) - 1)
#define ID_LEN 36
#define SUFFIX_LEN (LIT(CRC_KEY) + 8 + 2) /* ,"crc":"  8 hex  "} */

static int is_hex_lower(unsigned char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

/* [0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}: event.is_event_id */
static int is_uuid(const unsigned char *p) {
    for (int i = 0; i < ID_LEN; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (p[i] != '-') return 0;
        } else if (!is_hex_lower(p[i])) {
            return 0;
        }
    }
    return 1;
}

/* [a-z][a-z0-9_.-]{0,31}: event.KIND_PATTERN, the grammar of kinds and roles.
 * Returns the name's length (the closing quote follows it), or 0. */
static Py_ssize_t name_len(const unsigned char *p, const unsigned char *end) {
    if (p >= end || !(*p >= 'a' && *p <= 'z')) return 0;
    Py_ssize_t n = 1;
    while (p + n < end && n <= 32) {
        unsigned char c = p[n];
        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-')
            n++;
        else
            break;
    }
    if (n > 32 || p + n >= end || p[n] != '"') return 0;
    return n;
}

/* [0-9A-Za-z:.+-]{1,40}: the fast check's timestamp (pathread._PARENT_STAMP),
 * a subset of event._TIMESTAMP.  Returns its length (the closing quote
 * follows it), or 0. */
static Py_ssize_t stamp_len(const unsigned char *p, const unsigned char *end) {
    Py_ssize_t n = 0;
    while (p + n < end && n <= 40) {
        unsigned char c = p[n];
        if ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == ':' || c == '.' ||
            c == '+' || c == '-')
            n++;
        else
            break;
    }
    if (n < 1 || n > 40 || p + n >= end || p[n] != '"') return 0;
    return n;
}

static PyObject *ascii_str(const unsigned char *p, Py_ssize_t n) {
    /* every byte was checked to be ASCII: the compact one-byte form */
    PyObject *s = PyUnicode_New(n, 127);
    if (s != NULL) memcpy(PyUnicode_DATA(s), p, (size_t)n);
    return s;
}

/* Where the payload ends (the comma of ,"digest":null), or -1 if the line's
 * tail is not exactly ,"digest":null [,"txn":[<digits>,<digits>]] ,"crc":"...". */
static Py_ssize_t payload_end(const unsigned char *s, Py_ssize_t n, Py_ssize_t floor) {
    Py_ssize_t e = n - (Py_ssize_t)SUFFIX_LEN;
    if (e > floor && s[e - 1] == ']') {
        Py_ssize_t i = e - 2, digits = 0;
        while (i > floor && s[i] >= '0' && s[i] <= '9' && digits < 10) i--, digits++;
        if (digits == 0 || s[i] != ',' || (digits > 1 && s[i + 1] == '0')) return -1; /* JSON: no leading zero */
        i--, digits = 0;
        while (i > floor && s[i] >= '0' && s[i] <= '9' && digits < 10) i--, digits++;
        if (digits == 0 || s[i] != '[' || (digits > 1 && s[i + 1] == '0')) return -1;
        e = i + 1 - (Py_ssize_t)LIT(TXN_KEY);
        if (e <= floor || memcmp(s + e, TXN_KEY, LIT(TXN_KEY)) != 0) return -1;
    }
    e -= (Py_ssize_t)LIT(DIGEST_NULL);
    if (e <= floor || memcmp(s + e, DIGEST_NULL, LIT(DIGEST_NULL)) != 0) return -1;
    return e;
}

static int crc_ok(const unsigned char *s, Py_ssize_t n) {
    static const char hex[] = "0123456789abcdef";
    uLong c = crc32(0L, s, (uInt)(n - (Py_ssize_t)SUFFIX_LEN));
    c = crc32(c, (const Bytef *)"}", 1);
    const unsigned char *h = s + n - 10;
    for (int i = 0; i < 8; i++) {
        if (h[i] != (unsigned char)hex[(c >> (28 - 4 * i)) & 0xf]) return 0;
    }
    return 1;
}

static int set_field(PyObject *obj, int i, PyObject *value) {
    /* a new reference, stolen; the slot is empty (the object is new) */
    *(PyObject **)((char *)obj + offsets[i]) = value;
    return 0;
}

/* The Event of one line if the line is exactly the event ``key`` (36 bytes),
 * intact and certainly valid; NULL without an error set if it is not (the
 * caller stops); NULL with an error set on a real failure (memory). */
static PyObject *event_of(PyObject *line, const unsigned char *key, PyObject *want, PyObject **parent_out,
                          PyObject **kind_out) {
    const unsigned char *s = (const unsigned char *)PyBytes_AS_STRING(line);
    Py_ssize_t n = PyBytes_GET_SIZE(line);
    const unsigned char *end = s + n;
    Py_ssize_t fixed = LIT(ID_PREFIX) + ID_LEN + LIT(AFTER_ID) + ID_LEN + LIT(AFTER_PARENT);
    if (n < fixed + (Py_ssize_t)SUFFIX_LEN + 40) return NULL;
    if (memcmp(s + LIT(ID_PREFIX), key, ID_LEN) != 0 || memcmp(s, ID_PREFIX, LIT(ID_PREFIX)) != 0) return NULL;
    if (memcmp(end - SUFFIX_LEN, CRC_KEY, LIT(CRC_KEY)) != 0 || end[-2] != '"' || end[-1] != '}') return NULL;
    if (!crc_ok(s, n)) return NULL;
    const unsigned char *p = s + LIT(ID_PREFIX) + ID_LEN;
    if (memcmp(p, AFTER_ID, LIT(AFTER_ID)) != 0) return NULL;
    const unsigned char *parent = p + LIT(AFTER_ID);
    if (!is_uuid(parent)) return NULL;
    p = parent + ID_LEN;
    if (memcmp(p, AFTER_PARENT, LIT(AFTER_PARENT)) != 0) return NULL;
    const unsigned char *kind = p + LIT(AFTER_PARENT);
    Py_ssize_t kind_n = name_len(kind, end);
    if (kind_n == 0) return NULL;
    p = kind + kind_n;
    if (end - p < (Py_ssize_t)LIT(AFTER_KIND) + 4 || memcmp(p, AFTER_KIND, LIT(AFTER_KIND)) != 0) return NULL;
    p += LIT(AFTER_KIND);
    const unsigned char *role = NULL;
    Py_ssize_t role_n = 0;
    if (memcmp(p, "null", 4) == 0) {
        p += 4;
    } else if (*p == '"') {
        role = p + 1;
        role_n = name_len(role, end);
        if (role_n == 0) return NULL;
        p = role + role_n + 1;
    } else {
        return NULL;
    }
    if (end - p < (Py_ssize_t)LIT(STAMP_KEY) || memcmp(p, STAMP_KEY, LIT(STAMP_KEY)) != 0) return NULL;
    const unsigned char *stamp = p + LIT(STAMP_KEY);
    Py_ssize_t stamp_n = stamp_len(stamp, end);
    if (stamp_n == 0) return NULL;
    p = stamp + stamp_n;
    if (end - p < (Py_ssize_t)LIT(RECORD_KEY) || memcmp(p, RECORD_KEY, LIT(RECORD_KEY)) != 0) return NULL;
    /* "record":<payload> starts after the quote and comma that close the stamp */
    const unsigned char *member = p + 2;
    Py_ssize_t payload_start = (p - s) + (Py_ssize_t)LIT(RECORD_KEY);
    Py_ssize_t stop = payload_end(s, n, payload_start);
    if (stop < 0) return NULL;

    /* Parse {"record":<payload>}: the payload at the same depth as in the
     * whole line, so orjson's nesting limit falls where it falls there. */
    Py_ssize_t member_n = stop - (member - s);
    PyObject *doc = PyBytes_FromStringAndSize(NULL, member_n + 2);
    if (doc == NULL) return NULL;
    char *d = PyBytes_AS_STRING(doc);
    d[0] = '{';
    memcpy(d + 1, member, (size_t)member_n);
    d[member_n + 1] = '}';
    PyObject *parsed = PyObject_CallOneArg(loads, doc);
    Py_DECREF(doc);
    if (parsed == NULL) {
        if (PyErr_ExceptionMatches(PyExc_ValueError)) PyErr_Clear(); /* bad JSON: the careful path reports it */
        return NULL;
    }
    PyObject *record = PyDict_Check(parsed) && PyDict_GET_SIZE(parsed) == 1 ? PyDict_GetItemWithError(parsed, record_key)
                                                                            : NULL;
    if (record == NULL) {
        Py_DECREF(parsed);
        return NULL;
    }
    Py_INCREF(record);
    Py_DECREF(parsed);

    PyObject *parent_s = ascii_str(parent, ID_LEN);
    PyObject *kind_s = ascii_str(kind, kind_n);
    PyObject *role_s = role == NULL ? Py_NewRef(Py_None) : ascii_str(role, role_n);
    PyObject *stamp_s = ascii_str(stamp, stamp_n);
    PyObject *extra = PyDict_New();
    PyObject *event = event_type->tp_alloc(event_type, 0);
    if (!parent_s || !kind_s || !role_s || !stamp_s || !extra || !event) {
        Py_XDECREF(parent_s), Py_XDECREF(kind_s), Py_XDECREF(role_s), Py_XDECREF(stamp_s);
        Py_XDECREF(extra), Py_XDECREF(event), Py_DECREF(record);
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return NULL;
    }
    *parent_out = Py_NewRef(parent_s);
    *kind_out = Py_NewRef(kind_s);
    set_field(event, 0, Py_NewRef(want));
    set_field(event, 1, parent_s);
    set_field(event, 2, kind_s);
    set_field(event, 3, role_s);
    set_field(event, 4, stamp_s);
    set_field(event, 5, record);
    set_field(event, 6, Py_NewRef(Py_None));
    set_field(event, 7, Py_NewRef(Py_None));
    set_field(event, 8, extra);
    return event;
}

static PyObject *follow(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (event_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "agentlog._speedups.configure() was not called");
        return NULL;
    }
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "follow(lines, pos, want, out, budget, until_kind, until_id)");
        return NULL;
    }
    PyObject *lines = args[0], *want = args[2], *out = args[3], *until_kind = args[5], *until_id = args[6];
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    Py_ssize_t budget = PyLong_AsSsize_t(args[4]);
    if (PyErr_Occurred()) return NULL;
    if (!PyList_CheckExact(lines) || !PyList_CheckExact(out) || !PyUnicode_CheckExact(want)) {
        PyErr_SetString(PyExc_TypeError, "follow: lines and out must be lists, want a str");
        return NULL;
    }
    Py_INCREF(want);
    int done = 0;
    while (pos >= 0 && budget > 0 && pos < PyList_GET_SIZE(lines)) {
        Py_ssize_t key_n;
        const char *key = PyUnicode_AsUTF8AndSize(want, &key_n);
        if (key == NULL) goto fail;
        if (key_n != ID_LEN) break;
        PyObject *line = PyList_GET_ITEM(lines, pos);
        if (!PyBytes_CheckExact(line)) break;
        PyObject *parent = NULL, *kind = NULL;
        PyObject *event = event_of(line, (const unsigned char *)key, want, &parent, &kind);
        if (event == NULL) {
            if (PyErr_Occurred()) goto fail;
            break;
        }
        int appended = PyList_Append(out, event);
        Py_DECREF(event);
        if (appended < 0) {
            Py_DECREF(parent), Py_DECREF(kind);
            goto fail;
        }
        pos--;
        budget--;
        int stop = 0;
        if (until_kind != Py_None) {
            stop = PyUnicode_Check(until_kind) && PyUnicode_Compare(kind, until_kind) == 0;
        }
        if (!stop && until_id != Py_None) {
            stop = PyUnicode_Check(until_id) && PyUnicode_Compare(want, until_id) == 0;
        }
        Py_DECREF(kind);
        if (PyErr_Occurred()) {
            Py_DECREF(parent);
            goto fail;
        }
        Py_SETREF(want, parent);
        if (stop) {
            done = 1;
            break;
        }
    }
    PyObject *result = Py_BuildValue("(nNO)", pos, want, done ? Py_True : Py_False);
    return result; /* "N" took our reference to want */
fail:
    Py_DECREF(want);
    return NULL;
}

static PyObject *configure(PyObject *self, PyObject *args) {
    PyObject *type, *names, *loads_fn;
    if (!PyArg_ParseTuple(args, "O!O!O", &PyType_Type, &type, &PyTuple_Type, &names, &loads_fn)) return NULL;
    if (PyTuple_GET_SIZE(names) != NFIELDS) {
        PyErr_SetString(PyExc_ValueError, "configure: nine field names expected");
        return NULL;
    }
    PyTypeObject *t = (PyTypeObject *)type;
    if (!PyType_HasFeature(t, Py_TPFLAGS_HEAPTYPE) || t->tp_alloc == NULL) {
        PyErr_SetString(PyExc_TypeError, "configure: the event type must be a class");
        return NULL;
    }
    Py_ssize_t found[NFIELDS];
    for (int i = 0; i < NFIELDS; i++) {
        PyObject *descr = PyObject_GetAttr(type, PyTuple_GET_ITEM(names, i));
        if (descr == NULL) return NULL;
        /* each field must be a plain object slot of this very layout */
        int ok = Py_IS_TYPE(descr, &PyMemberDescr_Type) &&
                 ((PyMemberDescrObject *)descr)->d_member->type == T_OBJECT_EX &&
                 ((PyMemberDescrObject *)descr)->d_common.d_type == t;
        if (ok) found[i] = ((PyMemberDescrObject *)descr)->d_member->offset;
        Py_DECREF(descr);
        if (!ok || found[i] <= 0 || found[i] + (Py_ssize_t)sizeof(PyObject *) > t->tp_basicsize) {
            PyErr_SetString(PyExc_TypeError, "configure: every field must be a slot of the event type");
            return NULL;
        }
    }
    memcpy(offsets, found, sizeof(offsets));
    Py_INCREF(type);
    Py_XSETREF(event_type, t);
    Py_INCREF(loads_fn);
    Py_XSETREF(loads, loads_fn);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"follow", (PyCFunction)(void (*)(void))follow, METH_FASTCALL,
     "follow(lines, pos, want, out, budget, until_kind, until_id) -> (pos, want, done): pathread._follow in C."},
    {"configure", configure, METH_VARARGS,
     "configure(event_type, field_names, loads): the Event class, its nine slot names in order, orjson.loads."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "agentlog._speedups",
                                    "The whole-path read's inner loop in C (see pathread).", -1, methods};

PyMODINIT_FUNC PyInit__speedups(void) {
    record_key = PyUnicode_InternFromString("record");
    if (record_key == NULL) return NULL;
    return PyModule_Create(&module);
}
