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

#endif
