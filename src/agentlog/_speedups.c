/* agentlog._speedups: the inner loop of a whole-path read, and an append's
 * index slot and log line (``index_slot``, ``frame_line``, below), in C.
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
 * exact layouts agentlog's writers produce (members in order, no spaces,
 * branch_from and digest absent, as format 3 writes them, or null, as
 * format 2 did; an optional numeric txn marker), with its
 * checksum intact and every envelope field matching the fast check's
 * patterns.  Anything else stops the loop, and the caller's general path,
 * which holds every rule, takes over.  So whatever it accepts, the Python
 * loop accepts too, and builds the same Event from it
 * (tests/test_speedups.py checks both on the same lines, hypothesis
 * generated, and the fuzz suite does the same).
 */
#define _GNU_SOURCE /* memrchr, on glibc */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>

#define NFIELDS 9 /* id parent_id kind role timestamp record digest branch_from extra */

static PyTypeObject *event_type = NULL;
static Py_ssize_t offsets[NFIELDS];
static PyObject *loads = NULL;       /* orjson.loads */
static PyObject *record_key = NULL;  /* "record" */

static const char ID_PREFIX[] = "{\"id\":\"";
static const char AFTER_ID[] = "\",\"parent_id\":\"";
static const char AFTER_PARENT[] = "\",\"kind\":\"";
static const char AFTER_PARENT_V2[] = "\",\"branch_from\":null,\"kind\":\""; /* format 2 */
static const char AFTER_KIND[] = "\",\"role\":";
static const char STAMP_KEY[] = ",\"timestamp\":\"";
static const char RECORD_KEY[] = "\",\"record\":";
static const char DIGEST_NULL[] = ",\"digest\":null";
static const char TXN_KEY[] = ",\"txn\":[";
static const char CRC_KEY[] = ",\"crc\":\"";

/* The last '\n' in s[0:n]: glibc's memrchr, or the same plainly where
 * libc has none (memrchr is a GNU extension; musl and the BSDs declare it
 * only under conditions, so the fallback has a name of its own). */
static const unsigned char *last_newline(const unsigned char *s, size_t n) {
#if defined(__GLIBC__)
    return memrchr(s, '\n', n);
#else
    const unsigned char *p = s + n;
    while (p > s) {
        if (*--p == '\n') return p;
    }
    return NULL;
#endif
}

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

/* Kinds and roles: a session uses a handful, so the str of each is made
 * once and shared (str objects are immutable), not allocated per event. */
#define NAME_CACHE 32
static PyObject *name_cache[NAME_CACHE];
static int name_cached = 0;

static PyObject *name_str(const unsigned char *p, Py_ssize_t n) {
    for (int i = 0; i < name_cached; i++) {
        PyObject *c = name_cache[i];
        if (PyUnicode_GET_LENGTH(c) == n && memcmp(PyUnicode_DATA(c), p, (size_t)n) == 0) return Py_NewRef(c);
    }
    PyObject *str = ascii_str(p, n);
    if (str != NULL && name_cached < NAME_CACHE) name_cache[name_cached++] = Py_NewRef(str);
    return str;
}

/* Where a well-formed ,"txn":[<digits>,<digits>] that ends at e starts,
 * or -1. */
static Py_ssize_t txn_start(const unsigned char *s, Py_ssize_t e, Py_ssize_t floor) {
    if (e <= floor || s[e - 1] != ']') return -1;
    Py_ssize_t i = e - 2, digits = 0;
    while (i > floor && s[i] >= '0' && s[i] <= '9' && digits < 10) i--, digits++;
    if (digits == 0 || s[i] != ',' || (digits > 1 && s[i + 1] == '0')) return -1; /* JSON: no leading zero */
    i--, digits = 0;
    while (i > floor && s[i] >= '0' && s[i] <= '9' && digits < 10) i--, digits++;
    if (digits == 0 || s[i] != '[' || (digits > 1 && s[i + 1] == '0')) return -1;
    Py_ssize_t t = i + 1 - (Py_ssize_t)LIT(TXN_KEY);
    return t > floor && memcmp(s + t, TXN_KEY, LIT(TXN_KEY)) == 0 ? t : -1;
}

