/*
 * iotrace preload shim, POSIX part: intercepts the file calls of libc
 * (open family, close, read/write family, lseek, fsync, fdatasync,
 * ftruncate, dup family, stat family, access, unlink, rename, mkdir,
 * rmdir, truncate, and stdio fopen/fread/fwrite/fseek/fflush/fclose) and
 * appends one raw record per call to this process's spool: a file in
 * $IOTRACE_SPOOL, mapped in shared memory, so that a record survives a
 * crash of the program the moment it is written.
 *
 * Built by iotrace (capture/preload): cc -shared -fPIC -O2. Needs libc only.
 */
#define _GNU_SOURCE
#undef _FORTIFY_SOURCE
#include "shim.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC 4
#endif

#define EXPORT __attribute__((visibility("default")))
#define TLS __thread __attribute__((tls_model("initial-exec")))

/* Chunks of the spool: a multiple of the record size and of the page
 * size (lcm(96, 4096) = 12288), about 4 MiB. */
#define CHUNK (12288 * 341)
#define SLOTS_PER_CHUNK (CHUNK / REC_SIZE)
#define MAX_CHUNKS 65536
#define FDKINDS 65536

struct header {
	char magic[8];
	uint32_t version, rec_size, header_size;
	uint32_t pid, ppid;
	int32_t rank, size; /* MPI rank and size, -1 until MPI_Init */
	uint32_t dropped;   /* records lost: the spool could not grow */
	int64_t mono_start, real_start;
	uint32_t cmdline_len;
	char cmdline[1024]; /* NUL-separated arguments */
	uint32_t cwd_len;
	char cwd[2048];
	char pad[3200 - 3136];
	/* Ring mode: the spool is a ring of `ring` slots that iotrace drains
	 * while the program runs (the consumer moves tail). */
	uint64_t head;  /* slots taken */
	uint32_t ring;  /* slots in the ring, 0 in linear mode */
	uint32_t consumer; /* pid of the consumer */
	char pad2[3264 - 3216];
	uint64_t tail;  /* slots drained, written by the consumer: a cache line of its own */
};

/* The Go reader (capture/preload/spool.go) reads these offsets. */
_Static_assert(__builtin_offsetof(struct header, mono_start) == 40, "header layout");
_Static_assert(__builtin_offsetof(struct header, cmdline_len) == 56, "header layout");
_Static_assert(__builtin_offsetof(struct header, cwd_len) == 1084, "header layout");
_Static_assert(__builtin_offsetof(struct header, head) == 3200, "header layout");
_Static_assert(__builtin_offsetof(struct header, ring) == 3208, "header layout");
_Static_assert(__builtin_offsetof(struct header, tail) == 3264, "header layout");
_Static_assert(sizeof(struct header) <= SPOOL_HEADER, "header size");

static struct header *hdr;
static int active;
/* record_all records the POSIX calls made inside MPI calls other than
 * MPI-IO too (IOTRACE_ALL=1, iotrace record --all). */
static int record_all;
static uint64_t next_slot;
static char *chunks[MAX_CHUNKS];
static char *ring_base;   /* ring mode: the slots */
static uint32_t ring_slots;
static int ring_dropping; /* the consumer died: records are counted, not written */
static pthread_mutex_t grow_mu = PTHREAD_MUTEX_INITIALIZER;
static int generation;
static uint32_t next_tid;
static unsigned char fdkind[FDKINDS]; /* 0 unknown, 1 file, 2 not a file, 3 file opened with O_APPEND */

static TLS int t_gen = -1;
static TLS uint32_t t_tid;
static TLS int t_in; /* inside the shim: calls pass through */
static TLS int t_mpi, t_mpiio;

EXPORT int *iotrace_mpi_depth(void) { return &t_mpi; }
EXPORT int *iotrace_mpiio_depth(void) { return &t_mpiio; }
EXPORT int iotrace_active(void) { return active; }

EXPORT int64_t iotrace_now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t real_now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- the spool ---- */

/* sys_mmap maps without going through the shim's own mmap wrapper. */
static void *sys_mmap(size_t len, int prot, int flags, int fd, off_t off) {
	return (void *)syscall(SYS_mmap, NULL, len, prot, flags, fd, off);
}

/* The shim keeps no descriptor open in the program: a linear spool grows
 * by opening its file again by name, mapping the next chunk and closing
 * it; a ring is mapped once. So the program's descriptors are numbered
 * as without the shim (its first open gets 3), and a program that closes
 * every descriptor (a daemon) cannot close the spool. */
static char spool_name[PATH_MAX];

