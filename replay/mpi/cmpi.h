// C helpers of package mpi: MPI constants that are macros (cgo cannot
// use them), and calls with their arguments in the form Go passes.
#ifndef IOTRACE_CMPI_H
#define IOTRACE_CMPI_H
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

static inline MPI_Comm comm_world(void) { return MPI_COMM_WORLD; }
static inline MPI_Comm comm_self(void) { return MPI_COMM_SELF; }
static inline MPI_Comm comm_null(void) { return MPI_COMM_NULL; }
static inline MPI_Request req_null(void) { return MPI_REQUEST_NULL; }
static inline MPI_Datatype type_byte(void) { return MPI_BYTE; }
static inline MPI_Datatype type_int64(void) { return MPI_INT64_T; }

static inline int is_init(void) { int f = 0; MPI_Initialized(&f); return f; }
static inline int is_final(void) { int f = 0; MPI_Finalized(&f); return f; }

static inline int init_thread(int *provided) {
	if (is_init()) return MPI_Query_thread(provided);
	return MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, provided);
}
static inline int thread_multiple(void) { return MPI_THREAD_MULTIPLE; }

static inline int errors_return(MPI_Comm c) { return MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN); }

static inline int split(MPI_Comm parent, int color, int key, MPI_Comm *out) {
	return MPI_Comm_split(parent, color < 0 ? MPI_UNDEFINED : color, key, out);
}

static inline int tag_ub_value(void) {
	int *v, flag = 0;
	MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &v, &flag);
	return flag ? *v : 32767;
}

// node_info says how many processes of MPI_COMM_WORLD share this
// process's node (its shared-memory domain) and the world rank of the
// first of them; 1 and this process's rank if the library cannot tell.
// Collective over MPI_COMM_WORLD.
static inline void node_info(int *size, int *first) {
	MPI_Comm c;
	int me = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	*size = 1;
	*first = me;
	if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &c) != MPI_SUCCESS) return;
	MPI_Comm_size(c, size);
	if (MPI_Allreduce(&me, first, 1, MPI_INT, MPI_MIN, c) != MPI_SUCCESS) *first = me;
	MPI_Comm_free(&c);
}

static inline void error_string(int code, char *buf, int len) {
	char s[MPI_MAX_ERROR_STRING];
	int n = 0;
	if (MPI_Error_string(code, s, &n) != MPI_SUCCESS) n = 0;
	if (n >= len) n = len - 1;
	memcpy(buf, s, n);
	buf[n] = 0;
}

// unit_type is a contiguous type of 1 MiB, the unit of transfers too
// large to count in bytes.
static inline MPI_Datatype unit_type(void) {
	static MPI_Datatype t = MPI_DATATYPE_NULL;
	if (t == MPI_DATATYPE_NULL) {
		MPI_Type_contiguous(1 << 20, MPI_BYTE, &t);
		MPI_Type_commit(&t);
	}
	return t;
}

// issend sends n bytes of buf (a count of units when unit is set).
static inline int issend(void *buf, int count, int unit, int dest, int tag, MPI_Comm c, MPI_Request *r) {
	return MPI_Issend(buf, count, unit ? unit_type() : MPI_BYTE, dest, tag, c, r);
}

// improbe looks for a message on c; *found says whether it found one.
static inline int improbe(MPI_Comm c, int *found, MPI_Message *msg, int *source, int *tag, long long *bytes) {
	MPI_Status st;
	int rc = MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, c, found, msg, &st);
	if (rc != MPI_SUCCESS || !*found) return rc;
	*source = st.MPI_SOURCE;
	*tag = st.MPI_TAG;
	MPI_Count n = 0;
	rc = MPI_Get_elements_x(&st, MPI_BYTE, &n);
	*bytes = (long long)n;
	return rc;
}

// mrecv receives a probed message of bytes bytes into buf (of at least
// bytes, rounded up to units when unit is set).
static inline int mrecv(void *buf, long long bytes, int unit, MPI_Message *msg) {
	long long count = unit ? (bytes + (1 << 20) - 1) >> 20 : bytes;
	return MPI_Mrecv(buf, (int)count, unit ? unit_type() : MPI_BYTE, msg, MPI_STATUS_IGNORE);
}

static inline int test(MPI_Request *r, int *done) {
	return MPI_Test(r, done, MPI_STATUS_IGNORE);
}

static inline int ibarrier(MPI_Comm c, MPI_Request *r) { return MPI_Ibarrier(c, r); }

static inline int ibcast(void *buf, int count, int unit, int root, MPI_Comm c, MPI_Request *r) {
	return MPI_Ibcast(buf, count, unit ? unit_type() : MPI_BYTE, root, c, r);
}

