/*
 * iotrace preload shim, MPI part: PMPI wrappers of the MPI-IO and the
 * communication calls. Every wrapper is defined twice, as MPI_X for C
 * programs and as PMPI_X for the Fortran bindings of Open MPI, which call
 * the PMPI_ layer directly; both call the library's PMPI_X (found with
 * dlsym(RTLD_NEXT)). Only the outermost MPI call of a thread is recorded,
 * so calls the library makes to itself are not. POSIX calls made inside
 * an MPI-IO call are marked (RF_IN_MPIIO) by the POSIX part.
 *
 * Ranks are recorded as ranks of MPI_COMM_WORLD; communicators get ids
 * that every member computes alike (0 world, 1 self, and for a new
 * communicator a hash of its parent's id, the number of communicators
 * made from the parent so far, and its members). The library is found at
 * run time: this file needs mpi.h to build, not libmpi to load. It is
 * found however it was loaded: a program linked with it has it in the
 * global scope (dlsym(RTLD_NEXT)); a module loaded with RTLD_LOCAL
 * (mpi4py's MPI.so, which Python loads so) has it in its own scope only,
 * where the shim looks it up among the loaded objects (lib_sym). A
 * function the shim cannot find is never called: the wrapper fails with
 * MPI_ERR_INTERN and the process records no MPI.
 *
 * Built by iotrace (capture/preload): cc -shared -fPIC -O2 -I<mpi.h dir>.
 */
#define _GNU_SOURCE
#include "shim.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <mpi.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

#include "mpilib.h"
#include "mpiclock.h"

/* ---- communicators ---- */

struct comm {
	MPI_Comm c;
	uint32_t id;
	uint32_t seq;  /* communicators made from this one */
	int size;
	int *world;    /* world rank of each rank */
	int used;
};

#define COMMS 4096
static struct comm comms[COMMS];
static pthread_mutex_t comm_mu = PTHREAD_MUTEX_INITIALIZER;
static int world_rank = -1, world_size;
static uint32_t world_seq, self_seq;

static uint32_t fnv(uint32_t h, uint32_t v) {
	for (int i = 0; i < 4; i++) {
		h ^= v & 0xff;
		h *= 16777619u;
		v >>= 8;
	}
	return h;
}

