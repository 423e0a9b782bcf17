// Package trace is the event model of iotrace: one event per call by one
// rank (and thread), a path table that events refer to by id, and the small
// Source/Sink interfaces that move events between producers and consumers.
package trace

import (
	"fmt"
	"sort"
	"strings"
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
	}
	return "unknown"
}

// Dir is the data direction of an op.
type Dir uint8

const (
	DirNone Dir = iota
	DirRead
	DirWrite
)

// Addressing says where a data op reads or writes.
type Addressing uint8

const (
	AddrNone       Addressing = iota
	AddrExplicit              // at Event.Offset (pread, MPI_File_write_at)
	AddrIndividual            // at the handle's own position (read, MPI_File_read)
	AddrShared                // at the shared file pointer (MPI_File_read_shared/ordered)
)

// OpInfo describes an op.
type OpInfo struct {
	Name       string // the call's name as users know it: "pwrite", "MPI_File_write_at_all"
	Family     string // the row that gathers it in reports: "write", "open", "MPI_Bcast"
	Class      Class
	Dir        Dir
	Addr       Addressing
	Collective bool // every member of the communicator takes part
	Vector     bool // readv/writev family: Event.Count holds the iovec count
}

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
	OpFopen      Op = 40
	OpFclose     Op = 41
	OpFread      Op = 42
	OpFwrite     Op = 43
	OpFseek      Op = 44
	OpFflush     Op = 45

	OpStat      Op = 100
	OpLstat     Op = 101
	OpFstat     Op = 102
	OpFstatat   Op = 103
	OpStatx     Op = 104
	OpAccess    Op = 105
	OpUnlink    Op = 106
	OpUnlinkat  Op = 107
	OpRename    Op = 108
	OpRenameat  Op = 109
	OpRenameat2 Op = 110
	OpMkdir     Op = 111
	OpMkdirat   Op = 112
	OpRmdir     Op = 113
	OpTruncate  Op = 114

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
)

