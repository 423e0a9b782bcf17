// Package trace is the event model of iotrace: one event per call by one
// rank (and thread), a path table that events refer to by id, and the small
// Source/Sink interfaces that move events between producers and consumers.
package trace

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Op identifies a call. The numeric values are part of the trace file format
// (docs/FORMAT.md) and never change; new ops get new numbers. A reader that
// meets a number it does not know keeps the event with Op.Known() == false.
type Op uint16

// Class is the broad kind of an op.
type Class uint8

const (
	ClassUnknown Class = iota
	ClassPOSIX         // POSIX (and stdio) data and descriptor calls
	ClassMeta          // POSIX metadata calls
	ClassMPIIO         // MPI-IO calls
	ClassComm          // MPI communication calls
	ClassMarker        // labelled regions and marks
	ClassProcess       // processes and threads starting, exec'ing, ending; descriptors they inherit
)

func (c Class) String() string {
	switch c {
	case ClassPOSIX:
		return "posix"
	case ClassMeta:
		return "meta"
	case ClassMPIIO:
		return "mpiio"
	case ClassComm:
		return "comm"
	case ClassMarker:
		return "marker"
	case ClassProcess:
		return "process"
	}
	return "unknown"
}

// Dir is the data direction of an op.
type Dir uint8

const (
	DirNone Dir = iota
	DirRead
	DirWrite
	DirCopy // reads FD and writes FD2 (copy_file_range, sendfile, splice)
)

// Addressing says where a data op reads or writes.
type Addressing uint8

const (
	AddrNone       Addressing = iota
	AddrExplicit              // at Event.Offset (pread, MPI_File_write_at)
	AddrIndividual            // at the handle's own position (read, MPI_File_read)
	AddrShared                // at the shared file pointer (MPI_File_read_shared/ordered)
)

// OpInfo describes an op: what it is, and what it does to the state a
// trace follows (descriptors, positions, the namespace, processes), as
// data, so that every reader of traces (trace/state, and the consumers
// above it) knows an op's effects from one table.
type OpInfo struct {
	Name       string // the call's name as users know it: "pwrite", "MPI_File_write_at_all"
	Family     string // the row that gathers it in reports: "write", "open", "MPI_Bcast"
	Class      Class
	Dir        Dir
	Addr       Addressing
	Collective bool // every member of the communicator takes part
	Vector     bool // readv/writev family: Event.Count holds the iovec count
	// Wait: no call but a time the thread waited between two calls
	// (OpPagein). No system call tracer shows it, and a script has no
	// command for it.
	Wait bool

	FD   FDUse   // what it does with Event.FD and Ret
	NS   NSUse   // what it does to the namespace (Path, Path2)
	Proc ProcUse // processes and threads
	Comm CommUse // the shape of a communication call
	// Resize: the call sets its file's size to Event.Size (truncate,
	// ftruncate, MPI_File_set_size) or extends it to Offset+Size at least
	// (fallocate, MPI_File_preallocate).
	Resize Resize
}

// FDUse says what an op does with descriptors (or, for MPI-IO, file
// handles).
type FDUse uint8

const (
	FDNone       FDUse = iota // names no descriptor
	FDOn                      // acts on the open file of Event.FD (and of FD2 for DirCopy)
	FDOpen                    // opens Path: the new descriptor is Ret (an MPI file handle: FD)
	FDDup                     // Ret is a new descriptor on the open file of FD (fcntl: with a dup command only)
	FDClose                   // closes FD
	FDCloseRange              // closes FD…Size (or marks them close-on-exec, with CloseRangeCloexec)
	// FDAt: a path call whose Path was resolved against the directory
	// descriptor FD; with no Path (AT_EMPTY_PATH) it acts on FD's file.
	FDAt
)

// NSUse says what an op does to the namespace.
type NSUse uint8

const (
	NSNone    NSUse = iota
	NSLook          // looks Path up: it exists (a success) or not (ENOENT)
	NSOpen          // opens Path, creating it with O_CREAT (see Event.Flags)
	NSMkdir         // creates the directory Path
	NSRemove        // removes the name Path (unlinkat with AT_REMOVEDIR: a directory)
	NSRmdir         // removes the directory Path
	NSRename        // moves Path to Path2 (renameat2: RENAME_EXCHANGE swaps them)
	NSLink          // makes Path2 a new name of the file Path
	NSSymlink       // makes Path a symbolic link; Path2 holds its target as written
	NSReaddir       // reads the entries of the directory open on FD
)

