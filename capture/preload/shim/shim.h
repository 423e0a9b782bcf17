/*
 * iotrace preload shim: shared declarations of the POSIX part (shim.c,
 * libc only) and the MPI part (mpi.c, PMPI wrappers).
 *
 * The shim writes no trace format: it writes compact records to a
 * per-process spool file that iotrace encodes when the program ends. The
 * spool layout is below and in docs/FORMAT.md "Preload spool"; the Go
 * reader is capture/preload/spool.go. Keep the three in step.
 */
#ifndef IOTRACE_SHIM_H
#define IOTRACE_SHIM_H

#include <stdint.h>

/* The spool (docs/FORMAT.md "Preload spool"; the Go reader is
 * capture/preload/spool.go): a header of SPOOL_HEADER bytes, then blocks
 * of SPOOL_BLOCK bytes. The header (struct header in shim.c, whose
 * _Static_asserts pin the offsets): magic (0), u32 version, block size,
 * header size, pid (20), ppid, i32 MPI rank and size, u32 records
 * dropped, i64 CLOCK_MONOTONIC and CLOCK_REALTIME ns at the start (40),
 * u32 length and 1024 bytes of the command line (56), u32 length and
 * 2048 bytes of the working directory (1084), u64 the process's start
 * time in clock ticks since boot, /proc/self/stat field 22 (3136: the same
 * in each image of a process, so that an exec is told from another
 * process with the pid), u64 blocks taken (3200), u64 blocks the file
 * may hold (3208), u32 the shim's cost per call in its duration, between
 * calls, its spread and the calls measured, ns (3216, calibrate: 0 when not
 * measured), u32 length and 760 bytes of the program, /proc/self/exe's
 * target (3328; length 0 when it does not fit).
 *
 * Each block belongs to one thread, which fills it with records, each
 * complete once its length is written (last). A block: u16 BLOCK_MAGIC
 * (written last), u16 blocks it spans (1, more for a record too long for
 * one), u32 thread index, i64 the time base of its first record; then the
 * records. A record: u16 length (0: no record, nor any after it in the
 * block), u8 call, u8 flags (RF_*, REC_ABS), u16 mask of the fields that
 * follow as LEB128 varints, in the order of the M_ bits; a field not
 * there is 0, except the descriptor (the previous record's). Within a
 * block each record's start, descriptor and offset are relative to the
 * previous record's (the block's base and 0 before the first), except in
 * records marked REC_ABS (a signal handler's record made while the thread
 * was making another, a record of its own blocks), which are relative to
 * 0 and leave the previous values as they were. */
#define SPOOL_MAGIC "IOTSPOOL"
#define SPOOL_VERSION 2
#define SPOOL_HEADER 4096
#define SPOOL_BLOCK 4096
#define BLOCK_MAGIC 0x4b42 /* "BK": a thread's block */
#define SIDE_MAGIC 0x5342  /* "BS": a thread's side block, of REC_ABS records */

#define REC_ABS 0x80u  /* the record's fields are not relative to the previous record's */

/* The fields of a record, in their order; the mask says which follow. */
#define M_START (1u << 0)   /* zigzag(start - previous start) */
#define M_DUR (1u << 1)     /* duration */
#define M_FD (1u << 2)      /* zigzag(fd); absent: the previous record's */
#define M_OFF (1u << 3)     /* zigzag(off - previous offset); absent: 0 */
#define M_NOOFF (1u << 4)   /* no value: off is -1 */
#define M_SIZE (1u << 5)    /* zigzag(size) */
#define M_RET (1u << 6)     /* zigzag(ret - predicted): the size when positive, else the offset when positive, else 0; absent: 0 */
#define M_BYTES (1u << 7)   /* zigzag(bytes) */
#define M_OFLAGS (1u << 8)
#define M_MODE (1u << 9)
#define M_PEER (1u << 10)   /* zigzag */
#define M_TAG (1u << 11)    /* zigzag */
#define M_COMM (1u << 12)
#define M_COUNT (1u << 13)  /* zigzag */
#define M_PATH (1u << 14)   /* length, then the bytes (not terminated) */
#define M_PATH2 (1u << 15)

