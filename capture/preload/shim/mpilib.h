/*
 * iotrace preload shim: finding the MPI library's functions and
 * predefined handles at run time, for the MPI part (mpi.c) and the clock
 * library (clocklib.c). Static definitions: each library that includes
 * this file has its own copy. Include after <mpi.h>.
 */
#ifndef IOTRACE_MPILIB_H
#define IOTRACE_MPILIB_H

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef EXPORT
#define EXPORT __attribute__((visibility("default")))
#endif

/* Both entry points of a wrapper: MPI_name and PMPI_name. */
#define WRAP(ret, name, params, args)                        \
	static ret w_##name params;                              \
	EXPORT ret name params { return w_##name args; }         \
	EXPORT ret P##name params { return w_##name args; }      \
	static ret w_##name params

/* ---- finding the MPI library ---- */

/* in_self says whether a is an address in this library (whose PMPI_
 * wrappers a lookup must not return). */
static int in_self(void *a) {
	static void *base;
	Dl_info di;
	if (!base && dladdr((void *)in_self, &di)) base = di.dli_fbase;
	return a && dladdr(a, &di) && di.dli_fbase == base;
}

#define MAX_OBJS 512
struct objs {
	int n;
	char *name[MAX_OBJS];
};

static int collect(struct dl_phdr_info *info, size_t size, void *data) {
	(void)size;
	struct objs *o = data;
	if (info->dlpi_name && info->dlpi_name[0] && o->n < MAX_OBJS) o->name[o->n++] = strdup(info->dlpi_name);
	return 0;
}

/* find_loaded looks name up in each loaded object's own scope: the
 * objects are listed first and opened (RTLD_NOLOAD: only those already
 * there) after, not from dl_iterate_phdr's callback, which holds the
 * loader's lock. */
static void *find_loaded(const char *name) {
	struct objs o = {0};
	dl_iterate_phdr(collect, &o);
	void *a = NULL;
	for (int i = 0; i < o.n; i++) {
		if (!a) {
			void *h = dlopen(o.name[i], RTLD_LAZY | RTLD_NOLOAD);
			if (h) {
				void *x = dlsym(h, name);
				if (x && !in_self(x)) a = x;
				dlclose(h);
			}
		}
		free(o.name[i]);
	}
	return a;
}

/* lib_sym finds a symbol of the MPI library: next in the global scope,
 * or in the loaded object that defines it. NULL when there is none. */
static void *lib_sym(const char *name) {
	void *a = dlsym(RTLD_NEXT, name);
	if (a && !in_self(a)) return a;
	return find_loaded(name);
}

/* mpi_off: a function of the library was not found; the process records
 * no MPI from then on. */
static int mpi_off;

static int no_lib(const char *name) {
	if (!__atomic_exchange_n(&mpi_off, 1, __ATOMIC_RELAXED))
		fprintf(stderr, "iotrace: the preload shim found no %s in the loaded MPI library; this process records no MPI calls\n", name);
	return MPI_ERR_INTERN;
}

/* REALP resolves the library's PMPI_name; a wrapper whose function is
 * not found fails (it cannot make the call) instead of calling NULL. */
#define REALP(name, type)                                                  \
	static __typeof__(P##name) *real;                                    \
	if (!real) real = (__typeof__(P##name) *)lib_sym("P" #name);         \
	if (!real) return no_lib("P" #name)

/* stub stands for a helper function of the library that is missing (it
 * writes no result: the caller's initial values stand). */
static int stub(void) { return MPI_ERR_INTERN; }

static void *lib_fn(const char *name) {
	void *a = lib_sym(name);
	if (!a) {
		no_lib(name);
		return (void *)stub;
	}
	return a;
}

#define LIB(name, type) ((type)lib_fn("P" #name))

/* Open MPI's predefined handles are the addresses of its global objects:
 * weak references, so that a program without MPI still loads this
 * library. They are resolved when the shim is loaded: a library loaded
 * later with RTLD_LOCAL is not in the shim's scope, and they are 0. Then
 * the objects are found as the functions are (and named 0 when not). */
#ifdef OPEN_MPI
#pragma weak ompi_mpi_comm_world
#pragma weak ompi_mpi_comm_self
#pragma weak ompi_mpi_comm_null
#pragma weak ompi_mpi_byte
#pragma weak ompi_mpi_datatype_null
#pragma weak ompi_request_null

static void *handle_of(void **slot, void *weak, const char *name) {
	void *h = __atomic_load_n(slot, __ATOMIC_RELAXED);
	if (h) return h;
	h = weak ? weak : lib_sym(name);
	__atomic_store_n(slot, h, __ATOMIC_RELAXED);
	return h;
}

#define HANDLE(type, g)                                                    \
	({                                                                   \
		static void *h_;                                                 \
		(type) handle_of(&h_, (void *)&(g), #g);                        \
	})
#undef MPI_COMM_WORLD
#undef MPI_COMM_SELF
#undef MPI_COMM_NULL
#undef MPI_BYTE
#undef MPI_DATATYPE_NULL
#undef MPI_REQUEST_NULL
#define MPI_COMM_WORLD HANDLE(MPI_Comm, ompi_mpi_comm_world)
#define MPI_COMM_SELF HANDLE(MPI_Comm, ompi_mpi_comm_self)
#define MPI_COMM_NULL HANDLE(MPI_Comm, ompi_mpi_comm_null)
#define MPI_BYTE HANDLE(MPI_Datatype, ompi_mpi_byte)
#define MPI_DATATYPE_NULL HANDLE(MPI_Datatype, ompi_mpi_datatype_null)
#define MPI_REQUEST_NULL HANDLE(MPI_Request, ompi_request_null)
#endif

#endif