// ProcUse says what an op does to processes and threads.
type ProcUse uint8

const (
	ProcNone    ProcUse = iota
	ProcFork            // Event.Thread makes a new process whose first thread is Ret (Flags: CLONE_FILES shares the table)
	ProcThread          // Event.Thread makes a new thread Ret of its own process
	ProcExec            // the process of Event.Thread runs a new program (Path): close-on-exec descriptors close
	ProcExit            // Event.Thread ends (Ret: the exit status); its process ends with its last thread
	ProcInherit         // descriptor FD of Event.Thread's process was open before the trace saw it: on Path, with Flags, at position Offset
)

// CommUse is the shape of a communication call.
type CommUse uint8

const (
	CommNone   CommUse = iota
	CommP2P            // to or from Peer (MPI_Send, MPI_Recv, their non-blocking forms, MPI_Sendrecv)
	CommRooted         // a collective with a root in Peer
	CommAll            // a collective without a root
	CommWait           // completes non-blocking calls
	CommCreate         // a collective that makes a communicator (Ret) from Comm
)

// Resize is how a call changes its file's size.
type Resize uint8

const (
	ResizeNone   Resize = iota
	ResizeSet           // to Event.Size
	ResizeExtend        // to Offset+Size at least
)

// Op numbers. Ranges: 1–99 POSIX data and descriptor calls, 100–199 POSIX
// metadata, 200–299 MPI-IO, 300–399 MPI communication, 400–499 markers.
const (
	OpUnknown Op = 0

	OpOpen       Op = 1
	OpOpenat     Op = 2
	OpCreat      Op = 3
	OpClose      Op = 4
	OpRead       Op = 5
	OpPread      Op = 6
	OpReadv      Op = 7
	OpPreadv     Op = 8
	OpWrite      Op = 9
	OpPwrite     Op = 10
	OpWritev     Op = 11
	OpPwritev    Op = 12
	OpLseek      Op = 13
	OpFsync      Op = 14
	OpFdatasync  Op = 15
	OpFtruncate  Op = 16
	OpDup        Op = 17
	OpDup2       Op = 18
	OpDup3       Op = 19
	OpFcntl      Op = 20 // F_DUPFD / F_DUPFD_CLOEXEC: Ret is the new descriptor
	OpOpenat2    Op = 21
	OpPreadv2    Op = 22
	OpPwritev2   Op = 23
	OpCloseRange Op = 24 // FD = first, Size = last descriptor
	// Copies between two descriptors: FD (read at Offset) to FD2 (written
	// at Offset2); Flags say which offsets the call gave (CopyInAt,
	// CopyOutAt); the others were the positions, which moved.
	OpCopyFileRange Op = 25
	OpSendfile      Op = 26
	OpSplice        Op = 27
	OpFallocate     Op = 28 // FD, Flags = mode, Offset, Size
	OpFadvise       Op = 29 // posix_fadvise: FD, Offset, Size, Flags = advice
	OpSyncfs        Op = 30 // FD
	OpSync          Op = 31 // no operand
	OpMmap          Op = 32 // a file mapping: FD, Offset, Size = length, Flags = MAP_ flags, Mode = PROT_ bits; Ret 0
	OpReadahead     Op = 33 // readahead(2): FD, Offset, Size
	// The end of (part of) a file mapping and a flush of one: Path is the
	// mapped file, Offset and Size the file range the call covered (the
	// recorder maps the call's address to it), FD -1; msync's Flags are
	// its MS_ flags.
	OpMunmap Op = 34
	OpMsync  Op = 35
	// OpPagein is no call: the time the thread waited, between two calls,
	// for pages of its file mappings to be read from the device (the
	// loads and stores it made through a mapping, which no recorder sees
	// as calls, that had to wait for the file system). Dur is the wait,
	// Count the page faults that read from the device, Size the bytes the
	// file systems read for the thread meanwhile, FD −1, Path the
	// mapped file where the process had one recorded mapping live (else
	// 0). A replay makes no call for it: it reads the mapping's pages at
	// its mmap, and times that there.
	OpPagein Op = 36
	OpFopen  Op = 40
	OpFclose Op = 41
	OpFread  Op = 42
	OpFwrite Op = 43
	OpFseek  Op = 44
	OpFflush Op = 45

	OpStat       Op = 100
	OpLstat      Op = 101
	OpFstat      Op = 102
	OpFstatat    Op = 103
	OpStatx      Op = 104
	OpAccess     Op = 105
	OpUnlink     Op = 106
	OpUnlinkat   Op = 107
	OpRename     Op = 108
	OpRenameat   Op = 109
	OpRenameat2  Op = 110
	OpMkdir      Op = 111
	OpMkdirat    Op = 112
	OpRmdir      Op = 113
	OpTruncate   Op = 114
	OpLink       Op = 115 // Path: the existing name, Path2: the new one
	OpLinkat     Op = 116
	OpSymlink    Op = 117 // Path: the link made, Path2: its target as written
	OpSymlinkat  Op = 118
	OpReadlink   Op = 119
	OpReadlinkat Op = 120
	OpGetdents   Op = 121 // reads directory entries of FD: Size the buffer, Ret bytes

	OpMPIFileOpen         Op = 200
	OpMPIFileClose        Op = 201
	OpMPIFileReadAt       Op = 202
	OpMPIFileReadAtAll    Op = 203
	OpMPIFileWriteAt      Op = 204
	OpMPIFileWriteAtAll   Op = 205
	OpMPIFileRead         Op = 206
	OpMPIFileReadAll      Op = 207
	OpMPIFileWrite        Op = 208
	OpMPIFileWriteAll     Op = 209
	OpMPIFileReadShared   Op = 210
	OpMPIFileWriteShared  Op = 211
	OpMPIFileReadOrdered  Op = 212
	OpMPIFileWriteOrdered Op = 213
	OpMPIFileSetView      Op = 214
	OpMPIFileSync         Op = 215
	OpMPIFileSeek         Op = 216
	OpMPIFileSeekShared   Op = 217
	OpMPIFileSetSize      Op = 218
	OpMPIFilePreallocate  Op = 219
	OpMPIFileDelete       Op = 220
	OpMPIFileIreadAt      Op = 221
	OpMPIFileIwriteAt     Op = 222
	OpMPIFileIread        Op = 223
	OpMPIFileIwrite       Op = 224

	OpMPISend       Op = 300
	OpMPIRecv       Op = 301
	OpMPIIsend      Op = 302
	OpMPIIrecv      Op = 303
	OpMPIWait       Op = 304
	OpMPIWaitall    Op = 305
	OpMPISendrecv   Op = 306
	OpMPIBarrier    Op = 307
	OpMPIBcast      Op = 308
	OpMPIReduce     Op = 309
	OpMPIAllreduce  Op = 310
	OpMPIGather     Op = 311
	OpMPIGatherv    Op = 312
	OpMPIScatter    Op = 313
	OpMPIScatterv   Op = 314
	OpMPIAllgather  Op = 315
	OpMPIAllgatherv Op = 316
	OpMPIAlltoall   Op = 317
	OpMPIAlltoallv  Op = 318
	OpMPICommSplit  Op = 319
	OpMPICommDup    Op = 320

	OpRegionBegin Op = 400 // Path is the label
	OpRegionEnd   Op = 401 // Path is the label
	OpMark        Op = 402 // an instant; Path is the label

	OpFork    Op = 500 // Ret: the new process's first thread; Flags: CLONE_ bits (CLONE_FILES: shares the table)
	OpClone   Op = 501 // a new thread Ret of the caller's process (clone with CLONE_THREAD)
	OpExec    Op = 502 // Path: the program
	OpExit    Op = 503 // Ret: the exit status (128+N: killed by signal N)
	OpInherit Op = 504 // FD open before the trace saw it: Path, Flags (open flags, O_CLOEXEC too), Offset (position)
)