// Reductions add doubles (most codes reduce doubles), from zeroed buffers.
static inline int ireduce(void *in, void *out, int count, int root, MPI_Comm c, MPI_Request *r) {
	return MPI_Ireduce(in, out, count, MPI_DOUBLE, MPI_SUM, root, c, r);
}
static inline int iallreduce(void *in, void *out, int count, MPI_Comm c, MPI_Request *r) {
	return MPI_Iallreduce(in, out, count, MPI_DOUBLE, MPI_SUM, c, r);
}

static inline int iallgather64(long long *in, long long *out, MPI_Comm c, MPI_Request *r) {
	return MPI_Iallgather(in, 1, MPI_INT64_T, out, 1, MPI_INT64_T, c, r);
}
static inline int iallreduce64(long long *in, long long *out, int n, int max, MPI_Comm c, MPI_Request *r) {
	return MPI_Iallreduce(in, out, n, MPI_INT64_T, max ? MPI_MAX : MPI_SUM, c, r);
}

static inline int igatherv(void *in, int count, void *out, int *counts, int *displs, int unit, int root, MPI_Comm c, MPI_Request *r) {
	MPI_Datatype t = unit ? unit_type() : MPI_BYTE;
	return MPI_Igatherv(in, count, t, out, counts, displs, t, root, c, r);
}
static inline int iscatterv(void *in, int *counts, int *displs, void *out, int count, int unit, int root, MPI_Comm c, MPI_Request *r) {
	MPI_Datatype t = unit ? unit_type() : MPI_BYTE;
	return MPI_Iscatterv(in, counts, displs, t, out, count, t, root, c, r);
}
static inline int iallgatherv(void *in, int count, void *out, int *counts, int *displs, int unit, MPI_Comm c, MPI_Request *r) {
	MPI_Datatype t = unit ? unit_type() : MPI_BYTE;
	return MPI_Iallgatherv(in, count, t, out, counts, displs, t, c, r);
}
static inline int ialltoallv(void *in, int *scounts, int *sdispls, void *out, int *rcounts, int *rdispls, int unit, MPI_Comm c, MPI_Request *r) {
	MPI_Datatype t = unit ? unit_type() : MPI_BYTE;
	return MPI_Ialltoallv(in, scounts, sdispls, t, out, rcounts, rdispls, t, c, r);
}

// ---- the watch: heartbeats between processes ----

// isend_bytes sends n bytes of buf to dest with tag.
static inline int isend_bytes(void *buf, int n, int dest, int tag, MPI_Comm c, MPI_Request *r) {
	return MPI_Isend(buf, n, MPI_BYTE, dest, tag, c, r);
}

// irecv_any receives up to n bytes from src (any source if negative),
// with any tag.
static inline int irecv_any(void *buf, int n, int src, MPI_Comm c, MPI_Request *r) {
	return MPI_Irecv(buf, n, MPI_BYTE, src < 0 ? MPI_ANY_SOURCE : src, MPI_ANY_TAG, c, r);
}

// test_from tests r and, when it completed, says its source and tag.
static inline int test_from(MPI_Request *r, int *done, int *source, int *tag) {
	MPI_Status st;
	int rc = MPI_Test(r, done, &st);
	if (rc == MPI_SUCCESS && *done) {
		*source = st.MPI_SOURCE;
		*tag = st.MPI_TAG;
	}
	return rc;
}

// cancel_recv cancels a posted receive and completes it.
static inline void cancel_recv(MPI_Request *r) {
	if (*r == MPI_REQUEST_NULL) return;
	MPI_Cancel(r);
	MPI_Wait(r, MPI_STATUS_IGNORE);
}

// forget leaves a send to complete on its own (a peer that does not answer).
static inline void forget(MPI_Request *r) {
	if (*r != MPI_REQUEST_NULL) MPI_Request_free(r);
}

// ---- MPI-IO ----

#include <limits.h>

static inline MPI_Info info_null(void) { return MPI_INFO_NULL; }

static inline int info_set(MPI_Info *info, char *k, char *v) {
	int rc = MPI_SUCCESS;
	if (*info == MPI_INFO_NULL) rc = MPI_Info_create(info);
	if (rc != MPI_SUCCESS) return rc;
	return MPI_Info_set(*info, k, v);
}

static inline int file_open(MPI_Comm c, char *name, int amode, MPI_Info info, MPI_File *fh) {
	return MPI_File_open(c, name, amode, info, fh);
}

static inline int file_delete(char *name, MPI_Info info) { return MPI_File_delete(name, info); }