static char *map_chunk(uint64_t c) {
	char *p = __atomic_load_n(&chunks[c], __ATOMIC_ACQUIRE);
	if (p) return p;
	pthread_mutex_lock(&grow_mu);
	p = chunks[c];
	int fd = p || !spool_name[0] ? -1 : (int)syscall(SYS_openat, AT_FDCWD, spool_name, O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		off_t need = SPOOL_HEADER + (off_t)(c + 1) * CHUNK;
		struct stat st;
		if (syscall(SYS_fstat, fd, &st) == 0 && st.st_size < need)
			syscall(SYS_ftruncate, fd, need);
		/* Populated: the pages of a spool in tmpfs come writable at once,
		 * not one fault per page in the calls that fill them. */
		void *m = sys_mmap(CHUNK, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, SPOOL_HEADER + (off_t)c * CHUNK);
		syscall(SYS_close, fd);
		if (m != MAP_FAILED) {
			p = m;
			__atomic_store_n(&chunks[c], p, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&grow_mu);
	return p;
}

static char *slot(uint64_t i) {
	if (ring_base) return ring_base + (i % ring_slots) * REC_SIZE;
	uint64_t c = i / SLOTS_PER_CHUNK;
	if (c >= MAX_CHUNKS) return NULL;
	char *p = map_chunk(c);
	return p ? p + (i % SLOTS_PER_CHUNK) * REC_SIZE : NULL;
}

static void copy_out(uint64_t i, const char *s, uint32_t n, uint32_t *pos) {
	/* Path bytes run on over the slots after the record. */
	while (n > 0) {
		uint64_t k = i + 1 + *pos / REC_SIZE;
		uint32_t at = *pos % REC_SIZE, m = REC_SIZE - at;
		if (m > n) m = n;
		char *d = slot(k);
		if (d) memcpy(d + at, s, m);
		s += m;
		n -= m;
		*pos += m;
	}
}

static uint32_t my_tid(void) {
	if (t_gen != generation) {
		t_gen = generation;
		if (syscall(SYS_gettid) == getpid())
			t_tid = 0;
		else
			t_tid = __atomic_add_fetch(&next_tid, 1, __ATOMIC_RELAXED);
	}
	return t_tid;
}

/* ring_wait waits until the consumer has drained the ring up to end −
 * ring_slots; false when it died (then records are counted as dropped:
 * nobody will drain them). */
static int ring_wait(uint64_t end) {
	if (end - __atomic_load_n(&hdr->tail, __ATOMIC_ACQUIRE) <= ring_slots) return 1;
	for (int k = 0;; k++) {
		if (ring_dropping) return 0;
		if (end - __atomic_load_n(&hdr->tail, __ATOMIC_ACQUIRE) <= ring_slots) return 1;
		if (k < 64) {
			sched_yield();
			continue;
		}
		struct timespec ts = {0, 100000};
		nanosleep(&ts, NULL);
		if (k % 1000 == 0 && hdr->consumer && kill((pid_t)hdr->consumer, 0) != 0 && errno == ESRCH) {
			ring_dropping = 1;
			return 0;
		}
	}
}

EXPORT void iotrace_emit(struct rec *r, const char *p, const char *p2) {
	if (!active) return;
	r->len = p ? (uint16_t)strnlen(p, PATH_MAX - 1) : 0;
	r->len2 = p2 ? (uint16_t)strnlen(p2, PATH_MAX - 1) : 0;
	r->tid = my_tid();
	if (t_mpiio > 0 && r->call < C_MPI_RANK) r->flags |= RF_IN_MPIIO;
	uint32_t n = 1 + (r->len + r->len2 + REC_SIZE - 1) / REC_SIZE;
	uint64_t i;
	if (ring_base) {
		i = __atomic_fetch_add(&hdr->head, n, __ATOMIC_RELAXED);
		if (!ring_wait(i + n)) {
			__atomic_add_fetch(&hdr->dropped, 1, __ATOMIC_RELAXED);
			return;
		}
	} else {
		i = __atomic_fetch_add(&next_slot, n, __ATOMIC_RELAXED);
	}
	r->seq = (uint32_t)i;
	struct rec *d = (struct rec *)slot(i);
	if (!d) {
		__atomic_add_fetch(&hdr->dropped, 1, __ATOMIC_RELAXED);
		return;
	}
	uint32_t pos = 0;
	if (r->len) copy_out(i, p, r->len, &pos);
	if (r->len2) copy_out(i, p2, r->len2, &pos);
	r->commit = REC_COMMIT | n;
	/* The ring is warm memory: plain stores, the commit word last (a
	 * release store orders it after the rest). */
	uint32_t commit = r->commit;
	r->commit = 0;
	memcpy((char *)d + 4, (char *)r + 4, REC_SIZE - 4);
	__atomic_store_n(&d->commit, commit, __ATOMIC_RELEASE);
}

EXPORT void iotrace_set_rank(int rank, int size) {
	if (!active) return;
	hdr->rank = rank;
	hdr->size = size;
	struct rec r = {0};
	r.call = C_MPI_RANK;
	r.start = iotrace_now();
	r.peer = rank;
	r.count = size;
	iotrace_emit(&r, NULL, NULL);
}

static void read_small(const char *name, char *buf, uint32_t cap, uint32_t *len) {
	int fd = syscall(SYS_openat, AT_FDCWD, name, O_RDONLY | O_CLOEXEC);
	*len = 0;
	if (fd < 0) return;
	long n = syscall(SYS_read, fd, buf, cap);
	if (n > 0) *len = (uint32_t)n;
	syscall(SYS_close, fd);
}

/* The spool settings, read from the environment once, at the start: a
 * program may change its environment before it forks. */
static char spool_dir[PATH_MAX];
static long spool_ring;
static uint32_t spool_consumer;

static void read_settings(void) {
	const char *dir = getenv("IOTRACE_SPOOL");
	if (!dir || !*dir || strlen(dir) >= sizeof spool_dir - 64) return;
	strcpy(spool_dir, dir);
	const char *rs = getenv("IOTRACE_RING");
	long ring = rs ? atol(rs) : 0;
	if (ring < 0 || ring > (1L << 24)) ring = 0;
	const char *cs = getenv("IOTRACE_CONSUMER");
	if (!cs || atol(cs) <= 0) ring = 0; /* a ring needs its consumer */
	spool_ring = ring;
	spool_consumer = ring ? (uint32_t)atol(cs) : 0;
	const char *all = getenv("IOTRACE_ALL");
	record_all = all && all[0] == '1';
}

static void open_spool(void) {
	if (!spool_dir[0]) return;
	long ring = spool_ring;
	char name[PATH_MAX];
	snprintf(name, sizeof name, "%s/%s-%d-%lld.sp", spool_dir, ring ? "ring" : "spool", (int)getpid(), (long long)iotrace_now());
	int fd = syscall(SYS_openat, AT_FDCWD, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) return;
	size_t size = SPOOL_HEADER + (size_t)ring * REC_SIZE;
	if (syscall(SYS_ftruncate, fd, (off_t)size) != 0) {
		syscall(SYS_close, fd);
		return;
	}
	void *m = sys_mmap(size, PROT_READ | PROT_WRITE, MAP_SHARED | (ring ? MAP_POPULATE : 0), fd, 0);
	syscall(SYS_close, fd);
	if (m == MAP_FAILED) return;
	hdr = m;
	if (ring) {
		ring_base = (char *)m + SPOOL_HEADER;
		ring_slots = (uint32_t)ring;
		hdr->ring = (uint32_t)ring;
		hdr->consumer = spool_consumer;
	} else {
		strcpy(spool_name, name);
	}
	hdr->version = SPOOL_VERSION;
	hdr->rec_size = REC_SIZE;
	hdr->header_size = SPOOL_HEADER;
	hdr->pid = getpid();
	hdr->ppid = getppid();
	hdr->rank = -1;
	hdr->size = -1;
	hdr->mono_start = iotrace_now();
	hdr->real_start = real_now();
	read_small("/proc/self/cmdline", hdr->cmdline, sizeof hdr->cmdline, &hdr->cmdline_len);
	if (syscall(SYS_getcwd, hdr->cwd, sizeof hdr->cwd) > 0) hdr->cwd_len = strnlen(hdr->cwd, sizeof hdr->cwd);
	memcpy(hdr->magic, ring ? RING_MAGIC : SPOOL_MAGIC, 8); /* last: a reader sees a whole header or none */
	active = 1;
}

static void before_fork(void) { pthread_mutex_lock(&grow_mu); }
static void after_fork_parent(void) { pthread_mutex_unlock(&grow_mu); }

static void after_fork_child(void) {
	pthread_mutex_unlock(&grow_mu);
	if (!active) return;
	/* The child writes its own spool: drop the parent's mappings. */
	active = 0;
	for (int c = 0; c < MAX_CHUNKS && chunks[c]; c++) {
		munmap(chunks[c], CHUNK);
		chunks[c] = NULL;
	}
	munmap(hdr, SPOOL_HEADER + (size_t)ring_slots * REC_SIZE);
	hdr = NULL;
	ring_base = NULL;
	ring_slots = 0;
	ring_dropping = 0;
	spool_name[0] = 0;
	next_slot = 0;
	next_tid = 0;
	generation++;
	open_spool();
}

__attribute__((constructor)) static void shim_init(void) {
	read_settings();
	open_spool();
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

/* ---- helpers of the wrappers ---- */

#define REAL(name)                                                         \
	static __typeof__(name) *real_##name;                                \
	if (!real_##name) real_##name = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

/* on says whether this call is recorded: not from inside the shim, and
 * not made by the MPI library inside an MPI call other than MPI-IO (the
 * configuration, plugins and session files of MPI_Init and
 * MPI_Finalize), unless record_all. */
static inline int on(void) { return active && !t_in && (t_mpi == 0 || t_mpiio > 0 || record_all); }

/* fd_type finds what fd is; with name, it records the path of a file
 * (C_NONE) and its position. */
static unsigned fd_type(int fd, int name);

/* fd_file says whether calls on fd are recorded: regular files,
 * directories and block devices (not pipes, sockets, terminals). The first call on a descriptor the shim did not see opened
 * records its path (C_NONE with the name) when it is a file. */
static int fd_file(int fd) {
	if (fd < 0) return 0;
	unsigned k = fd < FDKINDS ? fdkind[fd] : 0;
	if (k == 0) k = fd_type(fd, 1);
	return k == 1 || k == 3;
}

static unsigned fd_type(int fd, int name) {
	unsigned k;
	{
		struct stat st;
		if (syscall(SYS_fstat, fd, &st) != 0) return 0;
		k = (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode) || S_ISDIR(st.st_mode)) ? 1 : 2;
		if (k == 1) {
			int fl = syscall(SYS_fcntl, fd, F_GETFL);
			if (fl >= 0 && (fl & O_APPEND)) k = 3;
			char link[64], path[PATH_MAX];
			if (!name) goto done;
			snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
			long n = syscall(SYS_readlinkat, AT_FDCWD, link, path, sizeof path - 1);
			if (n > 0) {
				path[n] = 0;
				struct rec r = {0};
				r.call = C_NONE;
				r.fd = fd;
				r.start = iotrace_now();
				r.off = syscall(SYS_lseek, fd, 0, SEEK_CUR);
				r.oflags = fl >= 0 ? (uint32_t)fl : 0;
				long fdfl = syscall(SYS_fcntl, fd, F_GETFD);
				if (fdfl > 0 && (fdfl & FD_CLOEXEC)) r.oflags |= O_CLOEXEC;
				iotrace_emit(&r, path, NULL);
			}
		}
	done:
		if (fd < FDKINDS) fdkind[fd] = k;
	}
	return k;
}

static void fd_set_kind(int fd, unsigned k) {
	if (fd >= 0 && fd < FDKINDS) fdkind[fd] = k;
}

/* forget_range forgets the kinds of the descriptors a close_range
 * closed (with CLOSE_RANGE_CLOEXEC it closes none). */
static void forget_range(unsigned first, unsigned last, int fl) {
	if (fl & CLOSE_RANGE_CLOEXEC) return;
	for (unsigned fd = first; fd < FDKINDS && fd <= last; fd++) fdkind[fd] = 0;
}

/* fd_opened types a descriptor an open returned (the open names it). */
static void fd_opened(int fd) {
	if (fd < 0 || fd >= FDKINDS) return;
	fd_type(fd, 0);
}

/* abspath makes a relative path absolute with the working directory. */
static const char *abspath(const char *p, char *buf) {
	if (!p || p[0] == '/') return p;
	long n = syscall(SYS_getcwd, buf, PATH_MAX);
	if (n <= 0) return p;
	size_t l = strnlen(buf, PATH_MAX);
	snprintf(buf + l, PATH_MAX - l, "/%s", p);
	return buf;
}

/* atpath: a path relative to dirfd (not AT_FDCWD) is recorded as it is,
 * with the descriptor, for the encoder to resolve. */
static const char *atpath(int dirfd, const char *p, char *buf, struct rec *r) {
	if (!p || p[0] == '/' || dirfd == AT_FDCWD) return abspath(p, buf);
	r->flags |= RF_PATH_AT;
	r->fd = dirfd;
	return p;
}

/* atpath2 is atpath for a call's second path: its directory descriptor
 * goes in peer. */
static const char *atpath2(int dirfd, const char *p, char *buf, struct rec *r) {
	if (!p || p[0] == '/' || dirfd == AT_FDCWD) return abspath(p, buf);
	r->flags |= RF_PATH2_AT;
	r->peer = dirfd;
	return p;
}

/* know_dir makes sure the encoder knows the directory a relative path is
 * resolved against: a directory descriptor the shim did not see opened
 * (opendir's, an inherited one) gets its name recorded (C_NONE) before
 * the call that uses it. */
static inline void know_dir(int dirfd, const char *p) {
	if (dirfd >= 0 && dirfd < FDKINDS && fdkind[dirfd] == 0 && p && p[0] != '/') fd_type(dirfd, 1);
}

#define BEGIN                  \
	int64_t t0 = iotrace_now(); \
	t_in++
#define END(r)                                     \
	int saved = errno;                               \
	(r).dur = iotrace_now() - t0;                    \
	(r).start = t0;                                  \
	t_in--
#define RET(r, v) (r).ret = (v) < 0 ? -(int64_t)saved : (int64_t)(v)

static mode_t open_mode(int flags, va_list ap) {
	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) return va_arg(ap, mode_t);
	return 0;
}

/* ---- open family ---- */

#define OPEN_BODY(CALL, DIRFD, REALCALL)                              \
	if (!on()) return REALCALL;                                         \
	struct rec r = {0};                                                 \
	char buf[PATH_MAX];                                                 \
	know_dir(DIRFD, path);                                              \
	BEGIN;                                                              \
	int fd = REALCALL;                                                  \
	END(r);                                                             \
	r.call = CALL;                                                      \
	r.fd = -1;                                                          \
	const char *p = atpath(DIRFD, path, buf, &r);                       \
	r.oflags = (uint32_t)flags;                                         \
	r.mode = mode;                                                      \
	RET(r, fd);                                                         \
	t_in++;                                                             \
	fd_opened(fd);                                                      \
	t_in--;                                                             \
	iotrace_emit(&r, p, NULL);                                          \
	errno = saved;                                                      \
	return fd

EXPORT int open(const char *path, int flags, ...) {
	va_list ap;
	va_start(ap, flags);
	mode_t mode = open_mode(flags, ap);
	va_end(ap);
	REAL(open);
	OPEN_BODY(C_OPEN, AT_FDCWD, real_open(path, flags, mode));
}

EXPORT int open64(const char *path, int flags, ...) {
	va_list ap;
	va_start(ap, flags);
	mode_t mode = open_mode(flags, ap);
	va_end(ap);
	REAL(open64);
	OPEN_BODY(C_OPEN, AT_FDCWD, real_open64(path, flags, mode));
}

EXPORT int openat(int dirfd, const char *path, int flags, ...) {
	va_list ap;
	va_start(ap, flags);
	mode_t mode = open_mode(flags, ap);
	va_end(ap);
	REAL(openat);
	OPEN_BODY(C_OPENAT, dirfd, real_openat(dirfd, path, flags, mode));
}

EXPORT int openat64(int dirfd, const char *path, int flags, ...) {
	va_list ap;
	va_start(ap, flags);
	mode_t mode = open_mode(flags, ap);
	va_end(ap);
	REAL(openat64);
	OPEN_BODY(C_OPENAT, dirfd, real_openat64(dirfd, path, flags, mode));
}

EXPORT int creat(const char *path, mode_t mode) {
	int flags = O_CREAT | O_WRONLY | O_TRUNC;
	REAL(creat);
	OPEN_BODY(C_CREAT, AT_FDCWD, real_creat(path, mode));
}

EXPORT int creat64(const char *path, mode_t mode) {
	int flags = O_CREAT | O_WRONLY | O_TRUNC;
	REAL(creat64);
	OPEN_BODY(C_CREAT, AT_FDCWD, real_creat64(path, mode));
}

EXPORT int close(int fd) {
	REAL(close);
	if (!on() || fd < 0) return real_close(fd);
	t_in++;
	int file = fd_file(fd);
	t_in--;
	if (!file) {
		fd_set_kind(fd, 0);
		return real_close(fd);
	}
	struct rec r = {0};
	BEGIN;
	int rc = real_close(fd);
	END(r);
	fd_set_kind(fd, 0);
	r.call = C_CLOSE;
	r.fd = fd;
	RET(r, rc);
	iotrace_emit(&r, NULL, NULL);
	errno = saved;
	return rc;
}

/* ---- data calls ---- */

#define DATA_BODY(CALL, T, REALCALL, OFF, SIZE, COUNT, OFLAGS)           \
	if (!on() || !fd_file(fd)) return REALCALL;                         \
	struct rec r = {0};                                                  \
	BEGIN;                                                               \
	T got = REALCALL;                                                      \
	END(r);                                                              \
	r.call = CALL;                                                       \
	r.fd = fd;                                                           \
	r.off = (OFF);                                                       \
	r.size = (int64_t)(SIZE);                                            \
	r.count = (COUNT);                                                   \
	r.oflags = (OFLAGS);                                                 \
	RET(r, got);                                                           \
	if (r.off < 0 && got >= 0 && fd < FDKINDS && fdkind[fd] == 3) {        \
		t_in++;                                                          \
		off_t e = syscall(SYS_lseek, fd, 0, SEEK_CUR);                    \
		t_in--;                                                          \
		if (e >= 0) r.off = e - got;                                       \
	}                                                                    \
	iotrace_emit(&r, NULL, NULL);                                        \
	errno = saved;                                                       \
	return got

static int64_t iovsize(const struct iovec *iov, int cnt) {
	int64_t s = 0;
	for (int i = 0; i < cnt && iov; i++) s += iov[i].iov_len;
	return s;
}

EXPORT ssize_t read(int fd, void *b, size_t n) {
	REAL(read);
	DATA_BODY(C_READ, ssize_t, real_read(fd, b, n), -1, n, 0, 0);
}
EXPORT ssize_t write(int fd, const void *b, size_t n) {
	REAL(write);
	DATA_BODY(C_WRITE, ssize_t, real_write(fd, b, n), -1, n, 0, 0);
}
EXPORT ssize_t pread(int fd, void *b, size_t n, off_t off) {
	REAL(pread);
	DATA_BODY(C_PREAD, ssize_t, real_pread(fd, b, n, off), off, n, 0, 0);
}
EXPORT ssize_t pread64(int fd, void *b, size_t n, off64_t off) {
	REAL(pread64);
	DATA_BODY(C_PREAD, ssize_t, real_pread64(fd, b, n, off), off, n, 0, 0);
}
EXPORT ssize_t pwrite(int fd, const void *b, size_t n, off_t off) {
	REAL(pwrite);
	DATA_BODY(C_PWRITE, ssize_t, real_pwrite(fd, b, n, off), off, n, 0, 0);
}
EXPORT ssize_t pwrite64(int fd, const void *b, size_t n, off64_t off) {
	REAL(pwrite64);
	DATA_BODY(C_PWRITE, ssize_t, real_pwrite64(fd, b, n, off), off, n, 0, 0);
}
EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt) {
	REAL(readv);
	DATA_BODY(C_READV, ssize_t, real_readv(fd, iov, cnt), -1, iovsize(iov, cnt), cnt, 0);
}
EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt) {
	REAL(writev);
	DATA_BODY(C_WRITEV, ssize_t, real_writev(fd, iov, cnt), -1, iovsize(iov, cnt), cnt, 0);
}
EXPORT ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off) {
	REAL(preadv);
	DATA_BODY(C_PREADV, ssize_t, real_preadv(fd, iov, cnt, off), off, iovsize(iov, cnt), cnt, 0);
}
EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int cnt, off64_t off) {
	REAL(preadv64);
	DATA_BODY(C_PREADV, ssize_t, real_preadv64(fd, iov, cnt, off), off, iovsize(iov, cnt), cnt, 0);
}
EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off) {
	REAL(pwritev);
	DATA_BODY(C_PWRITEV, ssize_t, real_pwritev(fd, iov, cnt, off), off, iovsize(iov, cnt), cnt, 0);
}
EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off64_t off) {
	REAL(pwritev64);
	DATA_BODY(C_PWRITEV, ssize_t, real_pwritev64(fd, iov, cnt, off), off, iovsize(iov, cnt), cnt, 0);
}
EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int fl) {
	REAL(preadv2);
	DATA_BODY(C_PREADV2, ssize_t, real_preadv2(fd, iov, cnt, off, fl), off, iovsize(iov, cnt), cnt, (uint32_t)fl);
}
EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int fl) {
	REAL(pwritev2);
	DATA_BODY(C_PWRITEV2, ssize_t, real_pwritev2(fd, iov, cnt, off, fl), off, iovsize(iov, cnt), cnt, (uint32_t)fl);
}