// Flags of the copy calls (OpCopyFileRange, OpSendfile, OpSplice): which
// of their offsets the call gave. An offset the call did not give is the
// descriptor's position, which the call moves.
const (
	CopyInAt  uint32 = 1
	CopyOutAt uint32 = 2
)

// AtPosition marks, in the Flags of a preadv2 or pwritev2, a call made
// with offset −1: at the descriptor's position, which it moved. Its
// Offset is where the position was. (The call's own RWF_ flags are the
// low bits.)
const AtPosition uint32 = 1 << 30

// Commands of fcntl, in its Flags (Linux values); the argument is Size.
// Traces written before iotrace recorded the others hold only the dup
// commands.
const (
	FDupfd        = 0
	FGetfd        = 1
	FSetfd        = 2 // Size: FD_CLOEXEC (1) or 0
	FGetfl        = 3
	FSetfl        = 4 // Size: the new status flags (x86-64 open flag values)
	FDupfdCloexec = 1030
)

// CloseRangeCloexec is CLOSE_RANGE_CLOEXEC in a close_range's Flags: it
// only marks the descriptors close-on-exec, it closes none.
const CloseRangeCloexec = 4

// CloneFiles is CLONE_FILES in a fork's Flags: the new process shares
// the descriptor table of its parent.
const CloneFiles = 0x400

