//go:build linux && (amd64 || arm64)

package ptrace

import "github.com/iotrace/iotrace/trace"

// kind is a traced system call, independent of its number on an
// architecture.
type kind uint8

const (
	kNone kind = iota
	kOpen
	kOpenat
	kOpenat2
	kCreat
	kClose
	kCloseRange
	kRead
	kPread
	kReadv
	kPreadv
	kPreadv2
	kWrite
	kPwrite
	kWritev
	kPwritev
	kPwritev2
	kLseek
	kFsync
	kFdatasync
	kFtruncate
	kTruncate
	kStat
	kLstat
	kFstat
	kNewfstatat
	kStatx
	kAccess
	kFaccessat
	kFaccessat2
	kUnlink
	kUnlinkat
	kRename
	kRenameat
	kRenameat2
	kMkdir
	kMkdirat
	kRmdir
	kDup
	kDup2
	kDup3
	kFcntl
	kCopyFileRange
	kSendfile
	kSplice
	kFallocate
	kFadvise
	kSyncfs
	kSync
	kMmap // only with a descriptor: the filter lets anonymous mappings run
	kMunmap
	kMsync
	kReadahead
	kLink
	kLinkat
	kSymlink
	kSymlinkat
	kReadlink
	kReadlinkat
	kGetdents
	kGetdents64

	// Bookkeeping only: never recorded.
	kClone   // clone(2): remember the flags for the fork event
	kClone3  // clone3(2): the flags live in struct clone_args
	kFork    // fork(2), vfork(2): no CLONE_FILES
	kUnshare // unshare(CLONE_FILES) gives the caller its own table
	// io_uring_setup(2), io_setup(2): I/O the tracer cannot see follows;
	// counted (at their exit) for the record's summary.
	kIoUringSetup
	kIoSetup
	// ptrace(2): a tracee cannot be traced by its own program (a process
	// has one tracer): refused calls are counted for the record to say so.
	kPtrace

	kLast
)

// callDef maps a system call number to a kind.
type callDef struct {
	nr   uint64
	kind kind
}

// kindOps is the trace op each recorded kind becomes.
var kindOps = [kLast]trace.Op{
	kOpen:       trace.OpOpen,
	kOpenat:     trace.OpOpenat,
	kOpenat2:    trace.OpOpenat2,
	kCreat:      trace.OpCreat,
	kClose:      trace.OpClose,
	kCloseRange: trace.OpCloseRange,
	kRead:       trace.OpRead,
	kPread:      trace.OpPread,
	kReadv:      trace.OpReadv,
	kPreadv:     trace.OpPreadv,
	kPreadv2:    trace.OpPreadv2,
	kWrite:      trace.OpWrite,
	kPwrite:     trace.OpPwrite,
	kWritev:     trace.OpWritev,
	kPwritev:    trace.OpPwritev,
	kPwritev2:   trace.OpPwritev2,
	kLseek:      trace.OpLseek,
	kFsync:      trace.OpFsync,
	kFdatasync:  trace.OpFdatasync,
	kFtruncate:  trace.OpFtruncate,
	kTruncate:   trace.OpTruncate,
	kStat:       trace.OpStat,
	kLstat:      trace.OpLstat,
	kFstat:      trace.OpFstat,
	kNewfstatat: trace.OpFstatat,
	kStatx:      trace.OpStatx,
	kAccess:     trace.OpAccess,
	kFaccessat:  trace.OpAccess,
	kFaccessat2: trace.OpAccess,
	kUnlink:     trace.OpUnlink,
	kUnlinkat:   trace.OpUnlinkat,
	kRename:     trace.OpRename,
	kRenameat:   trace.OpRenameat,
	kRenameat2:  trace.OpRenameat2,
	kMkdir:      trace.OpMkdir,
	kMkdirat:    trace.OpMkdirat,
	kRmdir:      trace.OpRmdir,
	kDup:        trace.OpDup,
	kDup2:       trace.OpDup2,
	kDup3:       trace.OpDup3,
	kFcntl:      trace.OpFcntl,

	kCopyFileRange: trace.OpCopyFileRange,
	kSendfile:      trace.OpSendfile,
	kSplice:        trace.OpSplice,
	kFallocate:     trace.OpFallocate,
	kFadvise:       trace.OpFadvise,
	kSyncfs:        trace.OpSyncfs,
	kSync:          trace.OpSync,
	kMmap:          trace.OpMmap,
	kMunmap:        trace.OpMunmap,
	kMsync:         trace.OpMsync,
	kReadahead:     trace.OpReadahead,
	kLink:          trace.OpLink,
	kLinkat:        trace.OpLinkat,
	kSymlink:       trace.OpSymlink,
	kSymlinkat:     trace.OpSymlinkat,
	kReadlink:      trace.OpReadlink,
	kReadlinkat:    trace.OpReadlinkat,
	kGetdents:      trace.OpGetdents,
	kGetdents64:    trace.OpGetdents,
}

// callTable maps system call numbers to kinds for one architecture.
type callTable struct {
	byNr []kind
}

func newCallTable(defs []callDef) *callTable {
	var max uint64
	for _, d := range defs {
		max = maxU(max, d.nr)
	}
	ct := &callTable{byNr: make([]kind, max+1)}
	for _, d := range defs {
		ct.byNr[d.nr] = d.kind
	}
	return ct
}

func maxU(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

func (ct *callTable) kind(nr uint64) kind {
	if nr < uint64(len(ct.byNr)) {
		return ct.byNr[nr]
	}
	return kNone
}