#define FD_BODY(CALL, T, REALCALL, OFF, SIZE, OFLAGS)                    \
	if (!on() || !fd_file(fd)) return REALCALL;                         \
	struct rec r = {0};                                                  \
	BEGIN;                                                               \
	T v = REALCALL;                                                      \
	END(r);                                                              \
	r.call = CALL;                                                       \
	r.fd = fd;                                                           \
	r.off = (OFF);                                                       \
	r.size = (SIZE);                                                     \
	r.oflags = (OFLAGS);                                                 \
	RET(r, v);                                                           \
	iotrace_emit(&r, NULL, NULL);                                        \
	errno = saved;                                                       \
	return v

EXPORT off_t lseek(int fd, off_t off, int whence) {
	REAL(lseek);
	FD_BODY(C_LSEEK, off_t, real_lseek(fd, off, whence), off, 0, (uint32_t)whence);
}
EXPORT off64_t lseek64(int fd, off64_t off, int whence) {
	REAL(lseek64);
	FD_BODY(C_LSEEK, off64_t, real_lseek64(fd, off, whence), off, 0, (uint32_t)whence);
}
EXPORT int fsync(int fd) {
	REAL(fsync);
	FD_BODY(C_FSYNC, int, real_fsync(fd), 0, 0, 0);
}
EXPORT int fdatasync(int fd) {
	REAL(fdatasync);
	FD_BODY(C_FDATASYNC, int, real_fdatasync(fd), 0, 0, 0);
}
EXPORT int ftruncate(int fd, off_t len) {
	REAL(ftruncate);
	FD_BODY(C_FTRUNCATE, int, real_ftruncate(fd, len), 0, len, 0);
}
EXPORT int ftruncate64(int fd, off64_t len) {
	REAL(ftruncate64);
	FD_BODY(C_FTRUNCATE, int, real_ftruncate64(fd, len), 0, len, 0);
}