static int cmp_int(const void *a, const void *b) {
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* members fills the world ranks of c's ranks. */
static int *members(MPI_Comm c, int *size) {
	MPI_Group g, wg;
	int n = 0;
	LIB(MPI_Comm_size, int (*)(MPI_Comm, int *))(c, &n);
	int *in = malloc(sizeof(int) * (n > 0 ? n : 1)), *out = malloc(sizeof(int) * (n > 0 ? n : 1));
	for (int i = 0; i < n; i++) in[i] = i;
	LIB(MPI_Comm_group, int (*)(MPI_Comm, MPI_Group *))(c, &g);
	LIB(MPI_Comm_group, int (*)(MPI_Comm, MPI_Group *))(MPI_COMM_WORLD, &wg);
	LIB(MPI_Group_translate_ranks, int (*)(MPI_Group, int, const int *, MPI_Group, int *))(g, n, in, wg, out);
	LIB(MPI_Group_free, int (*)(MPI_Group *))(&g);
	LIB(MPI_Group_free, int (*)(MPI_Group *))(&wg);
	free(in);
	*size = n;
	return out;
}

static struct comm *find(MPI_Comm c) {
	for (int i = 0; i < COMMS; i++)
		if (comms[i].used && comms[i].c == c) return &comms[i];
	return NULL;
}

/* add registers c with an id made of key and its members. */
static struct comm *add(MPI_Comm c, uint32_t key) {
	int n;
	int *w = members(c, &n);
	int *sorted = malloc(sizeof(int) * (n > 0 ? n : 1));
	memcpy(sorted, w, sizeof(int) * n);
	qsort(sorted, n, sizeof(int), cmp_int);
	uint32_t h = fnv(2166136261u, key);
	for (int i = 0; i < n; i++) h = fnv(h, (uint32_t)sorted[i]);
	free(sorted);
	if (h < 2) h += 2;
	pthread_mutex_lock(&comm_mu);
	struct comm *e = find(c);
	if (!e)
		for (int i = 0; i < COMMS; i++)
			if (!comms[i].used) {
				e = &comms[i];
				break;
			}
	if (e) {
		free(e->world);
		e->c = c;
		e->id = h;
		e->seq = 0;
		e->size = n;
		e->world = w;
		e->used = 1;
	} else {
		free(w);
	}
	pthread_mutex_unlock(&comm_mu);
	return e;
}

/* comm_id returns c's id and, for rank r of c (or -1), its world rank. */
static uint32_t comm_id(MPI_Comm c, int r, int32_t *world) {
	if (world) *world = -1;
	if (c == MPI_COMM_WORLD) {
		if (world && r >= 0) *world = r;
		return 0;
	}
	if (c == MPI_COMM_SELF) {
		if (world && r == 0) *world = world_rank;
		return 1;
	}
	pthread_mutex_lock(&comm_mu);
	struct comm *e = find(c);
	uint32_t id = e ? e->id : 0;
	if (e && world && r >= 0 && r < e->size) *world = e->world[r];
	pthread_mutex_unlock(&comm_mu);
	if (!e) {
		/* Made by a call the shim does not wrap: named by its members. */
		e = add(c, 0xC0FFEEu);
		if (!e) return 0;
		if (world && r >= 0 && r < e->size) *world = e->world[r];
		id = e->id;
	}
	return id;
}

/* next_key returns the key of the next communicator made from parent. */
static uint32_t next_key(MPI_Comm parent) {
	uint32_t pid = comm_id(parent, -1, NULL), seq;
	if (parent == MPI_COMM_WORLD)
		seq = world_seq++;
	else if (parent == MPI_COMM_SELF)
		seq = self_seq++;
	else {
		pthread_mutex_lock(&comm_mu);
		struct comm *e = find(parent);
		seq = e ? e->seq++ : 0;
		pthread_mutex_unlock(&comm_mu);
	}
	return fnv(fnv(2166136261u, pid), seq);
}

static int64_t tsize(MPI_Datatype t) {
	int s = 0;
	if (t == MPI_DATATYPE_NULL) return 0;
	LIB(MPI_Type_size, int (*)(MPI_Datatype, int *))(t, &s);
	return s;
}

/* ---- recording ---- */

#define ENTER                                      \
	int *dp_ = iotrace_mpi_depth();                \
	int outer_ = (*dp_)++ == 0 && iotrace_active() && !mpi_off; \
	int64_t t0_ = outer_ ? iotrace_now() : 0
#define LEAVE (*dp_)--
#define STAMP(r)                     \
	(r).start = t0_;                  \
	(r).dur = iotrace_now() - t0_

static int64_t err_ret(int rc) {
	if (rc == MPI_SUCCESS) return 0;
	int cls = MPI_ERR_OTHER;
	LIB(MPI_Error_class, int (*)(int, int *))(rc, &cls);
	switch (cls) {
	case MPI_ERR_NO_SUCH_FILE: return -ENOENT;
	case MPI_ERR_FILE_EXISTS: return -EEXIST;
	case MPI_ERR_ACCESS: return -EACCES;
	case MPI_ERR_READ_ONLY: return -EROFS;
	case MPI_ERR_NO_SPACE: return -ENOSPC;
	case MPI_ERR_QUOTA: return -EDQUOT;
	case MPI_ERR_AMODE: return -EINVAL;
	case MPI_ERR_FILE_IN_USE: return -EBUSY;
	}
	return -EIO;
}


/* ---- startup ---- */

static void rank_known(void) {
	if (mpi_off) return;
	LIB(MPI_Comm_rank, int (*)(MPI_Comm, int *))(MPI_COMM_WORLD, &world_rank);
	LIB(MPI_Comm_size, int (*)(MPI_Comm, int *))(MPI_COMM_WORLD, &world_size);
	iotrace_set_rank(world_rank, world_size);
}

/* clock_out records a reading of the clock exchange (mpiclock.h): start
 * and duration the question's departure and the answer's round trip,
 * bytes the reference's reading, size the phase (0 start-up, 1 end), peer
 * the reference rank; no offset. The reading (wall-clock ns) goes in
 * bytes, which the spool writes as it is, not in off, whose value the next
 * record's would be written relative to (docs/FORMAT.md, "Preload spool"). */
static void clock_out(int phase, const struct clock_reading *c) {
	struct rec r = {0};
	r.call = C_MPI_CLOCK;
	r.start = c->t1;
	r.dur = c->t3 - c->t1;
	r.off = -1;
	r.bytes = c->ref;
	r.size = phase;
	r.peer = 0;
	iotrace_emit(&r, NULL, NULL);
}

/* started: MPI_Init has returned; the clock exchange of the start-up is
 * made then, and the one of the end before MPI_Finalize. Every rank of
 * the job takes part when iotrace asked (IOTRACE_CLOCK_SYNC), whether its
 * shim records or not; the library's own calls are not recorded. */
static void started(void) {
	rank_known();
	if (!mpi_off) clock_sync(0, iotrace_clock_base(), clock_out);
}

WRAP(int, MPI_Init, (int *argc, char ***argv), (argc, argv)) {
	REALP(MPI_Init, int (*)(int *, char ***));
	int *dp = iotrace_mpi_depth();
	(*dp)++;
	int rc = real(argc, argv);
	if (rc == MPI_SUCCESS) started();
	(*dp)--;
	return rc;
}

WRAP(int, MPI_Init_thread, (int *argc, char ***argv, int req, int *prov), (argc, argv, req, prov)) {
	REALP(MPI_Init_thread, int (*)(int *, char ***, int, int *));
	int *dp = iotrace_mpi_depth();
	(*dp)++;
	int rc = real(argc, argv, req, prov);
	if (rc == MPI_SUCCESS) started();
	(*dp)--;
	return rc;
}

WRAP(int, MPI_Finalize, (void), ()) {
	REALP(MPI_Finalize, int (*)(void));
	int *dp = iotrace_mpi_depth();
	(*dp)++;
	if (!mpi_off) clock_sync(1, iotrace_clock_base(), clock_out);
	int rc = real();
	(*dp)--;
	return rc;
}

/* ---- point to point ---- */

/* p2p records a message call of count elements of t with peer (a rank of
 * c, or MPI_ANY_SOURCE) and tag. */
static void p2p(int call, int64_t t0, int count, MPI_Datatype t, int peer, int tag, MPI_Comm c, int rc, MPI_Status *st) {
	struct rec r = {0};
	r.call = call;
	r.start = t0;
	r.dur = iotrace_now() - t0;
	r.bytes = (int64_t)count * tsize(t);
	r.count = count;
	r.tag = tag;
	if (st && rc == MPI_SUCCESS) {
		/* A receive: the message it matched. */
		if (peer == MPI_ANY_SOURCE) r.flags |= RF_ANY_SOURCE;
		if (tag == MPI_ANY_TAG) r.flags |= RF_ANY_TAG;
		peer = st->MPI_SOURCE;
		r.tag = st->MPI_TAG;
		MPI_Count n = 0;
		LIB(MPI_Get_elements_x, int (*)(const MPI_Status *, MPI_Datatype, MPI_Count *))(st, MPI_BYTE, &n);
		r.bytes = n;
	}
	if (peer == MPI_PROC_NULL) return;
	r.comm = comm_id(c, peer, &r.peer);
	if (peer == MPI_ANY_SOURCE) r.peer = -1;
	if (r.tag == MPI_ANY_TAG) r.tag = -1;
	r.ret = err_ret(rc);
	iotrace_emit(&r, NULL, NULL);
}

/* Outstanding requests of messages, so that a wait counts only those. */
#define REQS 65536
static MPI_Request reqs[REQS];
static unsigned req_next;
static pthread_mutex_t req_mu = PTHREAD_MUTEX_INITIALIZER;

static void req_add(MPI_Request r) {
	pthread_mutex_lock(&req_mu);
	reqs[req_next++ % REQS] = r;
	pthread_mutex_unlock(&req_mu);
}

static int req_take(MPI_Request r) {
	int found = 0;
	pthread_mutex_lock(&req_mu);
	for (unsigned i = 0; i < REQS; i++)
		if (reqs[i] == r && r != MPI_REQUEST_NULL) {
			reqs[i] = MPI_REQUEST_NULL;
			found = 1;
			break;
		}
	pthread_mutex_unlock(&req_mu);
	return found;
}

#define SEND_WRAP(NAME, CALL)                                                                     \
	WRAP(int, NAME, (const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c),          \
	     (b, n, t, d, tag, c)) {                                                                  \
		REALP(NAME, int (*)(const void *, int, MPI_Datatype, int, int, MPI_Comm));               \
		ENTER;                                                                                    \
		int rc = real(b, n, t, d, tag, c);                                                        \
		if (outer_) p2p(CALL, t0_, n, t, d, tag, c, rc, NULL);                                     \
		LEAVE;                                                                                    \
		return rc;                                                                                \
	}

SEND_WRAP(MPI_Send, C_MPI_SEND)
SEND_WRAP(MPI_Ssend, C_MPI_SEND)
SEND_WRAP(MPI_Bsend, C_MPI_SEND)
SEND_WRAP(MPI_Rsend, C_MPI_SEND)

#define ISEND_WRAP(NAME)                                                                          \
	WRAP(int, NAME, (const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c, MPI_Request *q), \
	     (b, n, t, d, tag, c, q)) {                                                               \
		REALP(NAME, int (*)(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *)); \
		ENTER;                                                                                    \
		int rc = real(b, n, t, d, tag, c, q);                                                     \
		if (outer_ && d != MPI_PROC_NULL) {                                                        \
			p2p(C_MPI_ISEND, t0_, n, t, d, tag, c, rc, NULL);                                     \
			if (rc == MPI_SUCCESS) req_add(*q);                                                   \
		}                                                                                         \
		LEAVE;                                                                                    \
		return rc;                                                                                \
	}

ISEND_WRAP(MPI_Isend)
ISEND_WRAP(MPI_Issend)
ISEND_WRAP(MPI_Ibsend)
ISEND_WRAP(MPI_Irsend)

WRAP(int, MPI_Recv, (void *b, int n, MPI_Datatype t, int s, int tag, MPI_Comm c, MPI_Status *st),
     (b, n, t, s, tag, c, st)) {
	REALP(MPI_Recv, int (*)(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status *));
	ENTER;
	MPI_Status mine;
	if (st == MPI_STATUS_IGNORE) st = &mine;
	int rc = real(b, n, t, s, tag, c, st);
	if (outer_) p2p(C_MPI_RECV, t0_, n, t, s, tag, c, rc, st);
	LEAVE;
	return rc;
}

WRAP(int, MPI_Irecv, (void *b, int n, MPI_Datatype t, int s, int tag, MPI_Comm c, MPI_Request *q),
     (b, n, t, s, tag, c, q)) {
	REALP(MPI_Irecv, int (*)(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *));
	ENTER;
	int rc = real(b, n, t, s, tag, c, q);
	if (outer_ && s != MPI_PROC_NULL) {
		p2p(C_MPI_IRECV, t0_, n, t, s, tag, c, rc, NULL);
		if (rc == MPI_SUCCESS) req_add(*q);
	}
	LEAVE;
	return rc;
}

/* MPI_Wait and MPI_Waitall complete non-blocking MPI-IO calls too
 * (MPI_File_iwrite_at …): the POSIX calls the library makes for them
 * there are recorded as made inside an MPI-IO call (IN_MPIIO), as those
 * of the blocking calls are, not left out as an MPI call's own. */
#define WAIT_IO_ENTER             \
	int *wio_ = iotrace_mpiio_depth(); \
	(*wio_)++
#define WAIT_IO_LEAVE (*wio_)--

WRAP(int, MPI_Wait, (MPI_Request *q, MPI_Status *st), (q, st)) {
	REALP(MPI_Wait, int (*)(MPI_Request *, MPI_Status *));
	ENTER;
	int mine = outer_ && req_take(*q);
	WAIT_IO_ENTER;
	int rc = real(q, st);
	WAIT_IO_LEAVE;
	if (mine) {
		struct rec r = {0};
		r.call = C_MPI_WAIT;
		STAMP(r);
		r.count = 1;
		r.ret = err_ret(rc);
		iotrace_emit(&r, NULL, NULL);
	}
	LEAVE;
	return rc;
}

WRAP(int, MPI_Waitall, (int n, MPI_Request *q, MPI_Status *st), (n, q, st)) {
	REALP(MPI_Waitall, int (*)(int, MPI_Request *, MPI_Status *));
	ENTER;
	int mine = 0;
	if (outer_)
		for (int i = 0; i < n; i++) mine += req_take(q[i]);
	WAIT_IO_ENTER;
	int rc = real(n, q, st);
	WAIT_IO_LEAVE;
	if (mine) {
		struct rec r = {0};
		r.call = C_MPI_WAITALL;
		STAMP(r);
		r.count = mine;
		r.ret = err_ret(rc);
		iotrace_emit(&r, NULL, NULL);
	}
	LEAVE;
	return rc;
}

/* sendrecv records an MPI_Sendrecv of count elements of t to dest with
 * stag, receiving from src with rtag: both halves, the receive half (the
 * message it matched, as for a receive) in off and size (RF_RECV_HALF).
 * MPI_PROC_NULL is -2: that half moves nothing. */
static void sendrecv(int64_t t0, int count, MPI_Datatype t, int dest, int stag, int src, int rtag, MPI_Comm c, int rc, MPI_Status *st) {
	if (dest == MPI_PROC_NULL && src == MPI_PROC_NULL) return;
	struct rec r = {0};
	r.call = C_MPI_SENDRECV;
	r.start = t0;
	r.dur = iotrace_now() - t0;
	r.bytes = dest == MPI_PROC_NULL ? 0 : (int64_t)count * tsize(t); /* the bytes it sends */
	r.count = count;
	r.tag = stag;
	r.flags = RF_RECV_HALF;
	if (src == MPI_ANY_SOURCE) r.flags |= RF_ANY_SOURCE;
	if (rtag == MPI_ANY_TAG) r.flags |= RF_ANY_TAG;
	if (rc == MPI_SUCCESS && src != MPI_PROC_NULL) {
		src = st->MPI_SOURCE;
		rtag = st->MPI_TAG;
	}
	r.comm = comm_id(c, dest, &r.peer);
	if (dest == MPI_PROC_NULL) r.peer = -2;
	int32_t w = -1;
	if (src >= 0) comm_id(c, src, &w);
	r.off = src == MPI_PROC_NULL ? -2 : w;
	r.size = rtag == MPI_ANY_TAG ? -1 : rtag;
	r.ret = err_ret(rc);
	iotrace_emit(&r, NULL, NULL);
}

WRAP(int, MPI_Sendrecv,
     (const void *sb, int sn, MPI_Datatype st_, int d, int stag, void *rb, int rn, MPI_Datatype rt, int s, int rtag, MPI_Comm c, MPI_Status *st),
     (sb, sn, st_, d, stag, rb, rn, rt, s, rtag, c, st)) {
	REALP(MPI_Sendrecv, int (*)(const void *, int, MPI_Datatype, int, int, void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status *));
	ENTER;
	MPI_Status mine;
	if (st == MPI_STATUS_IGNORE) st = &mine;
	int rc = real(sb, sn, st_, d, stag, rb, rn, rt, s, rtag, c, st);
	if (outer_) sendrecv(t0_, sn, st_, d, stag, s, rtag, c, rc, st);
	LEAVE;
	return rc;
}

WRAP(int, MPI_Sendrecv_replace,
     (void *b, int n, MPI_Datatype t, int d, int stag, int s, int rtag, MPI_Comm c, MPI_Status *st),
     (b, n, t, d, stag, s, rtag, c, st)) {
	REALP(MPI_Sendrecv_replace, int (*)(void *, int, MPI_Datatype, int, int, int, int, MPI_Comm, MPI_Status *));
	ENTER;
	MPI_Status mine;
	if (st == MPI_STATUS_IGNORE) st = &mine;
	int rc = real(b, n, t, d, stag, s, rtag, c, st);
	if (outer_) sendrecv(t0_, n, t, d, stag, s, rtag, c, rc, st);
	LEAVE;
	return rc;
}

/* ---- collectives ---- */

static void coll(int call, int64_t t0, int64_t bytes, int root, MPI_Comm c, int rc) {
	struct rec r = {0};
	r.call = call;
	r.start = t0;
	r.dur = iotrace_now() - t0;
	r.bytes = bytes;
	r.comm = comm_id(c, root, &r.peer);
	if (root < 0) r.peer = -1;
	r.ret = err_ret(rc);
	iotrace_emit(&r, NULL, NULL);
}

static int comm_size(MPI_Comm c) {
	int n = 0;
	LIB(MPI_Comm_size, int (*)(MPI_Comm, int *))(c, &n);
	return n;
}

static int comm_rank(MPI_Comm c) {
	int n = 0;
	LIB(MPI_Comm_rank, int (*)(MPI_Comm, int *))(c, &n);
	return n;
}

WRAP(int, MPI_Barrier, (MPI_Comm c), (c)) {
	REALP(MPI_Barrier, int (*)(MPI_Comm));
	ENTER;
	int rc = real(c);
	if (outer_) coll(C_MPI_BARRIER, t0_, 0, -1, c, rc);
	LEAVE;
	return rc;
}

WRAP(int, MPI_Bcast, (void *b, int n, MPI_Datatype t, int root, MPI_Comm c), (b, n, t, root, c)) {
	REALP(MPI_Bcast, int (*)(void *, int, MPI_Datatype, int, MPI_Comm));
	ENTER;
	int rc = real(b, n, t, root, c);
	if (outer_) coll(C_MPI_BCAST, t0_, (int64_t)n * tsize(t), root, c, rc);
	LEAVE;
	return rc;
}

WRAP(int, MPI_Reduce, (const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c),
     (sb, rb, n, t, op, root, c)) {
	REALP(MPI_Reduce, int (*)(const void *, void *, int, MPI_Datatype, MPI_Op, int, MPI_Comm));
	ENTER;
	int rc = real(sb, rb, n, t, op, root, c);
	if (outer_) coll(C_MPI_REDUCE, t0_, (int64_t)n * tsize(t), root, c, rc);
	LEAVE;
	return rc;
}

WRAP(int, MPI_Allreduce, (const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c),
     (sb, rb, n, t, op, c)) {
	REALP(MPI_Allreduce, int (*)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm));
	ENTER;
	int rc = real(sb, rb, n, t, op, c);
	if (outer_) coll(C_MPI_ALLREDUCE, t0_, (int64_t)n * tsize(t), -1, c, rc);
	LEAVE;
	return rc;
}

