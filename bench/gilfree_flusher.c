/* An experiment, not part of agentlog: group commit with the write and the
 * fdatasync done by C threads that never hold the GIL (bench/gilfree.py).
 *
 * It answers one question for issue 8: would moving the commit path out of
 * Python let 8 threads appending to one session reach 4x one thread? It
 * keeps only what the question needs: lines are queued in order, written in
 * order, and a caller returns once a sync that began after its line was
 * written has completed. It has no error handling (an I/O error aborts)
 * and one flusher object lives for the whole process.
 *
 * Flusher(fd, in_flight=1, delay_ns=0):
 *   in_flight == 1: one sync at a time. A caller that finds no write in
 *     progress writes and syncs its own line (a lone appender never meets a
 *     thread); lines queued meanwhile go to a C thread that writes and syncs
 *     group after group while any are queued.
 *   in_flight > 1: that many C threads, each writing the queue and syncing
 *     while fewer than in_flight syncs are running (several syncs at once).
 *   delay_ns > 0: before writing a group, the C thread waits up to that long
 *     for as many lines as threads were appending (PostgreSQL's commit_delay).
 *
 * pure(fd, threads, seconds, gather) -> (lines, syncs): the disk's own bound,
 *   with no Python at all: C threads append a line each in a loop for that
 *   long, the first to find no sync running syncs everything written so far.
 *   With gather, that leader first waits (up to 100 us) until every thread
 *   has written its next line, so each group holds them all.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct Line {
    char *buf;
    size_t len;
    unsigned long long seq;
    struct Line *next;
} Line;

typedef struct {
    PyObject_HEAD
    int fd, in_flight_max;
    long delay_ns;
    pthread_mutex_t mu;  /* guards everything below */
    pthread_mutex_t wmu; /* orders the writes of concurrent groups */
    pthread_cond_t work, done;
    Line *head, *tail;
    int queued, inside, peak; /* lines queued; callers inside append(); most inside since the last group */
    int leading, running;     /* a caller or the flusher owns the write (in_flight == 1); syncs running */
    unsigned long long next_seq, done_seq;
    long syncs;
} Flusher;

static void write_all(int fd, const char *b, size_t n) {
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w <= 0)
            abort();
        b += w;
        n -= (size_t)w;
    }
}

/* Take the queue, write it and sync (mu held on entry and on return, not
 * across the I/O). A completed sync covers every line written before it
 * began, so done_seq only moves forward. */
static void write_group(Flusher *f) {
    Line *h = f->head;
    f->head = f->tail = NULL;
    f->queued = 0;
    f->peak = f->inside;
    f->running++;
    pthread_mutex_unlock(&f->mu);
    size_t total = 0;
    unsigned long long last = 0;
    for (Line *l = h; l; l = l->next) {
        total += l->len;
        last = l->seq;
    }
    char *buf = malloc(total);
    size_t at = 0;
    while (h) {
        Line *next = h->next;
        memcpy(buf + at, h->buf, h->len);
        at += h->len;
        free(h->buf);
        free(h);
        h = next;
    }
    pthread_mutex_lock(&f->wmu);
    write_all(f->fd, buf, total);
    pthread_mutex_unlock(&f->wmu);
    free(buf);
    if (fdatasync(f->fd) != 0)
        abort();
    pthread_mutex_lock(&f->mu);
    f->running--;
    f->syncs++;
    if (last > f->done_seq)
        f->done_seq = last;
    pthread_cond_broadcast(&f->done);
}

static int may_write(Flusher *f) {
    if (!f->head)
        return 0;
    if (f->in_flight_max == 1)
        return f->leading == 2; /* handed to the flusher by a leader */
    return f->running < f->in_flight_max;
}

static void *flusher_main(void *arg) {
    Flusher *f = arg;
    pthread_mutex_lock(&f->mu);
    for (;;) {
        while (!may_write(f)) {
            if (f->in_flight_max == 1 && f->leading == 2 && !f->head)
                f->leading = 0; /* idle again: the next caller leads */
            pthread_cond_wait(&f->work, &f->mu);
        }
        if (f->delay_ns > 0 && f->queued < f->peak) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += f->delay_ns;
            until.tv_sec += until.tv_nsec / 1000000000L;
            until.tv_nsec %= 1000000000L;
            while (f->queued < f->peak)
                if (pthread_cond_timedwait(&f->work, &f->mu, &until) != 0)
                    break;
        }
        write_group(f);
        pthread_cond_signal(&f->work);
    }
    return NULL;
}