/* Where the payload ends (-1: nowhere), for a line whose tail is
 * [,"digest":null] [,"txn":[<digits>,<digits>]] ,"crc":"...".  A format 2
 * line has the ,"digest":null; a format 3 line leaves a null digest out,
 * so its payload may end where the marker or the crc begins (an array
 * payload ends in ']' as a marker does).  No JSON value ends in
 * ,"txn":[i,n] or ,"digest":null, so a tail that reads as either is one.
 * Whatever else sits between the payload and the crc (a digest that is
 * set, a marker out of bounds) is left in the payload, where the
 * one-member parse below refuses it: the loop stops, never misreads. */
static Py_ssize_t payload_end(const unsigned char *s, Py_ssize_t n, Py_ssize_t floor) {
    Py_ssize_t e = n - (Py_ssize_t)SUFFIX_LEN;
    Py_ssize_t t = txn_start(s, e, floor);
    if (t >= 0) e = t;
    Py_ssize_t d = e - (Py_ssize_t)LIT(DIGEST_NULL);
    if (d > floor && memcmp(s + d, DIGEST_NULL, LIT(DIGEST_NULL)) == 0) e = d;
    return e > floor ? e : -1;
}

/* CRC-32 (zlib's polynomial) with carry-less multiplication, where the CPU
 * has it: zlib 1.2's table-driven crc32 runs at about 1.3 GB/s on this
 * class of machine, a third of this loop's time per event; folding 64
 * bytes at a time with PCLMULQDQ is several times faster.  This is the
 * folding of Intel's "Fast CRC Computation for Generic Polynomials Using
 * PCLMULQDQ Instruction" (2009), with its constants for the reflected
 * polynomial 0xEDB88320, as Chromium's zlib and the Linux kernel use it.
 * It takes a multiple of 16 bytes, at least 64, and the CRC in its
 * internal (not inverted) form; zlib's crc32 does the rest.
 * tests/test_speedups.py checks it against zlib on every length. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_CLMUL 1
__attribute__((target("pclmul,sse4.1"))) static uint32_t crc32_clmul(const unsigned char *buf, size_t len,
                                                                      uint32_t crc) {
    const __m128i k1k2 = _mm_set_epi64x(0x01c6e41596, 0x0154442bd4);
    const __m128i k3k4 = _mm_set_epi64x(0x00ccaa009e, 0x01751997d0);
    const __m128i k5k0 = _mm_set_epi64x(0, 0x0163cd6124);
    const __m128i poly = _mm_set_epi64x(0x01f7011641, 0x01db710641);
    __m128i x0, x1, x2, x3, x4, x5, x6, x7, x8, y5, y6, y7, y8;

    x1 = _mm_loadu_si128((const __m128i *)(buf + 0x00));
    x2 = _mm_loadu_si128((const __m128i *)(buf + 0x10));
    x3 = _mm_loadu_si128((const __m128i *)(buf + 0x20));
    x4 = _mm_loadu_si128((const __m128i *)(buf + 0x30));
    x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)crc));
    x0 = k1k2;
    buf += 64;
    len -= 64;
    while (len >= 64) { /* fold four lanes of 128 bits in parallel */
        x5 = _mm_clmulepi64_si128(x1, x0, 0x00);
        x6 = _mm_clmulepi64_si128(x2, x0, 0x00);
        x7 = _mm_clmulepi64_si128(x3, x0, 0x00);
        x8 = _mm_clmulepi64_si128(x4, x0, 0x00);
        x1 = _mm_clmulepi64_si128(x1, x0, 0x11);
        x2 = _mm_clmulepi64_si128(x2, x0, 0x11);
        x3 = _mm_clmulepi64_si128(x3, x0, 0x11);
        x4 = _mm_clmulepi64_si128(x4, x0, 0x11);
        y5 = _mm_loadu_si128((const __m128i *)(buf + 0x00));
        y6 = _mm_loadu_si128((const __m128i *)(buf + 0x10));
        y7 = _mm_loadu_si128((const __m128i *)(buf + 0x20));
        y8 = _mm_loadu_si128((const __m128i *)(buf + 0x30));
        x1 = _mm_xor_si128(_mm_xor_si128(x1, x5), y5);
        x2 = _mm_xor_si128(_mm_xor_si128(x2, x6), y6);
        x3 = _mm_xor_si128(_mm_xor_si128(x3, x7), y7);
        x4 = _mm_xor_si128(_mm_xor_si128(x4, x8), y8);
        buf += 64;
        len -= 64;
    }
    x0 = k3k4; /* fold the four lanes into one */
    x5 = _mm_clmulepi64_si128(x1, x0, 0x00);
    x1 = _mm_clmulepi64_si128(x1, x0, 0x11);
    x1 = _mm_xor_si128(_mm_xor_si128(x1, x2), x5);
    x5 = _mm_clmulepi64_si128(x1, x0, 0x00);
    x1 = _mm_clmulepi64_si128(x1, x0, 0x11);
    x1 = _mm_xor_si128(_mm_xor_si128(x1, x3), x5);
    x5 = _mm_clmulepi64_si128(x1, x0, 0x00);
    x1 = _mm_clmulepi64_si128(x1, x0, 0x11);
    x1 = _mm_xor_si128(_mm_xor_si128(x1, x4), x5);
    while (len >= 16) { /* then 16 bytes at a time */
        x2 = _mm_loadu_si128((const __m128i *)buf);
        x5 = _mm_clmulepi64_si128(x1, x0, 0x00);
        x1 = _mm_clmulepi64_si128(x1, x0, 0x11);
        x1 = _mm_xor_si128(_mm_xor_si128(x1, x2), x5);
        buf += 16;
        len -= 16;
    }
    /* 128 bits to 64 */
    x2 = _mm_clmulepi64_si128(x1, x0, 0x10);
    x3 = _mm_setr_epi32(~0, 0, ~0, 0);
    x1 = _mm_srli_si128(x1, 8);
    x1 = _mm_xor_si128(x1, x2);
    x0 = k5k0;
    x2 = _mm_srli_si128(x1, 4);
    x1 = _mm_and_si128(x1, x3);
    x1 = _mm_clmulepi64_si128(x1, x0, 0x00);
    x1 = _mm_xor_si128(x1, x2);
    /* Barrett reduction to 32 bits */
    x0 = poly;
    x2 = _mm_and_si128(x1, x3);
    x2 = _mm_clmulepi64_si128(x2, x0, 0x10);
    x2 = _mm_and_si128(x2, x3);
    x2 = _mm_clmulepi64_si128(x2, x0, 0x00);
    x1 = _mm_xor_si128(x1, x2);
    return (uint32_t)_mm_extract_epi32(x1, 1);
}
#endif