WRAP(int, MPI_Gather, (const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt, int root, MPI_Comm c),
     (sb, sn, st, rb, rn, rt, root, c)) {
	REALP(MPI_Gather, int (*)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, int, MPI_Comm));
	ENTER;
	int rc = real(sb, sn, st, rb, rn, rt, root, c);
	if (outer_) coll(C_MPI_GATHER, t0_, sb == MPI_IN_PLACE ? (int64_t)rn * tsize(rt) : (int64_t)sn * tsize(st), root, c, rc);
	LEAVE;
	return rc;
}

WRAP(int, MPI_Gatherv,
     (const void *sb, int sn, MPI_Datatype st, void *rb, const int *rn, const int *dp, MPI_Datatype rt, int root, MPI_Comm c),
     (sb, sn, st, rb, rn, dp, rt, root, c)) {
	REALP(MPI_Gatherv, int (*)(const void *, int, MPI_Datatype, void *, const int *, const int *, MPI_Datatype, int, MPI_Comm));
	ENTER;
	int rc = real(sb, sn, st, rb, rn, dp, rt, root, c);
	if (outer_) {
		int64_t b = (int64_t)sn * tsize(st);
		if (sb == MPI_IN_PLACE && rn) b = (int64_t)rn[comm_rank(c)] * tsize(rt);
		coll(C_MPI_GATHERV, t0_, b, root, c, rc);
	}
	LEAVE;
	return rc;
}