/* dup family: recorded when the source is a file, or when the target
 * was one (dup2 of a pipe onto a file's descriptor: the file is no longer
 * named by it); the new descriptor takes the source's kind. */
#define DUP_BODY(CALL, REALCALL, NEWFD)                                  \
	if (!on()) return REALCALL;                                          \
	int file = fd_file(fd);                                              \
	int target = (NEWFD) >= 0 && (NEWFD) != fd && fd_file(NEWFD);        \
	unsigned kind = fd >= 0 && fd < FDKINDS ? fdkind[fd] : 0;            \
	struct rec r = {0};                                                  \
	BEGIN;                                                               \
	int v = REALCALL;                                                    \
	END(r);                                                              \
	if (v >= 0 && v != fd) fd_set_kind(v, kind);                         \
	if (file || target) {                                                \
		r.call = CALL;                                                   \
		r.fd = fd;                                                       \
		r.size = (NEWFD);                                                \
		RET(r, v);                                                       \
		iotrace_emit(&r, NULL, NULL);                                    \
	}                                                                    \
	errno = saved;                                                       \
	return v

EXPORT int dup(int fd) {
	REAL(dup);
	DUP_BODY(C_DUP, real_dup(fd), -1);
}
EXPORT int dup2(int fd, int nfd) {
	REAL(dup2);
	DUP_BODY(C_DUP2, real_dup2(fd, nfd), nfd);
}
EXPORT int dup3(int fd, int nfd, int fl) {
	REAL(dup3);
	DUP_BODY(C_DUP3, real_dup3(fd, nfd, fl), nfd);
}

/* ---- metadata ---- */

#define PATH_BODY2(CALL, T, REALCALL, DIRFD, PATH, DIRFD2, PATH2, OFLAGS, MODE, SIZE) \
	if (!on()) return REALCALL;                                              \
	struct rec r = {0};                                                      \
	char buf[PATH_MAX], buf2[PATH_MAX];                                      \
	know_dir(DIRFD, PATH);                                                   \
	know_dir(DIRFD2, PATH2);                                                 \
	BEGIN;                                                                   \
	T v = REALCALL;                                                          \
	END(r);                                                                  \
	r.call = CALL;                                                           \
	r.fd = -1;                                                               \
	const char *p = atpath(DIRFD, PATH, buf, &r);                            \
	const char *p2 = atpath2(DIRFD2, PATH2, buf2, &r);                       \
	r.oflags = (OFLAGS);                                                     \
	r.mode = (MODE);                                                         \
	r.size = (SIZE);                                                         \
	RET(r, v);                                                               \
	iotrace_emit(&r, p, p2);                                                 \
	errno = saved;                                                           \
	return v

#define PATH_BODY(CALL, T, REALCALL, DIRFD, PATH, PATH2, OFLAGS, MODE, SIZE) \
	PATH_BODY2(CALL, T, REALCALL, DIRFD, PATH, AT_FDCWD, PATH2, OFLAGS, MODE, SIZE)