var opTable = map[Op]OpInfo{
	OpOpen:          {Name: "open", Family: "open", Class: ClassPOSIX, FD: FDOpen, NS: NSOpen},
	OpOpenat:        {Name: "openat", Family: "open", Class: ClassPOSIX, FD: FDOpen, NS: NSOpen},
	OpCreat:         {Name: "creat", Family: "open", Class: ClassPOSIX, FD: FDOpen, NS: NSOpen},
	OpOpenat2:       {Name: "openat2", Family: "open", Class: ClassPOSIX, FD: FDOpen, NS: NSOpen},
	OpClose:         {Name: "close", Family: "close", Class: ClassPOSIX, FD: FDClose},
	OpCloseRange:    {Name: "close_range", Family: "close", Class: ClassPOSIX, FD: FDCloseRange},
	OpRead:          {Name: "read", Family: "read", Class: ClassPOSIX, Dir: DirRead, Addr: AddrIndividual, FD: FDOn},
	OpPread:         {Name: "pread", Family: "read", Class: ClassPOSIX, Dir: DirRead, Addr: AddrExplicit, FD: FDOn},
	OpReadv:         {Name: "readv", Family: "read", Class: ClassPOSIX, Dir: DirRead, Addr: AddrIndividual, Vector: true, FD: FDOn},
	OpPreadv:        {Name: "preadv", Family: "read", Class: ClassPOSIX, Dir: DirRead, Addr: AddrExplicit, Vector: true, FD: FDOn},
	OpPreadv2:       {Name: "preadv2", Family: "read", Class: ClassPOSIX, Dir: DirRead, Addr: AddrExplicit, Vector: true, FD: FDOn},
	OpWrite:         {Name: "write", Family: "write", Class: ClassPOSIX, Dir: DirWrite, Addr: AddrIndividual, FD: FDOn},
	OpPwrite:        {Name: "pwrite", Family: "write", Class: ClassPOSIX, Dir: DirWrite, Addr: AddrExplicit, FD: FDOn},
	OpWritev:        {Name: "writev", Family: "write", Class: ClassPOSIX, Dir: DirWrite, Addr: AddrIndividual, Vector: true, FD: FDOn},
	OpPwritev:       {Name: "pwritev", Family: "write", Class: ClassPOSIX, Dir: DirWrite, Addr: AddrExplicit, Vector: true, FD: FDOn},
	OpPwritev2:      {Name: "pwritev2", Family: "write", Class: ClassPOSIX, Dir: DirWrite, Addr: AddrExplicit, Vector: true, FD: FDOn},
	OpLseek:         {Name: "lseek", Family: "seek", Class: ClassPOSIX, FD: FDOn},
	OpFsync:         {Name: "fsync", Family: "sync", Class: ClassPOSIX, FD: FDOn},
	OpFdatasync:     {Name: "fdatasync", Family: "sync", Class: ClassPOSIX, FD: FDOn},
	OpFtruncate:     {Name: "ftruncate", Family: "truncate", Class: ClassPOSIX, FD: FDOn, Resize: ResizeSet},
	OpDup:           {Name: "dup", Family: "dup", Class: ClassPOSIX, FD: FDDup},
	OpDup2:          {Name: "dup2", Family: "dup", Class: ClassPOSIX, FD: FDDup},
	OpDup3:          {Name: "dup3", Family: "dup", Class: ClassPOSIX, FD: FDDup},
	OpFcntl:         {Name: "fcntl", Family: "dup", Class: ClassPOSIX, FD: FDDup},
	OpCopyFileRange: {Name: "copy_file_range", Family: "copy", Class: ClassPOSIX, Dir: DirCopy, Addr: AddrIndividual, FD: FDOn},
	OpSendfile:      {Name: "sendfile", Family: "copy", Class: ClassPOSIX, Dir: DirCopy, Addr: AddrIndividual, FD: FDOn},
	OpSplice:        {Name: "splice", Family: "copy", Class: ClassPOSIX, Dir: DirCopy, Addr: AddrIndividual, FD: FDOn},
	OpFallocate:     {Name: "fallocate", Family: "allocate", Class: ClassPOSIX, FD: FDOn, Resize: ResizeExtend},
	OpFadvise:       {Name: "posix_fadvise", Family: "advise", Class: ClassPOSIX, FD: FDOn},
	OpSyncfs:        {Name: "syncfs", Family: "sync", Class: ClassPOSIX, FD: FDOn},
	OpSync:          {Name: "sync", Family: "sync", Class: ClassPOSIX},
	OpMmap:          {Name: "mmap", Family: "mmap", Class: ClassPOSIX, FD: FDOn},
	OpReadahead:     {Name: "readahead", Family: "advise", Class: ClassPOSIX, FD: FDOn},
	OpMunmap:        {Name: "munmap", Family: "mmap", Class: ClassPOSIX},
	OpMsync:         {Name: "msync", Family: "sync", Class: ClassPOSIX},
	OpPagein:        {Name: "pagein", Family: "mmap", Class: ClassPOSIX, Wait: true},
	OpFopen:         {Name: "fopen", Family: "open", Class: ClassPOSIX, FD: FDOpen, NS: NSOpen},
	OpFclose:        {Name: "fclose", Family: "close", Class: ClassPOSIX, FD: FDClose},
	OpFread:         {Name: "fread", Family: "read", Class: ClassPOSIX, Dir: DirRead, Addr: AddrIndividual, FD: FDOn},
	OpFwrite:        {Name: "fwrite", Family: "write", Class: ClassPOSIX, Dir: DirWrite, Addr: AddrIndividual, FD: FDOn},
	OpFseek:         {Name: "fseek", Family: "seek", Class: ClassPOSIX, FD: FDOn},
	OpFflush:        {Name: "fflush", Family: "flush", Class: ClassPOSIX, FD: FDOn},

	OpStat:       {Name: "stat", Family: "stat", Class: ClassMeta, NS: NSLook},
	OpLstat:      {Name: "lstat", Family: "stat", Class: ClassMeta, NS: NSLook},
	OpFstat:      {Name: "fstat", Family: "stat", Class: ClassMeta, FD: FDOn},
	OpFstatat:    {Name: "fstatat", Family: "stat", Class: ClassMeta, FD: FDAt, NS: NSLook},
	OpStatx:      {Name: "statx", Family: "stat", Class: ClassMeta, FD: FDAt, NS: NSLook},
	OpAccess:     {Name: "access", Family: "stat", Class: ClassMeta, FD: FDAt, NS: NSLook},
	OpUnlink:     {Name: "unlink", Family: "unlink", Class: ClassMeta, NS: NSRemove},
	OpUnlinkat:   {Name: "unlinkat", Family: "unlink", Class: ClassMeta, FD: FDAt, NS: NSRemove},
	OpRename:     {Name: "rename", Family: "rename", Class: ClassMeta, NS: NSRename},
	OpRenameat:   {Name: "renameat", Family: "rename", Class: ClassMeta, FD: FDAt, NS: NSRename},
	OpRenameat2:  {Name: "renameat2", Family: "rename", Class: ClassMeta, FD: FDAt, NS: NSRename},
	OpMkdir:      {Name: "mkdir", Family: "mkdir", Class: ClassMeta, NS: NSMkdir},
	OpMkdirat:    {Name: "mkdirat", Family: "mkdir", Class: ClassMeta, FD: FDAt, NS: NSMkdir},
	OpRmdir:      {Name: "rmdir", Family: "rmdir", Class: ClassMeta, NS: NSRmdir},
	OpTruncate:   {Name: "truncate", Family: "truncate", Class: ClassMeta, NS: NSLook, Resize: ResizeSet},
	OpLink:       {Name: "link", Family: "link", Class: ClassMeta, NS: NSLink},
	OpLinkat:     {Name: "linkat", Family: "link", Class: ClassMeta, FD: FDAt, NS: NSLink},
	OpSymlink:    {Name: "symlink", Family: "link", Class: ClassMeta, NS: NSSymlink},
	OpSymlinkat:  {Name: "symlinkat", Family: "link", Class: ClassMeta, FD: FDAt, NS: NSSymlink},
	OpReadlink:   {Name: "readlink", Family: "stat", Class: ClassMeta, NS: NSLook},
	OpReadlinkat: {Name: "readlinkat", Family: "stat", Class: ClassMeta, FD: FDAt, NS: NSLook},
	OpGetdents:   {Name: "getdents", Family: "readdir", Class: ClassMeta, FD: FDOn, NS: NSReaddir},

	OpMPIFileOpen:         {Name: "MPI_File_open", Class: ClassMPIIO, Collective: true, FD: FDOpen, NS: NSOpen},
	OpMPIFileClose:        {Name: "MPI_File_close", Class: ClassMPIIO, Collective: true, FD: FDClose},
	OpMPIFileReadAt:       {Name: "MPI_File_read_at", Class: ClassMPIIO, Dir: DirRead, Addr: AddrExplicit, FD: FDOn},
	OpMPIFileReadAtAll:    {Name: "MPI_File_read_at_all", Class: ClassMPIIO, Dir: DirRead, Addr: AddrExplicit, Collective: true, FD: FDOn},
	OpMPIFileWriteAt:      {Name: "MPI_File_write_at", Class: ClassMPIIO, Dir: DirWrite, Addr: AddrExplicit, FD: FDOn},
	OpMPIFileWriteAtAll:   {Name: "MPI_File_write_at_all", Class: ClassMPIIO, Dir: DirWrite, Addr: AddrExplicit, Collective: true, FD: FDOn},
	OpMPIFileRead:         {Name: "MPI_File_read", Class: ClassMPIIO, Dir: DirRead, Addr: AddrIndividual, FD: FDOn},
	OpMPIFileReadAll:      {Name: "MPI_File_read_all", Class: ClassMPIIO, Dir: DirRead, Addr: AddrIndividual, Collective: true, FD: FDOn},
	OpMPIFileWrite:        {Name: "MPI_File_write", Class: ClassMPIIO, Dir: DirWrite, Addr: AddrIndividual, FD: FDOn},
	OpMPIFileWriteAll:     {Name: "MPI_File_write_all", Class: ClassMPIIO, Dir: DirWrite, Addr: AddrIndividual, Collective: true, FD: FDOn},
	OpMPIFileReadShared:   {Name: "MPI_File_read_shared", Class: ClassMPIIO, Dir: DirRead, Addr: AddrShared, FD: FDOn},
	OpMPIFileWriteShared:  {Name: "MPI_File_write_shared", Class: ClassMPIIO, Dir: DirWrite, Addr: AddrShared, FD: FDOn},
	OpMPIFileReadOrdered:  {Name: "MPI_File_read_ordered", Class: ClassMPIIO, Dir: DirRead, Addr: AddrShared, Collective: true, FD: FDOn},
	OpMPIFileWriteOrdered: {Name: "MPI_File_write_ordered", Class: ClassMPIIO, Dir: DirWrite, Addr: AddrShared, Collective: true, FD: FDOn},
	OpMPIFileSetView:      {Name: "MPI_File_set_view", Class: ClassMPIIO, Collective: true, FD: FDOn},
	OpMPIFileSync:         {Name: "MPI_File_sync", Class: ClassMPIIO, Collective: true, FD: FDOn},
	OpMPIFileSeek:         {Name: "MPI_File_seek", Class: ClassMPIIO, FD: FDOn},
	OpMPIFileSeekShared:   {Name: "MPI_File_seek_shared", Class: ClassMPIIO, Collective: true, FD: FDOn},
	OpMPIFileSetSize:      {Name: "MPI_File_set_size", Class: ClassMPIIO, Collective: true, FD: FDOn, Resize: ResizeSet},
	OpMPIFilePreallocate:  {Name: "MPI_File_preallocate", Class: ClassMPIIO, Collective: true, FD: FDOn, Resize: ResizeExtend},
	OpMPIFileDelete:       {Name: "MPI_File_delete", Class: ClassMPIIO, NS: NSRemove},
	OpMPIFileIreadAt:      {Name: "MPI_File_iread_at", Class: ClassMPIIO, Dir: DirRead, Addr: AddrExplicit, FD: FDOn},
	OpMPIFileIwriteAt:     {Name: "MPI_File_iwrite_at", Class: ClassMPIIO, Dir: DirWrite, Addr: AddrExplicit, FD: FDOn},
	OpMPIFileIread:        {Name: "MPI_File_iread", Class: ClassMPIIO, Dir: DirRead, Addr: AddrIndividual, FD: FDOn},
	OpMPIFileIwrite:       {Name: "MPI_File_iwrite", Class: ClassMPIIO, Dir: DirWrite, Addr: AddrIndividual, FD: FDOn},

	OpMPISend:       {Name: "MPI_Send", Class: ClassComm, Comm: CommP2P},
	OpMPIRecv:       {Name: "MPI_Recv", Class: ClassComm, Comm: CommP2P},
	OpMPIIsend:      {Name: "MPI_Isend", Class: ClassComm, Comm: CommP2P},
	OpMPIIrecv:      {Name: "MPI_Irecv", Class: ClassComm, Comm: CommP2P},
	OpMPIWait:       {Name: "MPI_Wait", Class: ClassComm, Comm: CommWait},
	OpMPIWaitall:    {Name: "MPI_Waitall", Class: ClassComm, Comm: CommWait},
	OpMPISendrecv:   {Name: "MPI_Sendrecv", Class: ClassComm, Comm: CommP2P},
	OpMPIBarrier:    {Name: "MPI_Barrier", Class: ClassComm, Collective: true, Comm: CommAll},
	OpMPIBcast:      {Name: "MPI_Bcast", Class: ClassComm, Collective: true, Comm: CommRooted},
	OpMPIReduce:     {Name: "MPI_Reduce", Class: ClassComm, Collective: true, Comm: CommRooted},
	OpMPIAllreduce:  {Name: "MPI_Allreduce", Class: ClassComm, Collective: true, Comm: CommAll},
	OpMPIGather:     {Name: "MPI_Gather", Class: ClassComm, Collective: true, Comm: CommRooted},
	OpMPIGatherv:    {Name: "MPI_Gatherv", Class: ClassComm, Collective: true, Comm: CommRooted},
	OpMPIScatter:    {Name: "MPI_Scatter", Class: ClassComm, Collective: true, Comm: CommRooted},
	OpMPIScatterv:   {Name: "MPI_Scatterv", Class: ClassComm, Collective: true, Comm: CommRooted},
	OpMPIAllgather:  {Name: "MPI_Allgather", Class: ClassComm, Collective: true, Comm: CommAll},
	OpMPIAllgatherv: {Name: "MPI_Allgatherv", Class: ClassComm, Collective: true, Comm: CommAll},
	OpMPIAlltoall:   {Name: "MPI_Alltoall", Class: ClassComm, Collective: true, Comm: CommAll},
	OpMPIAlltoallv:  {Name: "MPI_Alltoallv", Class: ClassComm, Collective: true, Comm: CommAll},
	OpMPICommSplit:  {Name: "MPI_Comm_split", Class: ClassComm, Collective: true, Comm: CommCreate},
	OpMPICommDup:    {Name: "MPI_Comm_dup", Class: ClassComm, Collective: true, Comm: CommCreate},

	OpRegionBegin: {Name: "region_begin", Family: "region", Class: ClassMarker},
	OpRegionEnd:   {Name: "region_end", Family: "region", Class: ClassMarker},
	OpMark:        {Name: "mark", Family: "mark", Class: ClassMarker},

	OpFork:    {Name: "fork", Family: "process", Class: ClassProcess, Proc: ProcFork},
	OpClone:   {Name: "clone", Family: "process", Class: ClassProcess, Proc: ProcThread},
	OpExec:    {Name: "exec", Family: "process", Class: ClassProcess, Proc: ProcExec},
	OpExit:    {Name: "exit", Family: "process", Class: ClassProcess, Proc: ProcExit},
	OpInherit: {Name: "inherit", Family: "process", Class: ClassProcess, Proc: ProcInherit, FD: FDOpen},
}