var opTable = map[Op]OpInfo{
	OpOpen:       {Name: "open", Family: "open", Class: ClassPOSIX},
	OpOpenat:     {Name: "openat", Family: "open", Class: ClassPOSIX},
	OpCreat:      {Name: "creat", Family: "open", Class: ClassPOSIX},
	OpOpenat2:    {Name: "openat2", Family: "open", Class: ClassPOSIX},
	OpClose:      {Name: "close", Family: "close", Class: ClassPOSIX},
	OpCloseRange: {Name: "close_range", Family: "close", Class: ClassPOSIX},
	OpRead:       {Name: "read", Family: "read", Class: ClassPOSIX, Dir: DirRead, Addr: AddrIndividual},
	OpPread:      {Name: "pread", Family: "read", Class: ClassPOSIX, Dir: DirRead, Addr: AddrExplicit},
	OpReadv:      {Name: "readv", Family: "read", Class: ClassPOSIX, Dir: DirRead, Addr: AddrIndividual, Vector: true},
	OpPreadv:     {Name: "preadv", Family: "read", Class: ClassPOSIX, Dir: DirRead, Addr: AddrExplicit, Vector: true},
	OpPreadv2:    {Name: "preadv2", Family: "read", Class: ClassPOSIX, Dir: DirRead, Addr: AddrExplicit, Vector: true},
	OpWrite:      {Name: "write", Family: "write", Class: ClassPOSIX, Dir: DirWrite, Addr: AddrIndividual},
	OpPwrite:     {Name: "pwrite", Family: "write", Class: ClassPOSIX, Dir: DirWrite, Addr: AddrExplicit},
	OpWritev:     {Name: "writev", Family: "write", Class: ClassPOSIX, Dir: DirWrite, Addr: AddrIndividual, Vector: true},
	OpPwritev:    {Name: "pwritev", Family: "write", Class: ClassPOSIX, Dir: DirWrite, Addr: AddrExplicit, Vector: true},
	OpPwritev2:   {Name: "pwritev2", Family: "write", Class: ClassPOSIX, Dir: DirWrite, Addr: AddrExplicit, Vector: true},
	OpLseek:      {Name: "lseek", Family: "seek", Class: ClassPOSIX},
	OpFsync:      {Name: "fsync", Family: "sync", Class: ClassPOSIX},
	OpFdatasync:  {Name: "fdatasync", Family: "sync", Class: ClassPOSIX},
	OpFtruncate:  {Name: "ftruncate", Family: "truncate", Class: ClassPOSIX},
	OpDup:        {Name: "dup", Family: "dup", Class: ClassPOSIX},
	OpDup2:       {Name: "dup2", Family: "dup", Class: ClassPOSIX},
	OpDup3:       {Name: "dup3", Family: "dup", Class: ClassPOSIX},
	OpFcntl:      {Name: "fcntl", Family: "dup", Class: ClassPOSIX},
	OpFopen:      {Name: "fopen", Family: "open", Class: ClassPOSIX},
	OpFclose:     {Name: "fclose", Family: "close", Class: ClassPOSIX},
	OpFread:      {Name: "fread", Family: "read", Class: ClassPOSIX, Dir: DirRead, Addr: AddrIndividual},
	OpFwrite:     {Name: "fwrite", Family: "write", Class: ClassPOSIX, Dir: DirWrite, Addr: AddrIndividual},
	OpFseek:      {Name: "fseek", Family: "seek", Class: ClassPOSIX},
	OpFflush:     {Name: "fflush", Family: "sync", Class: ClassPOSIX},

	OpStat:      {Name: "stat", Family: "stat", Class: ClassMeta},
	OpLstat:     {Name: "lstat", Family: "stat", Class: ClassMeta},
	OpFstat:     {Name: "fstat", Family: "stat", Class: ClassMeta},
	OpFstatat:   {Name: "fstatat", Family: "stat", Class: ClassMeta},
	OpStatx:     {Name: "statx", Family: "stat", Class: ClassMeta},
	OpAccess:    {Name: "access", Family: "stat", Class: ClassMeta},
	OpUnlink:    {Name: "unlink", Family: "unlink", Class: ClassMeta},
	OpUnlinkat:  {Name: "unlinkat", Family: "unlink", Class: ClassMeta},
	OpRename:    {Name: "rename", Family: "rename", Class: ClassMeta},
	OpRenameat:  {Name: "renameat", Family: "rename", Class: ClassMeta},
	OpRenameat2: {Name: "renameat2", Family: "rename", Class: ClassMeta},
	OpMkdir:     {Name: "mkdir", Family: "mkdir", Class: ClassMeta},
	OpMkdirat:   {Name: "mkdirat", Family: "mkdir", Class: ClassMeta},
	OpRmdir:     {Name: "rmdir", Family: "rmdir", Class: ClassMeta},
	OpTruncate:  {Name: "truncate", Family: "truncate", Class: ClassMeta},

	OpMPIFileOpen:         {Name: "MPI_File_open", Class: ClassMPIIO, Collective: true},
	OpMPIFileClose:        {Name: "MPI_File_close", Class: ClassMPIIO, Collective: true},
	OpMPIFileReadAt:       {Name: "MPI_File_read_at", Class: ClassMPIIO, Dir: DirRead, Addr: AddrExplicit},
	OpMPIFileReadAtAll:    {Name: "MPI_File_read_at_all", Class: ClassMPIIO, Dir: DirRead, Addr: AddrExplicit, Collective: true},
	OpMPIFileWriteAt:      {Name: "MPI_File_write_at", Class: ClassMPIIO, Dir: DirWrite, Addr: AddrExplicit},
	OpMPIFileWriteAtAll:   {Name: "MPI_File_write_at_all", Class: ClassMPIIO, Dir: DirWrite, Addr: AddrExplicit, Collective: true},
	OpMPIFileRead:         {Name: "MPI_File_read", Class: ClassMPIIO, Dir: DirRead, Addr: AddrIndividual},
	OpMPIFileReadAll:      {Name: "MPI_File_read_all", Class: ClassMPIIO, Dir: DirRead, Addr: AddrIndividual, Collective: true},
	OpMPIFileWrite:        {Name: "MPI_File_write", Class: ClassMPIIO, Dir: DirWrite, Addr: AddrIndividual},
	OpMPIFileWriteAll:     {Name: "MPI_File_write_all", Class: ClassMPIIO, Dir: DirWrite, Addr: AddrIndividual, Collective: true},
	OpMPIFileReadShared:   {Name: "MPI_File_read_shared", Class: ClassMPIIO, Dir: DirRead, Addr: AddrShared},
	OpMPIFileWriteShared:  {Name: "MPI_File_write_shared", Class: ClassMPIIO, Dir: DirWrite, Addr: AddrShared},
	OpMPIFileReadOrdered:  {Name: "MPI_File_read_ordered", Class: ClassMPIIO, Dir: DirRead, Addr: AddrShared, Collective: true},
	OpMPIFileWriteOrdered: {Name: "MPI_File_write_ordered", Class: ClassMPIIO, Dir: DirWrite, Addr: AddrShared, Collective: true},
	OpMPIFileSetView:      {Name: "MPI_File_set_view", Class: ClassMPIIO, Collective: true},
	OpMPIFileSync:         {Name: "MPI_File_sync", Class: ClassMPIIO, Collective: true},
	OpMPIFileSeek:         {Name: "MPI_File_seek", Class: ClassMPIIO},
	OpMPIFileSeekShared:   {Name: "MPI_File_seek_shared", Class: ClassMPIIO, Collective: true},
	OpMPIFileSetSize:      {Name: "MPI_File_set_size", Class: ClassMPIIO, Collective: true},
	OpMPIFilePreallocate:  {Name: "MPI_File_preallocate", Class: ClassMPIIO, Collective: true},
	OpMPIFileDelete:       {Name: "MPI_File_delete", Class: ClassMPIIO},
	OpMPIFileIreadAt:      {Name: "MPI_File_iread_at", Class: ClassMPIIO, Dir: DirRead, Addr: AddrExplicit},
	OpMPIFileIwriteAt:     {Name: "MPI_File_iwrite_at", Class: ClassMPIIO, Dir: DirWrite, Addr: AddrExplicit},
	OpMPIFileIread:        {Name: "MPI_File_iread", Class: ClassMPIIO, Dir: DirRead, Addr: AddrIndividual},
	OpMPIFileIwrite:       {Name: "MPI_File_iwrite", Class: ClassMPIIO, Dir: DirWrite, Addr: AddrIndividual},

	OpMPISend:       {Name: "MPI_Send", Class: ClassComm},
	OpMPIRecv:       {Name: "MPI_Recv", Class: ClassComm},
	OpMPIIsend:      {Name: "MPI_Isend", Class: ClassComm},
	OpMPIIrecv:      {Name: "MPI_Irecv", Class: ClassComm},
	OpMPIWait:       {Name: "MPI_Wait", Class: ClassComm},
	OpMPIWaitall:    {Name: "MPI_Waitall", Class: ClassComm},
	OpMPISendrecv:   {Name: "MPI_Sendrecv", Class: ClassComm},
	OpMPIBarrier:    {Name: "MPI_Barrier", Class: ClassComm, Collective: true},
	OpMPIBcast:      {Name: "MPI_Bcast", Class: ClassComm, Collective: true},
	OpMPIReduce:     {Name: "MPI_Reduce", Class: ClassComm, Collective: true},
	OpMPIAllreduce:  {Name: "MPI_Allreduce", Class: ClassComm, Collective: true},
	OpMPIGather:     {Name: "MPI_Gather", Class: ClassComm, Collective: true},
	OpMPIGatherv:    {Name: "MPI_Gatherv", Class: ClassComm, Collective: true},
	OpMPIScatter:    {Name: "MPI_Scatter", Class: ClassComm, Collective: true},
	OpMPIScatterv:   {Name: "MPI_Scatterv", Class: ClassComm, Collective: true},
	OpMPIAllgather:  {Name: "MPI_Allgather", Class: ClassComm, Collective: true},
	OpMPIAllgatherv: {Name: "MPI_Allgatherv", Class: ClassComm, Collective: true},
	OpMPIAlltoall:   {Name: "MPI_Alltoall", Class: ClassComm, Collective: true},
	OpMPIAlltoallv:  {Name: "MPI_Alltoallv", Class: ClassComm, Collective: true},
	OpMPICommSplit:  {Name: "MPI_Comm_split", Class: ClassComm, Collective: true},
	OpMPICommDup:    {Name: "MPI_Comm_dup", Class: ClassComm, Collective: true},

	OpRegionBegin: {Name: "region_begin", Family: "region", Class: ClassMarker},
	OpRegionEnd:   {Name: "region_end", Family: "region", Class: ClassMarker},
	OpMark:        {Name: "mark", Family: "mark", Class: ClassMarker},
}