static int use_clmul = 0; /* set once at import, from what the CPU reports */

/* zlib's crc32(crc, buf, len), the same value, faster where it can be. */
static uint32_t crc32_any(uint32_t crc, const unsigned char *buf, size_t len) {
#ifdef HAVE_CLMUL
    if (use_clmul && len >= 64) {
        size_t whole = len & ~(size_t)15;
        crc = ~crc32_clmul(buf, whole, ~crc);
        buf += whole;
        len -= whole;
    }
#endif
    return (uint32_t)crc32_z(crc, buf, (z_size_t)len);
}

static PyObject *crc32_py(PyObject *self, PyObject *args) {
    Py_buffer data;
    unsigned int start = 0;
    if (!PyArg_ParseTuple(args, "y*|I", &data, &start)) return NULL;
    uint32_t c = crc32_any(start, data.buf, (size_t)data.len);
    PyBuffer_Release(&data);
    return PyLong_FromUnsignedLong(c);
}

static int crc_ok(const unsigned char *s, Py_ssize_t n) {
    static const char hex[] = "0123456789abcdef";
    uint32_t c = crc32_any(0, s, (size_t)(n - (Py_ssize_t)SUFFIX_LEN));
    c = (uint32_t)crc32(c, (const Bytef *)"}", 1);
    const unsigned char *h = s + n - 10;
    for (int i = 0; i < 8; i++) {
        if (h[i] != (unsigned char)hex[(c >> (28 - 4 * i)) & 0xf]) return 0;
    }
    return 1;
}

static void set_field(PyObject *obj, int i, PyObject *value) {
    /* a new reference, stolen; the slot is empty (the object is new) */
    *(PyObject **)((char *)obj + offsets[i]) = value;
}

/* The Event of one line if the line is exactly the event ``key`` (36 bytes),
 * intact and certainly valid; NULL without an error set if it is not (the
 * caller stops); NULL with an error set on a real failure (memory). */