EXPORT int stat(const char *path, struct stat *st) {
	REAL(stat);
	PATH_BODY(C_STAT, int, real_stat(path, st), AT_FDCWD, path, NULL, 0, 0, 0);
}
EXPORT int stat64(const char *path, struct stat64 *st) {
	REAL(stat64);
	PATH_BODY(C_STAT, int, real_stat64(path, st), AT_FDCWD, path, NULL, 0, 0, 0);
}
EXPORT int lstat(const char *path, struct stat *st) {
	REAL(lstat);
	PATH_BODY(C_LSTAT, int, real_lstat(path, st), AT_FDCWD, path, NULL, 0, 0, 0);
}
EXPORT int lstat64(const char *path, struct stat64 *st) {
	REAL(lstat64);
	PATH_BODY(C_LSTAT, int, real_lstat64(path, st), AT_FDCWD, path, NULL, 0, 0, 0);
}
EXPORT int fstatat(int dirfd, const char *path, struct stat *st, int fl) {
	REAL(fstatat);
	PATH_BODY(C_FSTATAT, int, real_fstatat(dirfd, path, st, fl), dirfd, path, NULL, (uint32_t)fl, 0, 0);
}
EXPORT int fstatat64(int dirfd, const char *path, struct stat64 *st, int fl) {
	REAL(fstatat64);
	PATH_BODY(C_FSTATAT, int, real_fstatat64(dirfd, path, st, fl), dirfd, path, NULL, (uint32_t)fl, 0, 0);
}
EXPORT int statx(int dirfd, const char *path, int fl, unsigned mask, struct statx *st) {
	REAL(statx);
	PATH_BODY(C_STATX, int, real_statx(dirfd, path, fl, mask, st), dirfd, path, NULL, (uint32_t)fl, mask, 0);
}
EXPORT int access(const char *path, int mode) {
	REAL(access);
	PATH_BODY(C_ACCESS, int, real_access(path, mode), AT_FDCWD, path, NULL, 0, (uint32_t)mode, 0);
}
EXPORT int unlink(const char *path) {
	REAL(unlink);
	PATH_BODY(C_UNLINK, int, real_unlink(path), AT_FDCWD, path, NULL, 0, 0, 0);
}
EXPORT int unlinkat(int dirfd, const char *path, int fl) {
	REAL(unlinkat);
	PATH_BODY(C_UNLINKAT, int, real_unlinkat(dirfd, path, fl), dirfd, path, NULL, (uint32_t)fl, 0, 0);
}
EXPORT int rename(const char *a, const char *b) {
	REAL(rename);
	PATH_BODY(C_RENAME, int, real_rename(a, b), AT_FDCWD, a, b, 0, 0, 0);
}
EXPORT int renameat(int da, const char *a, int db, const char *b) {
	REAL(renameat);
	PATH_BODY2(C_RENAMEAT, int, real_renameat(da, a, db, b), da, a, db, b, 0, 0, 0);
}
EXPORT int renameat2(int da, const char *a, int db, const char *b, unsigned fl) {
	REAL(renameat2);
	PATH_BODY2(C_RENAMEAT2, int, real_renameat2(da, a, db, b, fl), da, a, db, b, fl, 0, 0);
}
EXPORT int mkdir(const char *path, mode_t mode) {
	REAL(mkdir);
	PATH_BODY(C_MKDIR, int, real_mkdir(path, mode), AT_FDCWD, path, NULL, 0, mode, 0);
}
EXPORT int mkdirat(int dirfd, const char *path, mode_t mode) {
	REAL(mkdirat);
	PATH_BODY(C_MKDIRAT, int, real_mkdirat(dirfd, path, mode), dirfd, path, NULL, 0, mode, 0);
}
EXPORT int rmdir(const char *path) {
	REAL(rmdir);
	PATH_BODY(C_RMDIR, int, real_rmdir(path), AT_FDCWD, path, NULL, 0, 0, 0);
}
EXPORT int truncate(const char *path, off_t len) {
	REAL(truncate);
	PATH_BODY(C_TRUNCATE, int, real_truncate(path, len), AT_FDCWD, path, NULL, 0, 0, len);
}
EXPORT int truncate64(const char *path, off64_t len) {
	REAL(truncate64);
	PATH_BODY(C_TRUNCATE, int, real_truncate64(path, len), AT_FDCWD, path, NULL, 0, 0, len);
}

EXPORT int fstat(int fd, struct stat *st) {
	REAL(fstat);
	FD_BODY(C_FSTAT, int, real_fstat(fd, st), 0, 0, 0);
}
EXPORT int fstat64(int fd, struct stat64 *st) {
	REAL(fstat64);
	FD_BODY(C_FSTAT, int, real_fstat64(fd, st), 0, 0, 0);
}

/* The stat entry points of binaries built against glibc before 2.33. */
int __xstat(int, const char *, struct stat *);
int __lxstat(int, const char *, struct stat *);
int __fxstat(int, int, struct stat *);
int __xstat64(int, const char *, struct stat64 *);
int __lxstat64(int, const char *, struct stat64 *);
int __fxstat64(int, int, struct stat64 *);

EXPORT int __xstat(int ver, const char *path, struct stat *st) {
	REAL(__xstat);
	PATH_BODY(C_STAT, int, real___xstat(ver, path, st), AT_FDCWD, path, NULL, 0, 0, 0);
}
EXPORT int __xstat64(int ver, const char *path, struct stat64 *st) {
	REAL(__xstat64);
	PATH_BODY(C_STAT, int, real___xstat64(ver, path, st), AT_FDCWD, path, NULL, 0, 0, 0);
}
EXPORT int __lxstat(int ver, const char *path, struct stat *st) {
	REAL(__lxstat);
	PATH_BODY(C_LSTAT, int, real___lxstat(ver, path, st), AT_FDCWD, path, NULL, 0, 0, 0);
}
EXPORT int __lxstat64(int ver, const char *path, struct stat64 *st) {
	REAL(__lxstat64);
	PATH_BODY(C_LSTAT, int, real___lxstat64(ver, path, st), AT_FDCWD, path, NULL, 0, 0, 0);
}
EXPORT int __fxstat(int ver, int fd, struct stat *st) {
	REAL(__fxstat);
	FD_BODY(C_FSTAT, int, real___fxstat(ver, fd, st), 0, 0, 0);
}
EXPORT int __fxstat64(int ver, int fd, struct stat64 *st) {
	REAL(__fxstat64);
	FD_BODY(C_FSTAT, int, real___fxstat64(ver, fd, st), 0, 0, 0);
}

/* ---- _FORTIFY_SOURCE entry points ----
 *
 * Programs built with _FORTIFY_SOURCE (Debian's are) call these instead
 * of the plain functions; each checks its buffer and does the plain
 * call, here recorded as that call. */

int __open_2(const char *, int);
int __open64_2(const char *, int);
int __openat_2(int, const char *, int);
int __openat64_2(int, const char *, int);
ssize_t __read_chk(int, void *, size_t, size_t);
ssize_t __pread_chk(int, void *, size_t, off_t, size_t);
ssize_t __pread64_chk(int, void *, size_t, off64_t, size_t);
ssize_t __readlink_chk(const char *, char *, size_t, size_t);
ssize_t __readlinkat_chk(int, const char *, char *, size_t, size_t);

EXPORT int __open_2(const char *path, int flags) {
	mode_t mode = 0;
	REAL(__open_2);
	OPEN_BODY(C_OPEN, AT_FDCWD, real___open_2(path, flags));
}
EXPORT int __open64_2(const char *path, int flags) {
	mode_t mode = 0;
	REAL(__open64_2);
	OPEN_BODY(C_OPEN, AT_FDCWD, real___open64_2(path, flags));
}
EXPORT int __openat_2(int dirfd, const char *path, int flags) {
	mode_t mode = 0;
	REAL(__openat_2);
	OPEN_BODY(C_OPENAT, dirfd, real___openat_2(dirfd, path, flags));
}
EXPORT int __openat64_2(int dirfd, const char *path, int flags) {
	mode_t mode = 0;
	REAL(__openat64_2);
	OPEN_BODY(C_OPENAT, dirfd, real___openat64_2(dirfd, path, flags));
}
EXPORT ssize_t __read_chk(int fd, void *b, size_t n, size_t blen) {
	REAL(__read_chk);
	DATA_BODY(C_READ, ssize_t, real___read_chk(fd, b, n, blen), -1, n, 0, 0);
}
EXPORT ssize_t __pread_chk(int fd, void *b, size_t n, off_t off, size_t blen) {
	REAL(__pread_chk);
	DATA_BODY(C_PREAD, ssize_t, real___pread_chk(fd, b, n, off, blen), off, n, 0, 0);
}
EXPORT ssize_t __pread64_chk(int fd, void *b, size_t n, off64_t off, size_t blen) {
	REAL(__pread64_chk);
	DATA_BODY(C_PREAD, ssize_t, real___pread64_chk(fd, b, n, off, blen), off, n, 0, 0);
}

/* ---- links ---- */