static PyObject *flusher_append(Flusher *f, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    Line *line = malloc(sizeof(Line));
    line->buf = malloc((size_t)view.len);
    memcpy(line->buf, view.buf, (size_t)view.len);
    line->len = (size_t)view.len;
    line->next = NULL;
    PyBuffer_Release(&view);
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&f->mu);
    line->seq = ++f->next_seq;
    unsigned long long mine = line->seq;
    if (f->tail)
        f->tail->next = line;
    else
        f->head = line;
    f->tail = line;
    f->queued++;
    if (++f->inside > f->peak)
        f->peak = f->inside;
    if (f->in_flight_max == 1 && f->leading == 0) {
        f->leading = 1; /* lead: write our own group, then hand on what queued meanwhile */
        write_group(f);
        if (f->head) {
            f->leading = 2;
            pthread_cond_signal(&f->work);
        } else {
            f->leading = 0;
        }
    } else {
        pthread_cond_signal(&f->work);
        while (f->done_seq < mine)
            pthread_cond_wait(&f->done, &f->mu);
    }
    f->inside--;
    pthread_mutex_unlock(&f->mu);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *flusher_syncs(Flusher *f, PyObject *unused) {
    return PyLong_FromLong(f->syncs);
}

static int flusher_init(Flusher *f, PyObject *args, PyObject *kwargs) {
    f->in_flight_max = 1;
    f->delay_ns = 0;
    if (!PyArg_ParseTuple(args, "i|il", &f->fd, &f->in_flight_max, &f->delay_ns))
        return -1;
    if (f->in_flight_max < 1 || f->in_flight_max > 8) {
        PyErr_SetString(PyExc_ValueError, "in_flight must be 1 to 8");
        return -1;
    }
    pthread_mutex_init(&f->mu, NULL);
    pthread_mutex_init(&f->wmu, NULL);
    pthread_cond_init(&f->work, NULL);
    pthread_cond_init(&f->done, NULL);
    f->head = f->tail = NULL;
    f->queued = f->inside = f->peak = f->leading = f->running = 0;
    f->next_seq = f->done_seq = 0;
    f->syncs = 0;
    Py_INCREF(f); /* its threads use it until the process exits */
    for (int i = 0; i < f->in_flight_max; i++) {
        pthread_t thread;
        pthread_create(&thread, NULL, flusher_main, f);
        pthread_detach(thread);
    }
    return 0;
}

static PyMethodDef flusher_methods[] = {
    {"append", (PyCFunction)flusher_append, METH_O, "Queue a line; return once it is synced."},
    {"syncs", (PyCFunction)flusher_syncs, METH_NOARGS, "fdatasyncs so far."},
    {NULL}};

static PyTypeObject FlusherType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gilfree_flusher.Flusher",
    .tp_basicsize = sizeof(Flusher),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)flusher_init,
    .tp_methods = flusher_methods,
};


typedef struct {
    int fd, threads, gather, syncing;
    volatile int stop;
    long written, synced, syncs;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char line[582];
} Pure;

static double pure_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *pure_main(void *arg) {
    Pure *p = arg;
    while (!p->stop) {
        pthread_mutex_lock(&p->mu);
        write_all(p->fd, p->line, sizeof p->line);
        long mine = ++p->written;
        while (p->synced < mine) {
            if (p->syncing) {
                pthread_cond_wait(&p->cv, &p->mu);
                continue;
            }
            p->syncing = 1;
            double until = pure_now() + 100e-6;
            while (p->gather && p->written - p->synced < p->threads && pure_now() < until) {
                pthread_mutex_unlock(&p->mu);
                sched_yield();
                pthread_mutex_lock(&p->mu);
            }
            long target = p->written;
            pthread_mutex_unlock(&p->mu);
            if (fdatasync(p->fd) != 0)
                abort();
            pthread_mutex_lock(&p->mu);
            p->synced = target;
            p->syncs++;
            p->syncing = 0;
            pthread_cond_broadcast(&p->cv);
        }
        pthread_mutex_unlock(&p->mu);
    }
    return NULL;
}

static PyObject *pure(PyObject *self, PyObject *args) {
    Pure p;
    double seconds;
    memset(&p, 0, sizeof p);
    if (!PyArg_ParseTuple(args, "iidp", &p.fd, &p.threads, &seconds, &p.gather))
        return NULL;
    if (p.threads < 1 || p.threads > 64) {
        PyErr_SetString(PyExc_ValueError, "threads must be 1 to 64");
        return NULL;
    }
    memset(p.line, 'x', sizeof p.line);
    p.line[sizeof p.line - 1] = '\n';
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv, NULL);
    pthread_t threads[64];
    Py_BEGIN_ALLOW_THREADS
    for (int i = 0; i < p.threads; i++)
        pthread_create(&threads[i], NULL, pure_main, &p);
    usleep((useconds_t)(seconds * 1e6));
    p.stop = 1;
    for (int i = 0; i < p.threads; i++)
        pthread_join(threads[i], NULL);
    Py_END_ALLOW_THREADS
    return Py_BuildValue("ll", p.written, p.syncs);
}

static PyMethodDef module_methods[] = {
    {"pure", pure, METH_VARARGS, "C threads alone: (lines, syncs) written in that many seconds."},
    {NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "gilfree_flusher", NULL, -1, module_methods};

PyMODINIT_FUNC PyInit_gilfree_flusher(void) {
    if (PyType_Ready(&FlusherType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&FlusherType);
    PyModule_AddObject(m, "Flusher", (PyObject *)&FlusherType);
    return m;
}