static PyObject *event_of(const unsigned char *s, Py_ssize_t n, const unsigned char *key, PyObject *want,
                          PyObject **parent_out, PyObject **kind_out) {
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
    if (memcmp(p, AFTER_PARENT, LIT(AFTER_PARENT)) == 0)
        p += LIT(AFTER_PARENT);
    else if (end - p > (Py_ssize_t)LIT(AFTER_PARENT_V2) && memcmp(p, AFTER_PARENT_V2, LIT(AFTER_PARENT_V2)) == 0)
        p += LIT(AFTER_PARENT_V2);
    else
        return NULL;
    const unsigned char *kind = p;
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
    PyObject *kind_s = name_str(kind, kind_n);
    PyObject *role_s = role == NULL ? Py_NewRef(Py_None) : name_str(role, role_n);
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

/* a == b for a str ``a`` and any ``b`` (``kind == until_kind`` in Python),
 * without a rich comparison per event when the lengths differ. */
static int same_str(PyObject *a, PyObject *b) {
    if (a == b) return 1;
    if (!PyUnicode_Check(b) || PyUnicode_GET_LENGTH(a) != PyUnicode_GET_LENGTH(b)) return 0;
    return PyUnicode_Compare(a, b) == 0;
}

/* One step of either loop: the event of line s[0:n] if it is ``*want``'s,
 * appended to ``out``; then ``*want`` becomes its parent.  Returns 1 if it
 * was taken, 0 if the loop stops here, -1 on an error; sets ``*done`` when
 * until_kind/until_id end the walk. */
static int step(const unsigned char *s, Py_ssize_t n, PyObject **want, PyObject *out, PyObject *until_kind,
                PyObject *until_id, int *done) {
    Py_ssize_t key_n;
    const char *key = PyUnicode_AsUTF8AndSize(*want, &key_n);
    if (key == NULL) return -1;
    /* the caller's id is checked as the Python loop's callers check it:
     * an id that is not one could otherwise frame a line JSON would refuse */
    if (key_n != ID_LEN || !is_uuid((const unsigned char *)key)) return 0;
    PyObject *parent = NULL, *kind = NULL;
    PyObject *event = event_of(s, n, (const unsigned char *)key, *want, &parent, &kind);
    if (event == NULL) return PyErr_Occurred() ? -1 : 0;
    int appended = PyList_Append(out, event);
    Py_DECREF(event);
    int stop = 0;
    if (appended == 0 && until_kind != Py_None) stop = same_str(kind, until_kind);
    if (appended == 0 && !stop && until_id != Py_None) stop = same_str(*want, until_id);
    Py_DECREF(kind);
    if (appended < 0 || PyErr_Occurred()) {
        Py_DECREF(parent);
        return -1;
    }
    Py_SETREF(*want, parent);
    *done = stop;
    return 1;
}

static int check_common(PyObject *want, PyObject *out, PyObject *budget_obj, Py_ssize_t *budget) {
    if (event_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "agentlog._speedups.configure() was not called");
        return -1;
    }
    if (!PyList_CheckExact(out) || !PyUnicode_CheckExact(want)) {
        PyErr_SetString(PyExc_TypeError, "out must be a list and want a str");
        return -1;
    }
    *budget = PyLong_AsSsize_t(budget_obj);
    return *budget == -1 && PyErr_Occurred() ? -1 : 0;
}

/* follow_block(data, floor, end, want, out, budget, until_kind, until_id) -> (end, want, done):
 * pathread._follow_block, over the lines of data[floor:end] in place. */
static PyObject *follow_block(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "follow_block(data, floor, end, want, out, budget, until_kind, until_id)");
        return NULL;
    }
    PyObject *data = args[0], *want = args[3], *out = args[4], *until_kind = args[6], *until_id = args[7];
    Py_ssize_t budget;
    if (!PyBytes_CheckExact(data)) {
        PyErr_SetString(PyExc_TypeError, "follow_block: data must be bytes");
        return NULL;
    }
    if (check_common(want, out, args[5], &budget) < 0) return NULL;
    Py_ssize_t floor = PyLong_AsSsize_t(args[1]);
    if (floor == -1 && PyErr_Occurred()) return NULL;
    Py_ssize_t end = PyLong_AsSsize_t(args[2]);
    if (end == -1 && PyErr_Occurred()) return NULL;
    if (end < floor) end = floor; /* an empty region, as data[floor:end] is */
    const unsigned char *buf = (const unsigned char *)PyBytes_AS_STRING(data);
    if (floor < 0 || end > PyBytes_GET_SIZE(data) || (end > floor && buf[end - 1] != '\n')) {
        PyErr_SetString(PyExc_ValueError, "follow_block: data[floor:end] must be whole lines");
        return NULL;
    }
    Py_INCREF(want);
    int done = 0;
    while (end > floor && budget > 0) {
        Py_ssize_t line_end = end - 1; /* its newline */
        const unsigned char *nl = line_end > floor ? last_newline(buf + floor, (size_t)(line_end - floor)) : NULL;
        Py_ssize_t line_start = nl == NULL ? floor : (nl - buf) + 1;
        int r = step(buf + line_start, line_end - line_start, &want, out, until_kind, until_id, &done);
        if (r < 0) {
            Py_DECREF(want);
            return NULL;
        }
        if (r == 0) break;
        end = line_start;
        budget--;
        if (done) break;
    }
    return Py_BuildValue("(nNO)", end, want, done ? Py_True : Py_False); /* "N" takes want */
}