WRAP(int, MPI_Scatter, (const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt, int root, MPI_Comm c),
     (sb, sn, st, rb, rn, rt, root, c)) {
	REALP(MPI_Scatter, int (*)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, int, MPI_Comm));
	ENTER;
	int rc = real(sb, sn, st, rb, rn, rt, root, c);
	if (outer_) coll(C_MPI_SCATTER, t0_, rb == MPI_IN_PLACE ? (int64_t)sn * tsize(st) : (int64_t)rn * tsize(rt), root, c, rc);
	LEAVE;
	return rc;
}

WRAP(int, MPI_Scatterv,
     (const void *sb, const int *sn, const int *dp, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt, int root, MPI_Comm c),
     (sb, sn, dp, st, rb, rn, rt, root, c)) {
	REALP(MPI_Scatterv, int (*)(const void *, const int *, const int *, MPI_Datatype, void *, int, MPI_Datatype, int, MPI_Comm));
	ENTER;
	int rc = real(sb, sn, dp, st, rb, rn, rt, root, c);
	if (outer_) {
		int64_t b = (int64_t)rn * tsize(rt);
		if (rb == MPI_IN_PLACE && sn) b = (int64_t)sn[comm_rank(c)] * tsize(st);
		coll(C_MPI_SCATTERV, t0_, b, root, c, rc);
	}
	LEAVE;
	return rc;
}