// file_set_view sets a view of blocks of block bytes every stride bytes
// from disp (the whole file from disp when block is 0 or stride <= block).
static inline int file_set_view(MPI_File fh, long long disp, long long block, long long stride, MPI_Info info) {
	MPI_Datatype ft = MPI_BYTE, c;
	int rc;
	if (block > 0 && stride > block && block <= INT_MAX) {
		if ((rc = MPI_Type_contiguous((int)block, MPI_BYTE, &c)) != MPI_SUCCESS) return rc;
		rc = MPI_Type_create_resized(c, 0, (MPI_Aint)stride, &ft);
		MPI_Type_free(&c);
		if (rc != MPI_SUCCESS) return rc;
		if ((rc = MPI_Type_commit(&ft)) != MPI_SUCCESS) return rc;
	}
	rc = MPI_File_set_view(fh, (MPI_Offset)disp, MPI_BYTE, ft, "native", info);
	if (ft != MPI_BYTE) MPI_Type_free(&ft);
	return rc;
}

enum {
	RW_READ_AT, RW_READ_AT_ALL, RW_WRITE_AT, RW_WRITE_AT_ALL,
	RW_READ, RW_READ_ALL, RW_WRITE, RW_WRITE_ALL,
	RW_READ_SHARED, RW_WRITE_SHARED, RW_READ_ORDERED, RW_WRITE_ORDERED,
};

// file_rw reads or writes n bytes of buf with the call op selects (at
// off for the explicit-offset calls) and says in *done how many moved.
static inline int file_rw(MPI_File fh, int op, long long off, void *buf, long long n, long long *done) {
	MPI_Status st;
	MPI_Datatype t = MPI_BYTE, g = MPI_DATATYPE_NULL, big = MPI_DATATYPE_NULL;
	int count = (int)n, rc;
	*done = 0;
	if (n > INT_MAX) {
		// One element of a struct: q blocks of 1 GiB, then the rest.
		long long q = n >> 30, r = n & ((1LL << 30) - 1);
		int bl[2] = {(int)q, (int)r};
		MPI_Aint dp[2] = {0, (MPI_Aint)(q << 30)};
		MPI_Datatype ty[2];
		if ((rc = MPI_Type_contiguous(1 << 30, MPI_BYTE, &g)) != MPI_SUCCESS) return rc;
		ty[0] = g;
		ty[1] = MPI_BYTE;
		rc = MPI_Type_create_struct(2, bl, dp, ty, &big);
		MPI_Type_free(&g);
		if (rc != MPI_SUCCESS) return rc;
		if ((rc = MPI_Type_commit(&big)) != MPI_SUCCESS) return rc;
		t = big;
		count = 1;
	}
	switch (op) {
	case RW_READ_AT: rc = MPI_File_read_at(fh, off, buf, count, t, &st); break;
	case RW_READ_AT_ALL: rc = MPI_File_read_at_all(fh, off, buf, count, t, &st); break;
	case RW_WRITE_AT: rc = MPI_File_write_at(fh, off, buf, count, t, &st); break;
	case RW_WRITE_AT_ALL: rc = MPI_File_write_at_all(fh, off, buf, count, t, &st); break;
	case RW_READ: rc = MPI_File_read(fh, buf, count, t, &st); break;
	case RW_READ_ALL: rc = MPI_File_read_all(fh, buf, count, t, &st); break;
	case RW_WRITE: rc = MPI_File_write(fh, buf, count, t, &st); break;
	case RW_WRITE_ALL: rc = MPI_File_write_all(fh, buf, count, t, &st); break;
	case RW_READ_SHARED: rc = MPI_File_read_shared(fh, buf, count, t, &st); break;
	case RW_WRITE_SHARED: rc = MPI_File_write_shared(fh, buf, count, t, &st); break;
	case RW_READ_ORDERED: rc = MPI_File_read_ordered(fh, buf, count, t, &st); break;
	case RW_WRITE_ORDERED: rc = MPI_File_write_ordered(fh, buf, count, t, &st); break;
	default: rc = MPI_ERR_OTHER;
	}
	if (rc == MPI_SUCCESS) {
		MPI_Count c = 0;
		MPI_Get_elements_x(&st, MPI_BYTE, &c);
		*done = (long long)c;
	}
	if (big != MPI_DATATYPE_NULL) MPI_Type_free(&big);
	return rc;
}

static inline int file_seek(MPI_File fh, long long off, int whence, int shared) {
	int w = whence == 0 ? MPI_SEEK_SET : whence == 1 ? MPI_SEEK_CUR : MPI_SEEK_END;
	return shared ? MPI_File_seek_shared(fh, (MPI_Offset)off, w) : MPI_File_seek(fh, (MPI_Offset)off, w);
}

static inline int file_size(MPI_File fh, long long *size) {
	MPI_Offset s = 0;
	int rc = MPI_File_get_size(fh, &s);
	*size = (long long)s;
	return rc;
}

static inline int file_set_size(MPI_File fh, long long size) { return MPI_File_set_size(fh, (MPI_Offset)size); }
static inline int file_preallocate(MPI_File fh, long long size) { return MPI_File_preallocate(fh, (MPI_Offset)size); }

static inline int error_class(int rc) {
	int c = MPI_ERR_OTHER;
	MPI_Error_class(rc, &c);
	return c;
}

#endif