static PyObject *follow(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "follow(lines, pos, want, out, budget, until_kind, until_id)");
        return NULL;
    }
    PyObject *lines = args[0], *want = args[2], *out = args[3], *until_kind = args[5], *until_id = args[6];
    Py_ssize_t budget;
    if (!PyList_CheckExact(lines)) {
        PyErr_SetString(PyExc_TypeError, "follow: lines must be a list");
        return NULL;
    }
    if (check_common(want, out, args[4], &budget) < 0) return NULL;
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    if (pos == -1 && PyErr_Occurred()) return NULL;
    Py_INCREF(want);
    int done = 0;
    while (pos >= 0 && budget > 0 && pos < PyList_GET_SIZE(lines)) {
        PyObject *line = PyList_GET_ITEM(lines, pos);
        if (!PyBytes_CheckExact(line)) break;
        Py_INCREF(line); /* the list may change under a callback (orjson calls none; be safe) */
        int r = step((const unsigned char *)PyBytes_AS_STRING(line), PyBytes_GET_SIZE(line), &want, out, until_kind,
                     until_id, &done);
        Py_DECREF(line);
        if (r < 0) {
            Py_DECREF(want);
            return NULL;
        }
        if (r == 0) break;
        pos--;
        budget--;
        if (done) break;
    }
    return Py_BuildValue("(nNO)", pos, want, done ? Py_True : Py_False); /* "N" takes want */
}

/* --- index_slot: one entry of the binary index (index.py, docs/format.md) ---
 *
 * ``Index._encode`` in C, for the write path: an append packs one 64-byte
 * slot, which in Python costs a UUID parse twice, a timestamp parse, a
 * struct pack and a checksum (about 3 us on a 2-core VM, a fifth of an
 * append at durability "off").  It answers only what it is sure of: ids in
 * the canonical lowercase form and a timestamp in the canonical form
 * between 1970 and 2261, with every field in range.  For anything else it
 * returns None and ``Index._encode`` packs the slot, by every rule
 * (tests/test_index_slot.py holds the two byte-identical). */