/* Record flags. */
#define RF_IN_MPIIO 1u      /* a POSIX call made inside an MPI-IO call */
#define RF_ANY_SOURCE 2u    /* a receive posted with MPI_ANY_SOURCE */
#define RF_ANY_TAG 4u       /* a receive posted with MPI_ANY_TAG */
#define RF_PATH_AT 8u       /* the path is relative to the descriptor in fd */
#define RF_RECV_HALF 16u    /* MPI_Sendrecv: off and size hold its receive half's source and tag */
#define RF_PATH2_AT 32u     /* the second path is relative to the descriptor in peer */
/* RF_OVER: a varint follows the fixed fields (after M_RET's, before the
 * rare ones): the shim's own time, ns, from the end of the thread's
 * previous record's call to the end of the wrapper that recorded it
 * (resolving its path, encoding, writing the record), which lies in the
 * gap before this call; absent: not measured (the first record of a
 * thread, a call that began before the previous wrapper ended). Measured
 * with a clock reading at the wrapper's end, but for a plain record
 * (RF_PLAIN), whose wrapper's time after the call the calibration gives. */
#define RF_OVER 64u
/* RF_PLAIN (in struct rec's flags only, not in the spool's byte): the
 * wrapper does nothing after the call but write its record (FD_BODY,
 * DATA_BODY: a data call, an lseek): when the record takes no new block,
 * the wrapper's time after the call is the calibrated cost_tail, not a
 * clock reading's. */
#define RF_PLAIN 0x100u

/* C_UNSEEN's oflags. */
#define UNSEEN_IO_URING 1u  /* io_uring: requests the kernel takes from a ring */
#define UNSEEN_AIO 2u       /* Linux AIO (io_setup) */
#define UNSEEN_POSIX_AIO 4u /* not sent: POSIX AIO is recorded at aio_return (kept for the encoder's table) */

/* Call ids: the shim's own numbering, mapped to trace ops by the Go side. */
enum {
	C_NONE,
	C_OPEN, C_OPENAT, C_CREAT, C_CLOSE,
	C_READ, C_PREAD, C_READV, C_PREADV, C_PREADV2,
	C_WRITE, C_PWRITE, C_WRITEV, C_PWRITEV, C_PWRITEV2,
	C_LSEEK, C_FSYNC, C_FDATASYNC, C_FTRUNCATE, C_TRUNCATE,
	C_DUP, C_DUP2, C_DUP3,
	C_STAT, C_LSTAT, C_FSTAT, C_FSTATAT, C_STATX, C_ACCESS,
	C_UNLINK, C_UNLINKAT, C_RENAME, C_RENAMEAT, C_RENAMEAT2,
	C_MKDIR, C_MKDIRAT, C_RMDIR,
	C_FOPEN, C_FCLOSE, C_FREAD, C_FWRITE, C_FSEEK, C_FFLUSH,
	/* Copies: fd reads at off, peer (the second descriptor) writes at
	 * bytes (the second offset); oflags say which offsets the call gave
	 * (1 in, 2 out), the others are the positions it moved. */
	C_COPY_FILE_RANGE, C_SENDFILE, C_SPLICE,
	C_FALLOCATE,        /* oflags: mode */
	C_FADVISE,          /* oflags: advice */
	C_SYNCFS, C_SYNC,
	C_MMAP,             /* oflags: MAP_ flags, mode: PROT_ bits, ret 0 or -errno, bytes the address */
	C_LINK, C_LINKAT,   /* path: the existing name, path2: the new one */
	C_SYMLINK, C_SYMLINKAT, /* path: the link made, path2: its target as written */
	C_READLINK, C_READLINKAT,
	C_FCNTL,            /* oflags: the command, size: its argument */
	C_CLOSE_RANGE,      /* fd: first, size: last, oflags: flags */
	C_EXIT,             /* the process ends: ret is its exit status */
	C_GETDENTS,         /* readdir's getdents64 inside glibc: size the buffer, ret the bytes */
	C_UNSEEN,           /* the process set up I/O the shim cannot see: oflags UNSEEN_* (once each) */
	/* The end and the flush of (part of) a mapping: off the address,
	 * size the length, oflags msync's MS_ flags; the encoder maps the
	 * address to the file range from the process's recorded mmaps (whose
	 * bytes hold the address they returned). */
	C_MUNMAP, C_MSYNC,
	C_READAHEAD,        /* fd, off, size */
	/* No call: the thread waited for pages of its file mappings between
	 * two calls (start, dur: the time off the processor since the
	 * previous wrapper's end, in a gap in which it read from the device;
	 * count: its major faults meanwhile, size: the bytes the file systems
	 * read for it), written before the next call's record. fd -1, off -1. */
	C_PAGEIN,