var opByName = map[string]Op{}

// mpiOpByLower finds MPI calls by their lower-case names.
var mpiOpByLower = map[string]Op{}

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
		opByName[info.Name] = op
		if strings.HasPrefix(info.Name, "MPI_") {
			mpiOpByLower[strings.ToLower(info.Name)] = op
		}
		opInfos[op].info, opInfos[op].known = info, true
	}
	// Spellings other tools print for the same calls.
	for alias, op := range map[string]Op{
		"pread64": OpPread, "pwrite64": OpPwrite, "newfstatat": OpFstatat,
		"fstatat64": OpFstatat, "stat64": OpStat, "lstat64": OpLstat, "fstat64": OpFstat,
		"lseek64": OpLseek, "open64": OpOpen, "openat64": OpOpenat, "creat64": OpCreat,
		"pread64v": OpPreadv, "preadv64": OpPreadv, "pwritev64": OpPwritev,
		"ftruncate64": OpFtruncate, "truncate64": OpTruncate, "fopen64": OpFopen,
		"fseeko": OpFseek, "fseeko64": OpFseek,
	} {
		opByName[alias] = op
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

// Known reports whether this build knows op.
func (o Op) Known() bool { return o < opLimit && opInfos[o].known }

func (o Op) String() string { return o.Info().Name }

// ParseOp returns the op called name: a call name ("pwrite", "pwrite64",
// "MPI_File_write_at_all"; MPI names are matched without regard to case) or
// "op#N" for a raw op number.
func ParseOp(name string) (Op, bool) {
	if op, ok := opByName[name]; ok {
		return op, true
	}
	if op, ok := mpiOpByLower[strings.ToLower(name)]; ok {
		return op, true
	}
	var n uint16
	if _, err := fmt.Sscanf(name, "op#%d", &n); err == nil && fmt.Sprintf("op#%d", n) == name {
		return Op(n), true
	}
	return OpUnknown, false
}

// Ops returns every known op in numeric order.
func Ops() []Op {
	ops := make([]Op, 0, len(opTable))
	for op := range opTable {
		ops = append(ops, op)
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i] < ops[j] })
	return ops
}