// opNames finds ops by name: byName by their names and the spellings
// other tools print, mpiByLower the MPI calls by their lower-case names.
// Made when a name is first parsed, not at every command's start.
var opNames = sync.OnceValue(func() (n struct{ byName, mpiByLower map[string]Op }) {
	n.byName, n.mpiByLower = map[string]Op{}, map[string]Op{}
	for op, info := range opTable {
		n.byName[info.Name] = op
		if strings.HasPrefix(info.Name, "MPI_") {
			n.mpiByLower[strings.ToLower(info.Name)] = op
		}
	}
	// Spellings other tools print for the same calls.
	for alias, op := range map[string]Op{
		"pread64": OpPread, "pwrite64": OpPwrite, "newfstatat": OpFstatat,
		"fstatat64": OpFstatat, "stat64": OpStat, "lstat64": OpLstat, "fstat64": OpFstat,
		"lseek64": OpLseek, "open64": OpOpen, "openat64": OpOpenat, "creat64": OpCreat,
		"pread64v": OpPreadv, "preadv64": OpPreadv, "pwritev64": OpPwritev,
		"preadv64v2": OpPreadv2, "pwritev64v2": OpPwritev2,
		"ftruncate64": OpFtruncate, "truncate64": OpTruncate, "fopen64": OpFopen,
		"fseeko": OpFseek, "fseeko64": OpFseek,
		"sendfile64": OpSendfile, "fallocate64": OpFallocate, "posix_fadvise64": OpFadvise,
		"fadvise64": OpFadvise, "mmap64": OpMmap, "mmap2": OpMmap, "getdents64": OpGetdents,
		"vfork": OpFork, "execve": OpExec, "execveat": OpExec, "exit_group": OpExit,
	} {
		n.byName[alias] = op
	}
	return n
})