EXPORT int link(const char *a, const char *b) {
	REAL(link);
	PATH_BODY(C_LINK, int, real_link(a, b), AT_FDCWD, a, b, 0, 0, 0);
}
/* linkat with AT_EMPTY_PATH and an empty old name links the file open on
 * olddirfd: no path, fd = olddirfd (RF_PATH_AT marks it). */
EXPORT int linkat(int da, const char *a, int db, const char *b, int fl) {
	REAL(linkat);
	PATH_BODY2(C_LINKAT, int, real_linkat(da, a, db, b, fl), da, a, db, b, (uint32_t)fl, 0, 0);
}
/* symlink: the path is the link made, the second path its target exactly
 * as written (a target is not resolved: it is the link's content). */
#define SYMLINK_BODY(CALL, REALCALL, DIRFD)                              \
	if (!on()) return REALCALL;                                          \
	struct rec r = {0};                                                  \
	char buf[PATH_MAX];                                                  \
	know_dir(DIRFD, lp);                                                 \
	BEGIN;                                                               \
	int v = REALCALL;                                                    \
	END(r);                                                              \
	r.call = CALL;                                                       \
	r.fd = -1;                                                           \
	const char *p = atpath(DIRFD, lp, buf, &r);                          \
	RET(r, v);                                                           \
	iotrace_emit(&r, p, target);                                         \
	errno = saved;                                                       \
	return v

EXPORT int symlink(const char *target, const char *lp) {
	REAL(symlink);
	SYMLINK_BODY(C_SYMLINK, real_symlink(target, lp), AT_FDCWD);
}
EXPORT int symlinkat(const char *target, int dirfd, const char *lp) {
	REAL(symlinkat);
	SYMLINK_BODY(C_SYMLINKAT, real_symlinkat(target, dirfd, lp), dirfd);
}
EXPORT ssize_t readlink(const char *path, char *b, size_t n) {
	REAL(readlink);
	PATH_BODY(C_READLINK, ssize_t, real_readlink(path, b, n), AT_FDCWD, path, NULL, 0, 0, (int64_t)n);
}
EXPORT ssize_t readlinkat(int dirfd, const char *path, char *b, size_t n) {
	REAL(readlinkat);
	PATH_BODY(C_READLINKAT, ssize_t, real_readlinkat(dirfd, path, b, n), dirfd, path, NULL, 0, 0, (int64_t)n);
}
EXPORT ssize_t __readlink_chk(const char *path, char *b, size_t n, size_t blen) {
	REAL(__readlink_chk);
	PATH_BODY(C_READLINK, ssize_t, real___readlink_chk(path, b, n, blen), AT_FDCWD, path, NULL, 0, 0, (int64_t)n);
}
EXPORT ssize_t __readlinkat_chk(int dirfd, const char *path, char *b, size_t n, size_t blen) {
	REAL(__readlinkat_chk);
	PATH_BODY(C_READLINKAT, ssize_t, real___readlinkat_chk(dirfd, path, b, n, blen), dirfd, path, NULL, 0, 0, (int64_t)n);
}

/* ---- copies between descriptors ----
 *
 * Recorded when either side is a file: fd reads, peer writes. An offset
 * the call gave (oflags 1 in, 2 out) is recorded as it was before the
 * call; for a side without one, the position it read or wrote at, from
 * the position after the call (for an O_APPEND file: the end it wrote
 * at). A side that is not a file has offset -1. */

#define COPY_IN_AT 1u
#define COPY_OUT_AT 2u

static int64_t pos_before(int fd, int file, int64_t moved) {
	if (!file) return -1;
	int64_t p = syscall(SYS_lseek, fd, 0, SEEK_CUR);
	return p < 0 ? -1 : p - moved;
}

#define COPY_BODY(CALL, REALCALL, IN, OFFIN, OUT, OFFOUT, LEN)           \
	if (!on()) return REALCALL;                                          \
	int fin = fd_file(IN), fout = fd_file(OUT);                          \
	if (!fin && !fout) return REALCALL;                                  \
	int64_t oi = (OFFIN) ? (int64_t) * (OFFIN) : -1;                     \
	int64_t oo = (OFFOUT) ? (int64_t) * (OFFOUT) : -1;                   \
	struct rec r = {0};                                                  \
	BEGIN;                                                               \
	ssize_t v = REALCALL;                                                \
	END(r);                                                              \
	int64_t moved = v > 0 ? v : 0;                                       \
	r.call = CALL;                                                       \
	r.fd = IN;                                                           \
	r.peer = OUT;                                                        \
	r.size = (int64_t)(LEN);                                             \
	r.oflags = ((OFFIN) ? COPY_IN_AT : 0) | ((OFFOUT) ? COPY_OUT_AT : 0); \
	r.off = (OFFIN) ? oi : pos_before(IN, fin, moved);                   \
	r.bytes = (OFFOUT) ? oo : pos_before(OUT, fout, moved);              \
	RET(r, v);                                                           \
	iotrace_emit(&r, NULL, NULL);                                        \
	errno = saved;                                                       \
	return v

EXPORT ssize_t copy_file_range(int in, off64_t *offin, int out, off64_t *offout, size_t len, unsigned fl) {
	REAL(copy_file_range);
	COPY_BODY(C_COPY_FILE_RANGE, real_copy_file_range(in, offin, out, offout, len, fl), in, offin, out, offout, len);
}
EXPORT ssize_t splice(int in, loff_t *offin, int out, loff_t *offout, size_t len, unsigned fl) {
	REAL(splice);
	COPY_BODY(C_SPLICE, real_splice(in, offin, out, offout, len, fl), in, offin, out, offout, len);
}
EXPORT ssize_t sendfile(int out, int in, off_t *off, size_t n) {
	REAL(sendfile);
	off_t *none = NULL;
	COPY_BODY(C_SENDFILE, real_sendfile(out, in, off, n), in, off, out, none, n);
}
EXPORT ssize_t sendfile64(int out, int in, off64_t *off, size_t n) {
	REAL(sendfile64);
	off64_t *none = NULL;
	COPY_BODY(C_SENDFILE, real_sendfile64(out, in, off, n), in, off, out, none, n);
}

/* ---- space, advice, sync, mappings ---- */

EXPORT int fallocate(int fd, int mode, off_t off, off_t len) {
	REAL(fallocate);
	FD_BODY(C_FALLOCATE, int, real_fallocate(fd, mode, off, len), off, len, (uint32_t)mode);
}
EXPORT int fallocate64(int fd, int mode, off64_t off, off64_t len) {
	REAL(fallocate64);
	FD_BODY(C_FALLOCATE, int, real_fallocate64(fd, mode, off, len), off, len, (uint32_t)mode);
}

/* posix_fadvise and posix_fallocate return the error number itself. */
#define ERRNUM_BODY(CALL, REALCALL, OFF, SIZE, OFLAGS)                   \
	if (!on() || !fd_file(fd)) return REALCALL;                         \
	struct rec r = {0};                                                  \
	BEGIN;                                                               \
	int rc = REALCALL;                                                   \
	END(r);                                                              \
	r.call = CALL;                                                       \
	r.fd = fd;                                                           \
	r.off = (OFF);                                                       \
	r.size = (SIZE);                                                     \
	r.oflags = (OFLAGS);                                                 \
	r.ret = -(int64_t)rc;                                                \
	iotrace_emit(&r, NULL, NULL);                                        \
	errno = saved;                                                       \
	return rc

EXPORT int posix_fadvise(int fd, off_t off, off_t len, int advice) {
	REAL(posix_fadvise);
	ERRNUM_BODY(C_FADVISE, real_posix_fadvise(fd, off, len, advice), off, len, (uint32_t)advice);
}
EXPORT int posix_fadvise64(int fd, off64_t off, off64_t len, int advice) {
	REAL(posix_fadvise64);
	ERRNUM_BODY(C_FADVISE, real_posix_fadvise64(fd, off, len, advice), off, len, (uint32_t)advice);
}
/* posix_fallocate is fallocate(fd, 0, off, len) for the kernel (glibc
 * writes zeros itself where the file system cannot: not seen). */