	C_MPI_RANK = 100, /* peer = world rank, count = world size */
	C_MPI_FINALIZE,
	C_MPI_SEND, C_MPI_RECV, C_MPI_ISEND, C_MPI_IRECV, C_MPI_WAIT, C_MPI_WAITALL,
	C_MPI_SENDRECV, C_MPI_BARRIER, C_MPI_BCAST, C_MPI_REDUCE, C_MPI_ALLREDUCE,
	C_MPI_GATHER, C_MPI_GATHERV, C_MPI_SCATTER, C_MPI_SCATTERV,
	C_MPI_ALLGATHER, C_MPI_ALLGATHERV, C_MPI_ALLTOALL, C_MPI_ALLTOALLV,
	C_MPI_COMM_SPLIT, C_MPI_COMM_DUP,
	/* A reading of the clock exchange with rank 0 (mpiclock.h): start
	 * when the question left, dur until the answer came, bytes rank 0's
	 * clock then (wall-clock ns), size the phase (0 start-up, 1 end), peer
	 * the reference rank, off -1. */
	C_MPI_CLOCK = 190,

	C_MPI_FILE_OPEN = 200, C_MPI_FILE_CLOSE,
	C_MPI_FILE_READ_AT, C_MPI_FILE_READ_AT_ALL, C_MPI_FILE_WRITE_AT, C_MPI_FILE_WRITE_AT_ALL,
	C_MPI_FILE_READ, C_MPI_FILE_READ_ALL, C_MPI_FILE_WRITE, C_MPI_FILE_WRITE_ALL,
	C_MPI_FILE_READ_SHARED, C_MPI_FILE_WRITE_SHARED, C_MPI_FILE_READ_ORDERED, C_MPI_FILE_WRITE_ORDERED,
	C_MPI_FILE_SET_VIEW, C_MPI_FILE_SYNC, C_MPI_FILE_SEEK, C_MPI_FILE_SEEK_SHARED,
	C_MPI_FILE_SET_SIZE, C_MPI_FILE_PREALLOCATE, C_MPI_FILE_DELETE,
	C_MPI_FILE_IREAD_AT, C_MPI_FILE_IWRITE_AT, C_MPI_FILE_IREAD, C_MPI_FILE_IWRITE,
};

/* One call, as a wrapper fills it: iotrace_emit encodes it into the
 * spool (the thread index is the block's). Paths are iotrace_emit's. */
struct rec {
	uint16_t call;
	uint16_t flags;
	int32_t fd;      /* descriptor, MPI file handle id, or directory descriptor (RF_PATH_AT) */
	int64_t start;   /* CLOCK_MONOTONIC ns */
	int64_t dur;
	int64_t off;     /* offset; view displacement; -1: none */
	int64_t size;    /* requested bytes; view block length */
	int64_t ret;     /* result, or -errno */
	int64_t bytes;   /* communication bytes; view stride; second offset (copies); clock reading */
	uint32_t oflags; /* open flags, MPI amode, *at flags, whence */
	uint32_t mode;
	int32_t peer;    /* world rank of peer or root; second descriptor (copies, RF_PATH2_AT) */
	int32_t tag;
	uint32_t comm;   /* communicator id: 0 world, 1 self */
	int32_t count;   /* iovec count, element count; ret2 for dup-like calls */
};

/* The POSIX part's interface to the MPI part. */
int64_t iotrace_now(void);
/* iotrace_emit writes r with paths p, p2 (NULL: none) to the spool. */
void iotrace_emit(struct rec *r, const char *p, const char *p2);
int iotrace_active(void);
/* Depth of MPI calls of this thread (outermost records), and of MPI-IO. */
int *iotrace_mpi_depth(void);
int *iotrace_mpiio_depth(void);
void iotrace_set_rank(int rank, int size);
/* iotrace_clock_base is the wall clock minus CLOCK_MONOTONIC that the
 * process's trace counts with (the header's real_start − mono_start). */
int64_t iotrace_clock_base(void);

#endif