// opInfos is opTable as an array, for lookups on hot paths.
const opLimit = 1024

var opInfos [opLimit]struct {
	info  OpInfo
	known bool
}

func init() {
	for op, info := range opTable {
		if info.Family == "" {
			info.Family = info.Name
			opTable[op] = info
		}
		opInfos[op].info, opInfos[op].known = info, true
	}
}

// Info describes op. An op this build does not know has Name "op#N",
// Family "unknown" and Class ClassUnknown.
func (o Op) Info() OpInfo {
	if o < opLimit && opInfos[o].known {
		return opInfos[o].info
	}
	name := fmt.Sprintf("op#%d", uint16(o))
	return OpInfo{Name: name, Family: "unknown"}
}

// Class returns op's class (cheaper than Info().Class).
func (o Op) Class() Class {
	if o < opLimit {
		return opInfos[o].info.Class
	}
	return ClassUnknown
}

// Dir returns op's data direction (cheaper than Info().Dir).
func (o Op) Dir() Dir {
	if o < opLimit {
		return opInfos[o].info.Dir
	}
	return DirNone
}

// Collective reports whether every member of the communicator takes part
// in op (cheaper than Info().Collective).
func (o Op) Collective() bool { return o < opLimit && opInfos[o].info.Collective }

// Known reports whether this build knows op.
func (o Op) Known() bool { return o < opLimit && opInfos[o].known }

func (o Op) String() string { return o.Info().Name }

// ParseOp returns the op called name: a call name ("pwrite", "pwrite64",
// "MPI_File_write_at_all"; MPI names are matched without regard to case) or
// "op#N" for a raw op number.
func ParseOp(name string) (Op, bool) {
	names := opNames()
	if op, ok := names.byName[name]; ok {
		return op, true
	}
	if op, ok := names.mpiByLower[strings.ToLower(name)]; ok {
		return op, true
	}
	var n uint16
	if _, err := fmt.Sscanf(name, "op#%d", &n); err == nil && fmt.Sprintf("op#%d", n) == name {
		return Op(n), true
	}
	return OpUnknown, false
}

// Ops returns every known op in numeric order, in a slice of the
// caller's.
func Ops() []Op { return slices.Clone(sortedOps()) }

// sortedOps is the list Ops copies, made once: the op tables of several
// packages call Ops at every command's start (it was 5 sorts through
// sort.Slice's reflection, 0.26 M instructions of ioreplay's start).
var sortedOps = sync.OnceValue(func() []Op {
	ops := make([]Op, 0, len(opTable))
	for op := range opTable {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	return ops
})