EXPORT int posix_fallocate(int fd, off_t off, off_t len) {
	REAL(posix_fallocate);
	ERRNUM_BODY(C_FALLOCATE, real_posix_fallocate(fd, off, len), off, len, 0);
}
EXPORT int posix_fallocate64(int fd, off64_t off, off64_t len) {
	REAL(posix_fallocate64);
	ERRNUM_BODY(C_FALLOCATE, real_posix_fallocate64(fd, off, len), off, len, 0);
}
EXPORT int syncfs(int fd) {
	REAL(syncfs);
	FD_BODY(C_SYNCFS, int, real_syncfs(fd), 0, 0, 0);
}
EXPORT void sync(void) {
	REAL(sync);
	if (!on()) {
		real_sync();
		return;
	}
	struct rec r = {0};
	BEGIN;
	real_sync();
	END(r);
	r.call = C_SYNC;
	r.fd = -1;
	iotrace_emit(&r, NULL, NULL);
	errno = saved;
}

/* mmap of a file (not anonymous memory): ret 0 or -errno, not the
 * address. */
#define MMAP_BODY(REALCALL)                                              \
	if (fd < 0 || (fl & MAP_ANONYMOUS) || !on() || !fd_file(fd)) return REALCALL; \
	struct rec r = {0};                                                  \
	BEGIN;                                                               \
	void *m = REALCALL;                                                  \
	END(r);                                                              \
	r.call = C_MMAP;                                                     \
	r.fd = fd;                                                           \
	r.off = off;                                                         \
	r.size = (int64_t)len;                                               \
	r.oflags = (uint32_t)fl;                                             \
	r.mode = (uint32_t)prot;                                             \
	r.ret = m == MAP_FAILED ? -(int64_t)saved : 0;                       \
	iotrace_emit(&r, NULL, NULL);                                        \
	errno = saved;                                                       \
	return m

EXPORT void *mmap(void *a, size_t len, int prot, int fl, int fd, off_t off) {
	REAL(mmap);
	MMAP_BODY(real_mmap(a, len, prot, fl, fd, off));
}
EXPORT void *mmap64(void *a, size_t len, int prot, int fl, int fd, off64_t off) {
	REAL(mmap64);
	MMAP_BODY(real_mmap64(a, len, prot, fl, fd, off));
}

/* ---- fcntl, close_range ---- */

/* fcntl: the dup commands (the new descriptor takes the source's kind),
 * F_SETFD and F_SETFL (which may set or clear O_APPEND) on files; other
 * commands pass through. The argument is read as glibc reads it. */