WRAP(int, MPI_Allgather, (const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt, MPI_Comm c),
     (sb, sn, st, rb, rn, rt, c)) {
	REALP(MPI_Allgather, int (*)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm));
	ENTER;
	int rc = real(sb, sn, st, rb, rn, rt, c);
	if (outer_) coll(C_MPI_ALLGATHER, t0_, sb == MPI_IN_PLACE ? (int64_t)rn * tsize(rt) : (int64_t)sn * tsize(st), -1, c, rc);
	LEAVE;
	return rc;
}

WRAP(int, MPI_Allgatherv,
     (const void *sb, int sn, MPI_Datatype st, void *rb, const int *rn, const int *dp, MPI_Datatype rt, MPI_Comm c),
     (sb, sn, st, rb, rn, dp, rt, c)) {
	REALP(MPI_Allgatherv, int (*)(const void *, int, MPI_Datatype, void *, const int *, const int *, MPI_Datatype, MPI_Comm));
	ENTER;
	int rc = real(sb, sn, st, rb, rn, dp, rt, c);
	if (outer_) {
		int64_t b = (int64_t)sn * tsize(st);
		if (sb == MPI_IN_PLACE && rn) b = (int64_t)rn[comm_rank(c)] * tsize(rt);
		coll(C_MPI_ALLGATHERV, t0_, b, -1, c, rc);
	}
	LEAVE;
	return rc;
}

WRAP(int, MPI_Alltoall, (const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt, MPI_Comm c),
     (sb, sn, st, rb, rn, rt, c)) {
	REALP(MPI_Alltoall, int (*)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm));
	ENTER;
	int rc = real(sb, sn, st, rb, rn, rt, c);
	if (outer_) {
		int64_t per = sb == MPI_IN_PLACE ? (int64_t)rn * tsize(rt) : (int64_t)sn * tsize(st);
		coll(C_MPI_ALLTOALL, t0_, per * comm_size(c), -1, c, rc);
	}
	LEAVE;
	return rc;
}

WRAP(int, MPI_Alltoallv,
     (const void *sb, const int *sn, const int *sd, MPI_Datatype st, void *rb, const int *rn, const int *rd, MPI_Datatype rt, MPI_Comm c),
     (sb, sn, sd, st, rb, rn, rd, rt, c)) {
	REALP(MPI_Alltoallv, int (*)(const void *, const int *, const int *, MPI_Datatype, void *, const int *, const int *, MPI_Datatype, MPI_Comm));
	ENTER;
	int rc = real(sb, sn, sd, st, rb, rn, rd, rt, c);
	if (outer_) {
		const int *cnt = sb == MPI_IN_PLACE ? rn : sn;
		int64_t b = 0, sz = tsize(sb == MPI_IN_PLACE ? rt : st);
		int n = comm_size(c);
		for (int i = 0; cnt && i < n; i++) b += (int64_t)cnt[i] * sz;
		coll(C_MPI_ALLTOALLV, t0_, b, -1, c, rc);
	}
	LEAVE;
	return rc;
}

/* ---- communicators ---- */

static void made(int call, int64_t t0, MPI_Comm parent, uint32_t key, MPI_Comm *nc, int rc) {
	struct rec r = {0};
	r.call = call;
	r.start = t0;
	r.dur = iotrace_now() - t0;
	r.comm = comm_id(parent, -1, NULL);
	r.ret = -1;
	if (rc == MPI_SUCCESS && nc && *nc != MPI_COMM_NULL) {
		struct comm *e = add(*nc, key);
		if (e) r.ret = e->id;
	} else if (rc != MPI_SUCCESS) {
		r.ret = err_ret(rc);
	}
	iotrace_emit(&r, NULL, NULL);
}

WRAP(int, MPI_Comm_split, (MPI_Comm c, int color, int key, MPI_Comm *nc), (c, color, key, nc)) {
	REALP(MPI_Comm_split, int (*)(MPI_Comm, int, int, MPI_Comm *));
	ENTER;
	uint32_t k = outer_ ? next_key(c) : 0;
	int rc = real(c, color, key, nc);
	if (outer_) made(C_MPI_COMM_SPLIT, t0_, c, k, nc, rc);
	LEAVE;
	return rc;
}

WRAP(int, MPI_Comm_split_type, (MPI_Comm c, int type, int key, MPI_Info info, MPI_Comm *nc), (c, type, key, info, nc)) {
	REALP(MPI_Comm_split_type, int (*)(MPI_Comm, int, int, MPI_Info, MPI_Comm *));
	ENTER;
	uint32_t k = outer_ ? next_key(c) : 0;
	int rc = real(c, type, key, info, nc);
	if (outer_) made(C_MPI_COMM_SPLIT, t0_, c, k, nc, rc);
	LEAVE;
	return rc;
}

WRAP(int, MPI_Comm_create, (MPI_Comm c, MPI_Group g, MPI_Comm *nc), (c, g, nc)) {
	REALP(MPI_Comm_create, int (*)(MPI_Comm, MPI_Group, MPI_Comm *));
	ENTER;
	uint32_t k = outer_ ? next_key(c) : 0;
	int rc = real(c, g, nc);
	if (outer_) made(C_MPI_COMM_SPLIT, t0_, c, k, nc, rc);
	LEAVE;
	return rc;
}

WRAP(int, MPI_Comm_dup, (MPI_Comm c, MPI_Comm *nc), (c, nc)) {
	REALP(MPI_Comm_dup, int (*)(MPI_Comm, MPI_Comm *));
	ENTER;
	uint32_t k = outer_ ? next_key(c) : 0;
	int rc = real(c, nc);
	if (outer_) made(C_MPI_COMM_DUP, t0_, c, k, nc, rc);
	LEAVE;
	return rc;
}