static int hex_nibble(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* The 16 bytes of a canonical UUID string (36 characters), or 0. */
static int uuid_bytes(PyObject *s, unsigned char *out) {
    if (!PyUnicode_Check(s) || !PyUnicode_IS_ASCII(s) || PyUnicode_GET_LENGTH(s) != ID_LEN) return 0;
    const unsigned char *p = PyUnicode_1BYTE_DATA(s);
    if (!is_uuid(p)) return 0;
    int j = 0;
    for (int i = 0; i < ID_LEN;) {
        if (p[i] == '-') {
            i++;
            continue;
        }
        out[j++] = (unsigned char)(hex_nibble(p[i]) << 4 | hex_nibble(p[i + 1]));
        i += 2;
    }
    return 1;
}

static int digits(const unsigned char *p, int n, int64_t *out) {
    int64_t v = 0;
    for (int i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return 0;
        v = v * 10 + (p[i] - '0');
    }
    *out = v;
    return 1;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; H. Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* Nanoseconds of YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ between 1970 and 2261, or -1. */
static int64_t canonical_ns(PyObject *s) {
    if (!PyUnicode_Check(s) || !PyUnicode_IS_ASCII(s) || PyUnicode_GET_LENGTH(s) != 30) return -1;
    const unsigned char *p = PyUnicode_1BYTE_DATA(s);
    if (p[4] != '-' || p[7] != '-' || p[10] != 'T' || p[13] != ':' || p[16] != ':' || p[19] != '.' || p[29] != 'Z')
        return -1;
    int64_t y, mo, d, h, mi, se, frac;
    if (!digits(p, 4, &y) || !digits(p + 5, 2, &mo) || !digits(p + 8, 2, &d) || !digits(p + 11, 2, &h) ||
        !digits(p + 14, 2, &mi) || !digits(p + 17, 2, &se) || !digits(p + 20, 9, &frac))
        return -1;
    static const int dim[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (y < 1970 || y > 2261 || mo < 1 || mo > 12 || d < 1 || d > dim[mo - 1] + (mo == 2 && leap) || h > 23 ||
        mi > 59 || se > 59)
        return -1;
    int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
    return secs * 1000000000 + frac;
}

static void put_le(unsigned char *p, uint64_t v, int n) {
    for (int i = 0; i < n; i++) p[i] = (unsigned char)(v >> (8 * i));
}

#define SLOT_SIZE 64
#define BRANCH_IS_PARENT 1
#define INCOMPLETE 2

static PyObject *k_id, *k_parent, *k_stamp, *k_kind, *k_role, *k_branch, *k_digest;

/* rec[key] (borrowed), Py_None when absent and ``optional``, else NULL
 * (absent and required, or an error set). */
static PyObject *member(PyObject *rec, PyObject *key, int optional) {
    PyObject *v = PyDict_GetItemWithError(rec, key);
    if (v == NULL && !PyErr_Occurred() && optional) return Py_None;
    return v;
}

/* codes[name] as a one-byte code, or -1 (not in the table: a new name). */
static long code_of(PyObject *codes, PyObject *name) {
    PyObject *v = PyDict_GetItemWithError(codes, name);
    if (v == NULL || !PyLong_Check(v)) return -1;
    long c = PyLong_AsLong(v);
    if (c == -1 && PyErr_Occurred()) PyErr_Clear(); /* past a long: not a code */
    return (c < 0 || c > 0xff) ? -1 : c;
}

static PyObject *index_slot(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    /* rec, chunk, offset, length, codes: ``Index._encode(entry_of(rec, chunk,
     * offset, length))`` for an index whose name table is ``codes``. */
    if (nargs != 5 || !PyDict_Check(args[0]) || !PyDict_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError, "index_slot(rec: dict, chunk, offset, length, codes: dict)");
        return NULL;
    }
    PyObject *rec = args[0], *codes = args[4];
    PyObject *id = member(rec, k_id, 0), *parent = member(rec, k_parent, 0), *stamp = member(rec, k_stamp, 0);
    PyObject *kind = member(rec, k_kind, 0), *role = member(rec, k_role, 1);
    PyObject *branch = member(rec, k_branch, 1), *digest = member(rec, k_digest, 1);
    if (PyErr_Occurred()) return NULL;
    if (id == NULL || parent == NULL || stamp == NULL || kind == NULL || role == NULL || branch == NULL ||
        digest == NULL)
        Py_RETURN_NONE; /* a required member missing: entry_of says so */
    unsigned char slot[SLOT_SIZE];
    memset(slot, 0, sizeof(slot));
    if (!uuid_bytes(id, slot) || !uuid_bytes(parent, slot + 16)) Py_RETURN_NONE;
    int64_t ns = canonical_ns(stamp);
    if (ns < 0) Py_RETURN_NONE;
    long kind_code = code_of(codes, kind);
    long role_code = role == Py_None ? 0 : code_of(codes, role);
    if (PyErr_Occurred()) return NULL;
    if (kind_code < 0 || role_code < 0) Py_RETURN_NONE;
    int flags = 0;
    if (branch != Py_None) {
        int same = PyObject_RichCompareBool(branch, parent, Py_EQ);
        if (same < 0) return NULL;
        flags |= same ? BRANCH_IS_PARENT : INCOMPLETE;
    }
    if (digest != Py_None) flags |= INCOMPLETE;
    unsigned long chunk = PyLong_AsUnsignedLong(args[1]);
    unsigned long long offset = PyLong_AsUnsignedLongLong(args[2]);
    unsigned long length = PyLong_AsUnsignedLong(args[3]);
    if (PyErr_Occurred()) {
        /* out of range for the slot (or not an int): the Python packer says so by its own rules */
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    if (length > 0xffffffffUL || chunk > 0xffffffffUL) Py_RETURN_NONE;
    put_le(slot + 32, (uint64_t)ns, 8);
    put_le(slot + 40, offset, 8);
    put_le(slot + 48, length, 4);
    put_le(slot + 52, chunk, 4);
    slot[56] = (unsigned char)kind_code;
    slot[57] = (unsigned char)role_code;
    slot[58] = (unsigned char)flags;
    put_le(slot + 60, (uint32_t)crc32(0, slot, 60), 4);
    return PyBytes_FromStringAndSize((const char *)slot, SLOT_SIZE);
}

/* --- frame_line: a log line (_codec.encode_line) ---------------------------
 *
 * ``encode_line(obj)`` for the lines the writer frames (lines.frame_commit):
 * ``obj``'s members in order, as orjson writes them, the member "record"
 * being ``payload`` verbatim (the caller's ``orjson.Fragment(payload)``, or
 * null), then the checksum member.  It answers only for members it writes
 * exactly as orjson does: keys and strings of printable ASCII without a
 * quote or a backslash (nothing to escape), None, and lists of ints; for
 * anything else it returns None and orjson frames the line
 * (tests/test_frame_line.py holds the two byte-identical). */

/* The length of s if it is printable ASCII with nothing orjson escapes, else -1. */
static Py_ssize_t plain_len(PyObject *s) {
    if (!PyUnicode_CheckExact(s) || !PyUnicode_IS_ASCII(s)) return -1;
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    const unsigned char *p = PyUnicode_1BYTE_DATA(s);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (p[i] < 0x20 || p[i] > 0x7e || p[i] == '"' || p[i] == '\\') return -1;
    }
    return n;
}

/* One member's value: its JSON text written at out (when out is not NULL);
 * its length, or -1 if it is not one this function writes. */
static Py_ssize_t value_text(PyObject *v, char *out) {
    if (v == Py_None) {
        if (out) memcpy(out, "null", 4);
        return 4;
    }
    if (PyUnicode_Check(v)) {
        Py_ssize_t n = plain_len(v);
        if (n < 0) return -1;
        if (out) {
            out[0] = '"';
            memcpy(out + 1, PyUnicode_1BYTE_DATA(v), (size_t)n);
            out[n + 1] = '"';
        }
        return n + 2;
    }
    if (PyList_CheckExact(v)) {
        Py_ssize_t count = PyList_GET_SIZE(v), len = 1;
        if (out) out[0] = '[';
        for (Py_ssize_t i = 0; i < count; i++) {
            PyObject *item = PyList_GET_ITEM(v, i);
            if (!PyLong_CheckExact(item)) return -1; /* bool is not exact: orjson writes true */
            int overflow = 0;
            long long x = PyLong_AsLongLongAndOverflow(item, &overflow);
            if (overflow || (x == -1 && PyErr_Occurred())) {
                PyErr_Clear();
                return -1;
            }
            char digits[24];
            int k = snprintf(digits, sizeof(digits), "%lld", x);
            if (i) {
                if (out) out[len] = ',';
                len++;
            }
            if (out) memcpy(out + len, digits, (size_t)k);
            len += k;
        }
        if (out) out[len] = ']';
        return len + 1;
    }
    return -1;
}

static int is_record_key(PyObject *key) { return key == record_key || PyUnicode_Compare(key, record_key) == 0; }

static PyObject *frame_line(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyDict_CheckExact(args[0]) || (args[1] != Py_None && !PyBytes_CheckExact(args[1]))) {
        PyErr_SetString(PyExc_TypeError, "frame_line(obj: dict, payload: bytes | None)");
        return NULL;
    }
    PyObject *obj = args[0], *payload = args[1], *key, *value;
    /* First pass: check every member and size the line. */
    Py_ssize_t pos = 0, size = 1; /* { */
    int first = 1;
    while (PyDict_Next(obj, &pos, &key, &value)) {
        Py_ssize_t k = plain_len(key);
        if (k < 0) Py_RETURN_NONE;
        Py_ssize_t v;
        if (is_record_key(key)) {
            /* the caller's Fragment(payload), or None with no payload */
            if ((value == Py_None) != (payload == Py_None)) Py_RETURN_NONE;
            v = payload == Py_None ? 4 : PyBytes_GET_SIZE(payload);
        } else {
            v = value_text(value, NULL);
        }
        if (v < 0) Py_RETURN_NONE;
        size += (first ? 0 : 1) + k + 3 + v; /* ,"key":value */
        first = 0;
    }
    if (first) Py_RETURN_NONE; /* {} : not a record */
    static const char tail_head[] = ",\"crc\":\"";
    Py_ssize_t total = size + (Py_ssize_t)LIT(tail_head) + 8 + 3; /* 8 hex, "}\n */
    PyObject *line = PyBytes_FromStringAndSize(NULL, total);
    if (line == NULL) return NULL;
    char *out = PyBytes_AS_STRING(line), *at = out;
    *at++ = '{';
    pos = 0;
    first = 1;
    while (PyDict_Next(obj, &pos, &key, &value)) {
        Py_ssize_t k = PyUnicode_GET_LENGTH(key);
        if (!first) *at++ = ',';
        first = 0;
        *at++ = '"';
        memcpy(at, PyUnicode_1BYTE_DATA(key), (size_t)k);
        at += k;
        *at++ = '"';
        *at++ = ':';
        if (is_record_key(key)) {
            if (payload == Py_None) {
                memcpy(at, "null", 4);
                at += 4;
            } else {
                memcpy(at, PyBytes_AS_STRING(payload), (size_t)PyBytes_GET_SIZE(payload));
                at += PyBytes_GET_SIZE(payload);
            }
        } else {
            at += value_text(value, at);
        }
    }
    /* the checksum of the object as if its crc member were absent: the bytes so far, then "}" */
    uint32_t c = crc32_any(0, (const unsigned char *)out, (size_t)(at - out));
    c = (uint32_t)crc32(c, (const Bytef *)"}", 1);
    memcpy(at, tail_head, LIT(tail_head));
    at += LIT(tail_head);
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 8; i++) *at++ = hex[(c >> (28 - 4 * i)) & 0xf];
    *at++ = '"';
    *at++ = '}';
    *at++ = '\n';
    if (at - out != total) { /* the two passes disagree: a bug, never a wrong line */
        Py_DECREF(line);
        PyErr_SetString(PyExc_SystemError, "frame_line: the line's size changed while it was framed");
        return NULL;
    }
    return line;
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
    {"follow_block", (PyCFunction)(void (*)(void))follow_block, METH_FASTCALL,
     "follow_block(data, floor, end, want, out, budget, until_kind, until_id) -> (end, want, done): "
     "pathread._follow_block in C."},
    {"follow", (PyCFunction)(void (*)(void))follow, METH_FASTCALL,
     "follow(lines, pos, want, out, budget, until_kind, until_id) -> (pos, want, done): pathread._follow in C."},
    {"index_slot", (PyCFunction)(void (*)(void))index_slot, METH_FASTCALL,
     "index_slot(rec, chunk, offset, length, codes) -> the 64 bytes of the record's index entry, "
     "or None where Index._encode must pack it."},
    {"frame_line", (PyCFunction)(void (*)(void))frame_line, METH_FASTCALL,
     "frame_line(obj, payload) -> _codec.encode_line(obj) where obj['record'] is orjson.Fragment(payload), "
     "or None where orjson must frame it."},
    {"crc32", crc32_py, METH_VARARGS,
     "crc32(data, value=0): zlib.crc32's value, computed as follow() computes it (for the tests)."},
    {"configure", configure, METH_VARARGS,
     "configure(event_type, field_names, loads): the Event class, its nine slot names in order, orjson.loads."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "agentlog._speedups",
    "The whole-path read's inner loop, an append's index slot and log line, in C (see pathread, index, lines).", -1,
    methods};

PyMODINIT_FUNC PyInit__speedups(void) {
#ifdef HAVE_CLMUL
    __builtin_cpu_init();
    use_clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
#endif
    record_key = PyUnicode_InternFromString("record");
    if (record_key == NULL) return NULL;
    PyObject **keys[] = {&k_id, &k_parent, &k_stamp, &k_kind, &k_role, &k_branch, &k_digest};
    const char *names[] = {"id", "parent_id", "timestamp", "kind", "role", "branch_from", "digest"};
    for (int i = 0; i < 7; i++) {
        *keys[i] = PyUnicode_InternFromString(names[i]);
        if (*keys[i] == NULL) return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    /* ABI: the interface pathread calls; a build older or newer than the
     * Python beside it (an in-place build a `git pull` did not redo) is
     * then ignored rather than called wrongly. */
    if (m != NULL && (PyModule_AddIntConstant(m, "clmul", use_clmul) < 0 || PyModule_AddIntConstant(m, "ABI", 3) < 0))
        Py_CLEAR(m);
    return m;
}