#define FCNTL_BODY(REALCALL)                                             \
	switch (cmd) {                                                       \
	case F_DUPFD:                                                        \
	case F_DUPFD_CLOEXEC:                                                \
	case F_SETFD:                                                        \
	case F_SETFL:                                                        \
		break;                                                           \
	default:                                                             \
		return REALCALL;                                                 \
	}                                                                    \
	if (!on() || !fd_file(fd)) return REALCALL;                         \
	unsigned kind = fd < FDKINDS ? fdkind[fd] : 0;                       \
	struct rec r = {0};                                                  \
	BEGIN;                                                               \
	int v = REALCALL;                                                    \
	END(r);                                                              \
	if ((cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && v >= 0) fd_set_kind(v, kind); \
	if (cmd == F_SETFL && v >= 0) fd_set_kind(fd, ((long)arg & O_APPEND) ? 3 : 1); \
	r.call = C_FCNTL;                                                    \
	r.fd = fd;                                                           \
	r.oflags = (uint32_t)cmd;                                            \
	r.size = (int64_t)(long)arg;                                         \
	RET(r, v);                                                           \
	iotrace_emit(&r, NULL, NULL);                                        \
	errno = saved;                                                       \
	return v

EXPORT int fcntl(int fd, int cmd, ...) {
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	REAL(fcntl);
	FCNTL_BODY(real_fcntl(fd, cmd, arg));
}
EXPORT int fcntl64(int fd, int cmd, ...) {
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	REAL(fcntl64);
	FCNTL_BODY(real_fcntl64(fd, cmd, arg));
}

/* close_range (and closefrom, which is close_range(low, ~0U, 0) for the
 * kernel): recorded always; the encoder knows which of its files the
 * range held. */
EXPORT int close_range(unsigned first, unsigned last, int fl) {
	REAL(close_range);
	if (!on()) {
		int rc = real_close_range(first, last, fl);
		if (rc == 0) forget_range(first, last, fl);
		return rc;
	}
	struct rec r = {0};
	BEGIN;
	int rc = real_close_range(first, last, fl);
	END(r);
	if (rc == 0) forget_range(first, last, fl);
	r.call = C_CLOSE_RANGE;
	r.fd = (int32_t)first;
	r.size = last;
	r.oflags = (uint32_t)fl;
	RET(r, rc);
	iotrace_emit(&r, NULL, NULL);
	errno = saved;
	return rc;
}
EXPORT void closefrom(int low) {
	REAL(closefrom);
	if (!on() || low < 0) {
		real_closefrom(low);
		if (low >= 0) forget_range((unsigned)low, ~0u, 0);
		return;
	}
	struct rec r = {0};
	BEGIN;
	real_closefrom(low);
	END(r);
	forget_range((unsigned)low, ~0u, 0);
	r.call = C_CLOSE_RANGE;
	r.fd = low;
	r.size = ~0u;
	iotrace_emit(&r, NULL, NULL);
	errno = saved;
}

/* ---- opens made inside glibc ----
 *
 * The mkstemp family, tmpfile and opendir open their files with glibc's
 * own calls, which no wrapper sees: each is recorded as the openat the
 * kernel sees, closedir as the close. (readdir's getdents64 calls stay
 * unseen: they are glibc's own.) */

#define TEMP_BODY(REALCALL, FLAGS)                                       \
	if (!on()) return REALCALL;                                          \
	struct rec r = {0};                                                  \
	char buf[PATH_MAX];                                                  \
	BEGIN;                                                               \
	int fd = REALCALL;                                                   \
	END(r);                                                              \
	r.call = C_OPENAT;                                                   \
	r.fd = -1;                                                           \
	r.oflags = O_RDWR | O_CREAT | O_EXCL | ((uint32_t)(FLAGS) & ~(uint32_t)O_ACCMODE); \
	r.mode = 0600;                                                       \
	RET(r, fd);                                                          \
	fd_opened(fd);                                                       \
	iotrace_emit(&r, abspath(tmpl, buf), NULL);                          \
	errno = saved;                                                       \
	return fd

EXPORT int mkstemp(char *tmpl) {
	REAL(mkstemp);
	TEMP_BODY(real_mkstemp(tmpl), 0);
}
EXPORT int mkstemp64(char *tmpl) {
	REAL(mkstemp64);
	TEMP_BODY(real_mkstemp64(tmpl), 0);
}
EXPORT int mkstemps(char *tmpl, int suffix) {
	REAL(mkstemps);
	TEMP_BODY(real_mkstemps(tmpl, suffix), 0);
}
EXPORT int mkstemps64(char *tmpl, int suffix) {
	REAL(mkstemps64);
	TEMP_BODY(real_mkstemps64(tmpl, suffix), 0);
}
EXPORT int mkostemp(char *tmpl, int fl) {
	REAL(mkostemp);
	TEMP_BODY(real_mkostemp(tmpl, fl), fl);
}
EXPORT int mkostemp64(char *tmpl, int fl) {
	REAL(mkostemp64);
	TEMP_BODY(real_mkostemp64(tmpl, fl), fl);
}
EXPORT int mkostemps(char *tmpl, int suffix, int fl) {
	REAL(mkostemps);
	TEMP_BODY(real_mkostemps(tmpl, suffix, fl), fl);
}
EXPORT int mkostemps64(char *tmpl, int suffix, int fl) {
	REAL(mkostemps64);
	TEMP_BODY(real_mkostemps64(tmpl, suffix, fl), fl);
}

/* tmpfile: the file has no name (O_TMPFILE) or lost it (unlinked at
 * once): recorded with its /proc/self/fd name ("/tmp/#123 (deleted)"). */
#define TMPFILE_BODY(REALCALL)                                           \
	if (!on()) return REALCALL;                                          \
	struct rec r = {0};                                                  \
	char name[PATH_MAX] = "";                                            \
	BEGIN;                                                               \
	FILE *f = REALCALL;                                                  \
	END(r);                                                              \
	int fd = f ? f->_fileno : -1;                                        \
	if (fd >= 0) {                                                       \
		char link[64];                                                   \
		snprintf(link, sizeof link, "/proc/self/fd/%d", fd);             \
		long n = syscall(SYS_readlinkat, AT_FDCWD, link, name, sizeof name - 1); \
		name[n > 0 ? n : 0] = 0;                                         \
	}                                                                    \
	r.call = C_OPENAT;                                                   \
	r.fd = -1;                                                           \
	r.oflags = O_RDWR | O_CREAT | O_EXCL;                                \
	r.mode = 0600;                                                       \
	r.ret = f ? fd : -(int64_t)saved;                                    \
	fd_opened(fd);                                                       \
	iotrace_emit(&r, name[0] ? name : "/tmp", NULL);                     \
	errno = saved;                                                       \
	return f

EXPORT FILE *tmpfile(void) {
	REAL(tmpfile);
	TMPFILE_BODY(real_tmpfile());
}
EXPORT FILE *tmpfile64(void) {
	REAL(tmpfile64);
	TMPFILE_BODY(real_tmpfile64());
}

/* opendir opens with the flags glibc gives; fdopendir opens nothing (its
 * descriptor was recorded where it was opened). */
EXPORT DIR *opendir(const char *path) {
	REAL(opendir);
	if (!on()) return real_opendir(path);
	struct rec r = {0};
	char buf[PATH_MAX];
	BEGIN;
	DIR *d = real_opendir(path);
	END(r);
	int fd = d ? dirfd(d) : -1;
	r.call = C_OPENAT;
	r.fd = -1;
	r.oflags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_DIRECTORY;
	r.ret = d ? fd : -(int64_t)saved;
	fd_opened(fd);
	iotrace_emit(&r, abspath(path, buf), NULL);
	errno = saved;
	return d;
}
EXPORT int closedir(DIR *d) {
	REAL(closedir);
	int fd = d ? dirfd(d) : -1;
	if (!on() || !fd_file(fd)) {
		if (fd >= 0) fd_set_kind(fd, 0);
		return real_closedir(d);
	}
	struct rec r = {0};
	BEGIN;
	int rc = real_closedir(d);
	END(r);
	fd_set_kind(fd, 0);
	r.call = C_CLOSE;
	r.fd = fd;
	RET(r, rc);
	iotrace_emit(&r, NULL, NULL);
	errno = saved;
	return rc;
}

/* ---- stdio ---- */

static uint32_t mode_flags(const char *m) {
	uint32_t f = 0;
	if (!m) return 0;
	switch (m[0]) {
	case 'r': f = O_RDONLY; break;
	case 'w': f = O_WRONLY | O_CREAT | O_TRUNC; break;
	case 'a': f = O_WRONLY | O_CREAT | O_APPEND; break;
	}
	for (const char *c = m + 1; *c && *c != ','; c++) {
		if (*c == '+') f = (f & ~(uint32_t)O_ACCMODE) | O_RDWR;
		if (*c == 'x') f |= O_EXCL;
		if (*c == 'e') f |= O_CLOEXEC;
	}
	return f;
}

#define FOPEN_BODY(REALCALL)                                             \
	if (!on()) return REALCALL;                                         \
	struct rec r = {0};                                                  \
	char buf[PATH_MAX];                                                  \
	BEGIN;                                                               \
	FILE *f = REALCALL;                                                  \
	END(r);                                                              \
	int fd = f ? fileno(f) : -1;                                         \
	r.call = C_FOPEN;                                                    \
	r.fd = -1;                                                           \
	r.oflags = mode_flags(mode);                                         \
	r.mode = 0666;                                                       \
	r.ret = f ? fd : -(int64_t)saved;                                    \
	t_in++;                                                              \
	fd_opened(fd);                                                       \
	t_in--;                                                              \
	iotrace_emit(&r, abspath(path, buf), NULL);                          \
	errno = saved;                                                       \
	return f

EXPORT FILE *fopen(const char *path, const char *mode) {
	REAL(fopen);
	FOPEN_BODY(real_fopen(path, mode));
}
EXPORT FILE *fopen64(const char *path, const char *mode) {
	REAL(fopen64);
	FOPEN_BODY(real_fopen64(path, mode));
}

EXPORT int fclose(FILE *f) {
	REAL(fclose);
	int fd = f ? fileno(f) : -1;
	if (!on() || !fd_file(fd)) {
		if (fd >= 0) fd_set_kind(fd, 0);
		return real_fclose(f);
	}
	struct rec r = {0};
	BEGIN;
	int rc = real_fclose(f);
	END(r);
	fd_set_kind(fd, 0);
	r.call = C_FCLOSE;
	r.fd = fd;
	r.ret = rc == 0 ? 0 : -(int64_t)saved;
	iotrace_emit(&r, NULL, NULL);
	errno = saved;
	return rc;
}

#define STDIO_DATA(CALL, REALCALL)                                       \
	int fd = f ? fileno(f) : -1;                                         \
	if (!on() || !fd_file(fd)) return REALCALL;                         \
	struct rec r = {0};                                                  \
	t_in++;                                                              \
	r.off = ftello(f);                                                   \
	t_in--;                                                              \
	BEGIN;                                                               \
	size_t n = REALCALL;                                                 \
	END(r);                                                              \
	r.call = CALL;                                                       \
	r.fd = fd;                                                           \
	r.size = (int64_t)(size * nmemb);                                    \
	r.count = (int32_t)nmemb;                                            \
	r.ret = (n < nmemb && ferror(f)) && n == 0 ? -(int64_t)saved : (int64_t)(n * size); \
	iotrace_emit(&r, NULL, NULL);                                        \
	errno = saved;                                                       \
	return n

EXPORT size_t fread(void *b, size_t size, size_t nmemb, FILE *f) {
	REAL(fread);
	STDIO_DATA(C_FREAD, real_fread(b, size, nmemb, f));
}
EXPORT size_t fwrite(const void *b, size_t size, size_t nmemb, FILE *f) {
	REAL(fwrite);
	STDIO_DATA(C_FWRITE, real_fwrite(b, size, nmemb, f));
}

#define FSEEK_BODY(REALCALL)                                             \
	int fd = f ? fileno(f) : -1;                                         \
	if (!on() || !fd_file(fd)) return REALCALL;                         \
	struct rec r = {0};                                                  \
	BEGIN;                                                               \
	int rc = REALCALL;                                                   \
	END(r);                                                              \
	r.call = C_FSEEK;                                                    \
	r.fd = fd;                                                           \
	r.off = off;                                                         \
	r.oflags = (uint32_t)whence;                                         \
	r.ret = rc == 0 ? 0 : -(int64_t)saved;                               \
	iotrace_emit(&r, NULL, NULL);                                        \
	errno = saved;                                                       \
	return rc

EXPORT int fseek(FILE *f, long off, int whence) {
	REAL(fseek);
	FSEEK_BODY(real_fseek(f, off, whence));
}
EXPORT int fseeko(FILE *f, off_t off, int whence) {
	REAL(fseeko);
	FSEEK_BODY(real_fseeko(f, off, whence));
}
EXPORT int fseeko64(FILE *f, off64_t off, int whence) {
	REAL(fseeko64);
	FSEEK_BODY(real_fseeko64(f, off, whence));
}

EXPORT int fflush(FILE *f) {
	REAL(fflush);
	int fd = f ? fileno(f) : -1;
	if (!on() || !fd_file(fd)) return real_fflush(f);
	struct rec r = {0};
	BEGIN;
	int rc = real_fflush(f);
	END(r);
	r.call = C_FFLUSH;
	r.fd = fd;
	r.ret = rc == 0 ? 0 : -(int64_t)saved;
	iotrace_emit(&r, NULL, NULL);
	errno = saved;
	return rc;
}