WRAP(int, MPI_Cart_create, (MPI_Comm c, int nd, const int *dims, const int *periods, int reorder, MPI_Comm *nc),
     (c, nd, dims, periods, reorder, nc)) {
	REALP(MPI_Cart_create, int (*)(MPI_Comm, int, const int *, const int *, int, MPI_Comm *));
	ENTER;
	uint32_t k = outer_ ? next_key(c) : 0;
	int rc = real(c, nd, dims, periods, reorder, nc);
	if (outer_) made(C_MPI_COMM_SPLIT, t0_, c, k, nc, rc);
	LEAVE;
	return rc;
}

WRAP(int, MPI_Comm_free, (MPI_Comm *c), (c)) {
	REALP(MPI_Comm_free, int (*)(MPI_Comm *));
	pthread_mutex_lock(&comm_mu);
	struct comm *e = c ? find(*c) : NULL;
	if (e) {
		e->used = 0;
		free(e->world);
		e->world = NULL;
	}
	pthread_mutex_unlock(&comm_mu);
	return real(c);
}

/* ---- MPI-IO ---- */

struct file {
	MPI_File fh;
	int id;
	uint32_t comm;
	int64_t etype; /* bytes of the view's etype */
	int used;
};

#define FILES 1024
static struct file files[FILES];
static pthread_mutex_t file_mu = PTHREAD_MUTEX_INITIALIZER;

static struct file *file_of(MPI_File fh) {
	struct file *f = NULL;
	pthread_mutex_lock(&file_mu);
	for (int i = 0; i < FILES; i++)
		if (files[i].used && files[i].fh == fh) {
			f = &files[i];
			break;
		}
	pthread_mutex_unlock(&file_mu);
	return f;
}

static struct file *file_add(MPI_File fh, uint32_t comm) {
	struct file *f = NULL;
	pthread_mutex_lock(&file_mu);
	int id = 1;
	for (;; id++) {
		int taken = 0;
		for (int i = 0; i < FILES; i++)
			if (files[i].used && files[i].id == id) taken = 1;
		if (!taken) break;
	}
	for (int i = 0; i < FILES; i++)
		if (!files[i].used) {
			f = &files[i];
			f->fh = fh;
			f->id = id;
			f->comm = comm;
			f->etype = 1;
			f->used = 1;
			break;
		}
	pthread_mutex_unlock(&file_mu);
	return f;
}

/* filename drops a ROMIO file-system prefix ("ufs:") and makes the name
 * absolute. */
static const char *filename(const char *name, char *buf) {
	const char *colon = name ? strchr(name, ':') : NULL;
	const char *slash = name ? strchr(name, '/') : NULL;
	if (colon && (!slash || colon < slash) && colon - name > 1) name = colon + 1;
	if (!name || name[0] == '/') return name;
	if (!getcwd(buf, PATH_MAX)) return name;
	size_t l = strnlen(buf, PATH_MAX);
	if (l + 1 + strlen(name) >= PATH_MAX) return name;
	buf[l] = '/';
	strcpy(buf + l + 1, name);
	return buf;
}

#define IO_ENTER       \
	ENTER;             \
	int *io_ = iotrace_mpiio_depth(); \
	(*io_)++
#define IO_LEAVE \
	(*io_)--;    \
	LEAVE

static void io_rec(int call, int64_t t0, struct file *f, int64_t off, int64_t size, int count, int64_t moved, int rc) {
	struct rec r = {0};
	r.call = call;
	r.start = t0;
	r.dur = iotrace_now() - t0;
	r.fd = f ? f->id : -1;
	r.comm = f ? f->comm : 0;
	r.off = off;
	r.size = size;
	r.count = count;
	r.ret = rc == MPI_SUCCESS ? moved : err_ret(rc);
	iotrace_emit(&r, NULL, NULL);
}

WRAP(int, MPI_File_open, (MPI_Comm c, const char *name, int amode, MPI_Info info, MPI_File *fh), (c, name, amode, info, fh)) {
	REALP(MPI_File_open, int (*)(MPI_Comm, const char *, int, MPI_Info, MPI_File *));
	IO_ENTER;
	int rc = real(c, name, amode, info, fh);
	if (outer_) {
		char buf[PATH_MAX];
		struct rec r = {0};
		r.call = C_MPI_FILE_OPEN;
		STAMP(r);
		r.comm = comm_id(c, -1, NULL);
		r.oflags = (uint32_t)amode;
		r.fd = -1;
		r.ret = err_ret(rc);
		if (rc == MPI_SUCCESS) {
			struct file *f = file_add(*fh, r.comm);
			if (f) r.fd = f->id;
		}
		iotrace_emit(&r, filename(name, buf), NULL);
	}
	IO_LEAVE;
	return rc;
}

WRAP(int, MPI_File_close, (MPI_File *fh), (fh)) {
	REALP(MPI_File_close, int (*)(MPI_File *));
	IO_ENTER;
	struct file *f = fh ? file_of(*fh) : NULL;
	int rc = real(fh);
	if (outer_ && f) io_rec(C_MPI_FILE_CLOSE, t0_, f, 0, 0, 0, 0, rc);
	if (f) {
		pthread_mutex_lock(&file_mu);
		f->used = 0;
		pthread_mutex_unlock(&file_mu);
	}
	IO_LEAVE;
	return rc;
}

WRAP(int, MPI_File_delete, (const char *name, MPI_Info info), (name, info)) {
	REALP(MPI_File_delete, int (*)(const char *, MPI_Info));
	IO_ENTER;
	int rc = real(name, info);
	if (outer_) {
		char buf[PATH_MAX];
		struct rec r = {0};
		r.call = C_MPI_FILE_DELETE;
		STAMP(r);
		r.fd = -1;
		r.ret = err_ret(rc);
		iotrace_emit(&r, filename(name, buf), NULL);
	}
	IO_LEAVE;
	return rc;
}

static int64_t moved(MPI_Status *st, int rc) {
	MPI_Count n = 0;
	if (rc == MPI_SUCCESS) LIB(MPI_Get_elements_x, int (*)(const MPI_Status *, MPI_Datatype, MPI_Count *))(st, MPI_BYTE, &n);
	return n;
}

static int64_t position(MPI_File fh, struct file *f) {
	MPI_Offset p = 0;
	if (LIB(MPI_File_get_position, int (*)(MPI_File, MPI_Offset *))(fh, &p) != MPI_SUCCESS) return -1;
	return p * (f ? f->etype : 1);
}

/* Explicit-offset data calls. */
#define AT_WRAP(NAME, CALL, BUF)                                                                          \
	WRAP(int, NAME, (MPI_File fh, MPI_Offset off, BUF b, int n, MPI_Datatype t, MPI_Status *st),          \
	     (fh, off, b, n, t, st)) {                                                                         \
		REALP(NAME, int (*)(MPI_File, MPI_Offset, BUF, int, MPI_Datatype, MPI_Status *));                 \
		IO_ENTER;                                                                                          \
		MPI_Status mine;                                                                                   \
		if (st == MPI_STATUS_IGNORE) st = &mine;                                                           \
		int rc = real(fh, off, b, n, t, st);                                                               \
		if (outer_) {                                                                                      \
			struct file *f = file_of(fh);                                                                  \
			io_rec(CALL, t0_, f, off * (f ? f->etype : 1), (int64_t)n * tsize(t), n, moved(st, rc), rc);  \
		}                                                                                                  \
		IO_LEAVE;                                                                                          \
		return rc;                                                                                         \
	}

AT_WRAP(MPI_File_read_at, C_MPI_FILE_READ_AT, void *)
AT_WRAP(MPI_File_read_at_all, C_MPI_FILE_READ_AT_ALL, void *)
AT_WRAP(MPI_File_write_at, C_MPI_FILE_WRITE_AT, const void *)
AT_WRAP(MPI_File_write_at_all, C_MPI_FILE_WRITE_AT_ALL, const void *)

/* Individual and shared file pointer data calls. */
#define PTR_WRAP(NAME, CALL, BUF, SHARED)                                                                 \
	WRAP(int, NAME, (MPI_File fh, BUF b, int n, MPI_Datatype t, MPI_Status *st), (fh, b, n, t, st)) {    \
		REALP(NAME, int (*)(MPI_File, BUF, int, MPI_Datatype, MPI_Status *));                             \
		IO_ENTER;                                                                                          \
		MPI_Status mine;                                                                                   \
		if (st == MPI_STATUS_IGNORE) st = &mine;                                                           \
		struct file *f = outer_ ? file_of(fh) : NULL;                                                      \
		int64_t off = outer_ && !(SHARED) ? position(fh, f) : 0;                                           \
		int rc = real(fh, b, n, t, st);                                                                    \
		if (outer_) io_rec(CALL, t0_, f, off, (int64_t)n * tsize(t), n, moved(st, rc), rc);                \
		IO_LEAVE;                                                                                          \
		return rc;                                                                                         \
	}

PTR_WRAP(MPI_File_read, C_MPI_FILE_READ, void *, 0)
PTR_WRAP(MPI_File_read_all, C_MPI_FILE_READ_ALL, void *, 0)
PTR_WRAP(MPI_File_write, C_MPI_FILE_WRITE, const void *, 0)
PTR_WRAP(MPI_File_write_all, C_MPI_FILE_WRITE_ALL, const void *, 0)
PTR_WRAP(MPI_File_read_shared, C_MPI_FILE_READ_SHARED, void *, 1)
PTR_WRAP(MPI_File_write_shared, C_MPI_FILE_WRITE_SHARED, const void *, 1)
PTR_WRAP(MPI_File_read_ordered, C_MPI_FILE_READ_ORDERED, void *, 1)
PTR_WRAP(MPI_File_write_ordered, C_MPI_FILE_WRITE_ORDERED, const void *, 1)

/* Non-blocking data calls: recorded when issued, with the bytes asked. */
#define IAT_WRAP(NAME, CALL, BUF)                                                                          \
	WRAP(int, NAME, (MPI_File fh, MPI_Offset off, BUF b, int n, MPI_Datatype t, MPI_Request *q),           \
	     (fh, off, b, n, t, q)) {                                                                           \
		REALP(NAME, int (*)(MPI_File, MPI_Offset, BUF, int, MPI_Datatype, MPI_Request *));                 \
		IO_ENTER;                                                                                           \
		int rc = real(fh, off, b, n, t, q);                                                                 \
		if (outer_) {                                                                                       \
			struct file *f = file_of(fh);                                                                   \
			int64_t sz = (int64_t)n * tsize(t);                                                             \
			io_rec(CALL, t0_, f, off * (f ? f->etype : 1), sz, n, sz, rc);                                  \
		}                                                                                                   \
		IO_LEAVE;                                                                                           \
		return rc;                                                                                          \
	}

IAT_WRAP(MPI_File_iread_at, C_MPI_FILE_IREAD_AT, void *)
IAT_WRAP(MPI_File_iwrite_at, C_MPI_FILE_IWRITE_AT, const void *)

#define IPTR_WRAP(NAME, CALL, BUF)                                                                         \
	WRAP(int, NAME, (MPI_File fh, BUF b, int n, MPI_Datatype t, MPI_Request *q), (fh, b, n, t, q)) {      \
		REALP(NAME, int (*)(MPI_File, BUF, int, MPI_Datatype, MPI_Request *));                             \
		IO_ENTER;                                                                                           \
		struct file *f = outer_ ? file_of(fh) : NULL;                                                       \
		int64_t off = outer_ ? position(fh, f) : 0;                                                         \
		int rc = real(fh, b, n, t, q);                                                                      \
		if (outer_) {                                                                                       \
			int64_t sz = (int64_t)n * tsize(t);                                                             \
			io_rec(CALL, t0_, f, off, sz, n, sz, rc);                                                       \
		}                                                                                                   \
		IO_LEAVE;                                                                                           \
		return rc;                                                                                          \
	}

IPTR_WRAP(MPI_File_iread, C_MPI_FILE_IREAD, void *)
IPTR_WRAP(MPI_File_iwrite, C_MPI_FILE_IWRITE, const void *)

/* view describes a filetype as blocks of *block bytes every *stride
 * bytes (0, 0: contiguous), the first *first bytes after the
 * displacement: exactly for a vector, a resized contiguous type, and a
 * type of one block anywhere in its extent (HDF5's, a rank's part of a
 * dataset: first is where the block starts), and as its size every
 * extent bytes from its first byte for the others. */
static void view(MPI_Datatype ft, int64_t *block, int64_t *stride, int64_t *first) {
	MPI_Aint lb = 0, ext = 0, tlb = 0, text = 0;
	int64_t size = tsize(ft);
	LIB(MPI_Type_get_extent, int (*)(MPI_Datatype, MPI_Aint *, MPI_Aint *))(ft, &lb, &ext);
	*block = 0;
	*stride = 0;
	*first = 0;
	if (size <= 0 || ext <= size) return;
	*block = size;
	*stride = ext;
	if (LIB(MPI_Type_get_true_extent, int (*)(MPI_Datatype, MPI_Aint *, MPI_Aint *))(ft, &tlb, &text) == MPI_SUCCESS && tlb > lb)
		*first = (int64_t)(tlb - lb);
	int ni, na, nd, comb;
	if (LIB(MPI_Type_get_envelope, int (*)(MPI_Datatype, int *, int *, int *, int *))(ft, &ni, &na, &nd, &comb) != MPI_SUCCESS) return;
	if ((comb != MPI_COMBINER_VECTOR && comb != MPI_COMBINER_HVECTOR) || ni > 8 || na > 8 || nd > 8) return;
	int is[8];
	MPI_Aint as[8];
	MPI_Datatype ds[8];
	if (LIB(MPI_Type_get_contents, int (*)(MPI_Datatype, int, int, int, int *, MPI_Aint *, MPI_Datatype *))(ft, ni, na, nd, is, as, ds) != MPI_SUCCESS) return;
	MPI_Aint olb = 0, oext = 0;
	LIB(MPI_Type_get_extent, int (*)(MPI_Datatype, MPI_Aint *, MPI_Aint *))(ds[0], &olb, &oext);
	int64_t osize = tsize(ds[0]);
	if (is[0] > 1 && osize == oext) {
		*block = (int64_t)is[1] * osize;
		*stride = comb == MPI_COMBINER_VECTOR ? (int64_t)is[2] * oext : (int64_t)as[0];
	}
	int oni, ona, ond, ocomb;
	LIB(MPI_Type_get_envelope, int (*)(MPI_Datatype, int *, int *, int *, int *))(ds[0], &oni, &ona, &ond, &ocomb);
	if (ocomb != MPI_COMBINER_NAMED) LIB(MPI_Type_free, int (*)(MPI_Datatype *))(&ds[0]);
}

WRAP(int, MPI_File_set_view, (MPI_File fh, MPI_Offset disp, MPI_Datatype et, MPI_Datatype ft, const char *rep, MPI_Info info),
     (fh, disp, et, ft, rep, info)) {
	REALP(MPI_File_set_view, int (*)(MPI_File, MPI_Offset, MPI_Datatype, MPI_Datatype, const char *, MPI_Info));
	IO_ENTER;
	int rc = real(fh, disp, et, ft, rep, info);
	struct file *f = file_of(fh);
	if (f && rc == MPI_SUCCESS) f->etype = tsize(et) > 0 ? tsize(et) : 1;
	if (outer_) {
		struct rec r = {0};
		r.call = C_MPI_FILE_SET_VIEW;
		STAMP(r);
		r.fd = f ? f->id : -1;
		r.comm = f ? f->comm : 0;
		int64_t first;
		view(ft, &r.size, &r.bytes, &first);
		r.off = disp + first;
		r.ret = err_ret(rc);
		iotrace_emit(&r, NULL, NULL);
	}
	IO_LEAVE;
	return rc;
}

/* MPI_File_get_size is no I/O of the program's, but the library may
 * make calls on the file for it (Open MPI: lseek to the end and back):
 * they are marked as made inside MPI-IO, as its machinery. */
WRAP(int, MPI_File_get_size, (MPI_File fh, MPI_Offset *size), (fh, size)) {
	REALP(MPI_File_get_size, int (*)(MPI_File, MPI_Offset *));
	IO_ENTER;
	int rc = real(fh, size);
	IO_LEAVE;
	(void)t0_;
	return rc;
}

WRAP(int, MPI_File_sync, (MPI_File fh), (fh)) {
	REALP(MPI_File_sync, int (*)(MPI_File));
	IO_ENTER;
	int rc = real(fh);
	if (outer_) io_rec(C_MPI_FILE_SYNC, t0_, file_of(fh), 0, 0, 0, 0, rc);
	IO_LEAVE;
	return rc;
}

static int whence(int w) { return w == MPI_SEEK_CUR ? 1 : w == MPI_SEEK_END ? 2 : 0; }

#define SEEK_WRAP(NAME, CALL)                                                              \
	WRAP(int, NAME, (MPI_File fh, MPI_Offset off, int w), (fh, off, w)) {                 \
		REALP(NAME, int (*)(MPI_File, MPI_Offset, int));                                   \
		IO_ENTER;                                                                           \
		int rc = real(fh, off, w);                                                          \
		if (outer_) {                                                                       \
			struct file *f = file_of(fh);                                                   \
			struct rec r = {0};                                                             \
			r.call = CALL;                                                                  \
			STAMP(r);                                                                       \
			r.fd = f ? f->id : -1;                                                          \
			r.comm = f ? f->comm : 0;                                                       \
			r.off = off * (f ? f->etype : 1);                                               \
			r.oflags = (uint32_t)whence(w);                                                 \
			r.ret = err_ret(rc);                                                            \
			iotrace_emit(&r, NULL, NULL);                                                   \
		}                                                                                   \
		IO_LEAVE;                                                                           \
		return rc;                                                                          \
	}

SEEK_WRAP(MPI_File_seek, C_MPI_FILE_SEEK)
SEEK_WRAP(MPI_File_seek_shared, C_MPI_FILE_SEEK_SHARED)

#define SIZE_WRAP(NAME, CALL)                                                              \
	WRAP(int, NAME, (MPI_File fh, MPI_Offset size), (fh, size)) {                        \
		REALP(NAME, int (*)(MPI_File, MPI_Offset));                                        \
		IO_ENTER;                                                                           \
		int rc = real(fh, size);                                                            \
		if (outer_) io_rec(CALL, t0_, file_of(fh), 0, size, 0, 0, rc);                      \
		IO_LEAVE;                                                                           \
		return rc;                                                                          \
	}

SIZE_WRAP(MPI_File_set_size, C_MPI_FILE_SET_SIZE)
SIZE_WRAP(MPI_File_preallocate, C_MPI_FILE_PREALLOCATE)
