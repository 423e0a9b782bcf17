package script

import (
	"sort"
	"sync"

	"github.com/iotrace/iotrace/trace"
)

// Type is the type of a value in a script.
type Type uint8

const (
	TInvalid   Type = iota // the type of an expression with an error
	TInt                   // 64-bit integer; sizes are ints counting bytes
	TDuration              // nanoseconds, written 10s, 500ms…
	TBool                  // true or false
	TString                // text
	TGroup                 // a process group
	THandle                // a POSIX file descriptor (open … as h)
	TMPIHandle             // an MPI file handle (mpiopen … as h)
	TList                  // a list of ints: [1KiB, 32KiB, 1MiB]
	TComm                  // a communicator (split … as c)
)

func (t Type) String() string {
	switch t {
	case TInt:
		return "int"
	case TDuration:
		return "duration"
	case TBool:
		return "bool"
	case TString:
		return "string"
	case TGroup:
		return "group"
	case THandle:
		return "file handle"
	case TMPIHandle:
		return "MPI file handle"
	case TList:
		return "list"
	case TComm:
		return "communicator"
	}
	return "invalid"
}

type argKind uint8

const (
	argExpr argKind = iota // key EXPR
	argName                // as NAME
	argWord                // key WORD, WORD from a fixed list
	argFlag                // a bare word
)

type argSpec struct {
	key      string
	kind     argKind
	typ      Type     // argExpr: the value's type; argName: THandle for a handle the command uses (not one it binds)
	words    []string // argWord
	required bool
	what     string // how errors name the value: "offset", "bytes"
	detail   bool   // a call detail (docs/SCRIPT.md): left out of synopses and suggestions
}

// cmdSpec describes a command: what its operand may be and which keyword
// arguments it takes, in the order the printer writes them.
type cmdSpec struct {
	name       string
	operand    []Type // types the operand may have; nil: no operand
	optOperand bool   // the operand may be left out (sync alone is sync(2))
	opWhat     string // how errors name the operand
	args       []argSpec
	synopsis   string
}

var (
	aAt      = argSpec{key: "at", kind: argExpr, typ: TInt, what: "offset"}
	aSizeReq = argSpec{key: "size", kind: argExpr, typ: TInt, required: true, what: "size"}
	aAll     = argSpec{key: "all", kind: argFlag}
	aShared  = argSpec{key: "shared", kind: argFlag}
	aOrdered = argSpec{key: "ordered", kind: argFlag}
	aMode    = argSpec{key: "mode", kind: argExpr, typ: TInt, what: "permission bits"}
	aFlags   = argSpec{key: "flags", kind: argExpr, typ: TInt, what: "flags"}
	aAs      = argSpec{key: "as", kind: argName, required: true}
	aRoot    = argSpec{key: "root", kind: argExpr, typ: TInt, what: "root rank"}
	aTag     = argSpec{key: "tag", kind: argExpr, typ: TInt, what: "tag"}
	aToInt   = argSpec{key: "to", kind: argExpr, typ: TInt, required: true, what: "size"}

	// Call details: what a trace records about a call beyond what the
	// command says (docs/SCRIPT.md, "Call details").
	aIov   = argSpec{key: "iov", kind: argExpr, typ: TInt, what: "buffer count", detail: true}
	aElems = argSpec{key: "elements", kind: argExpr, typ: TInt, what: "element count", detail: true}
	aCall  = argSpec{key: "call", kind: argWord, detail: true} // any call name; the checker knows which fit
	aRet   = argSpec{key: "ret", kind: argExpr, typ: TInt, what: "result", detail: true}
	// flags and mode are details where the command does not take them
	// anyway (stat, delete, rename, lookup, read and write).
	dFlags = argSpec{key: "flags", kind: argExpr, typ: TInt, what: "flags", detail: true}
	dMode  = argSpec{key: "mode", kind: argExpr, typ: TInt, what: "mode", detail: true}
	// thread T: the thread that makes the call (Event.Thread), on every
	// command that makes events; 0 by default.
	aThread = argSpec{key: "thread", kind: argExpr, typ: TInt, what: "thread", detail: true}
	// fd N: the descriptor an open or dup gives, where it is not the
	// lowest free one from 3.
	aFD = argSpec{key: "fd", kind: argExpr, typ: TInt, what: "descriptor", detail: true}
	// pos N: the position a call at the handle's position is at, where
	// the trace's is not the one the script tracks.
	aPos = argSpec{key: "pos", kind: argExpr, typ: TInt, what: "position", detail: true}
	// comm NAME: the call is on communicator NAME (made by split), its
	// peers and roots ranks of it.
	aComm = argSpec{key: "comm", kind: argName, typ: TComm, detail: true}
	// anysource, anytag: a receive posted with MPI_ANY_SOURCE or
	// MPI_ANY_TAG; from and tag are what the message it matched had.
	aAnySource = argSpec{key: "anysource", kind: argFlag, detail: true}
	aAnyTag    = argSpec{key: "anytag", kind: argFlag, detail: true}
	aElemsC    = argSpec{key: "elements", kind: argExpr, typ: TInt, what: "element count", detail: true}

	pathOrHandle = []Type{TString, THandle, TMPIHandle}
	handles      = []Type{THandle, TMPIHandle}
)

var commandList = []cmdSpec{
	{name: "read", operand: pathOrHandle, opWhat: "a path or a file handle", args: []argSpec{aAt, aSizeReq, aAll, aShared, aOrdered, aIov, aElems, dFlags, aCall, aRet},
		synopsis: "read PATH|HANDLE [at OFFSET] size N [all|shared|ordered]"},
	{name: "write", operand: pathOrHandle, opWhat: "a path or a file handle", args: []argSpec{aAt, aSizeReq, aAll, aShared, aOrdered, aIov, aElems, dFlags, aCall, aRet},
		synopsis: "write PATH|HANDLE [at OFFSET] size N [all|shared|ordered]"},
	{name: "append", operand: []Type{TString}, opWhat: "a path", args: []argSpec{aSizeReq},
		synopsis: "append PATH size N"},
	{name: "create", operand: []Type{TString}, opWhat: "a path", args: []argSpec{aMode},
		synopsis: "create PATH [mode PERM]"},
	{name: "delete", operand: []Type{TString}, opWhat: "a path", args: []argSpec{dFlags, aCall, aRet}, synopsis: "delete PATH"},
	{name: "rename", operand: []Type{TString}, opWhat: "a path",
		args:     []argSpec{{key: "to", kind: argExpr, typ: TString, required: true, what: "new path"}, dFlags, aCall, aRet},
		synopsis: "rename PATH to PATH"},
	{name: "lookup", operand: []Type{TString, THandle}, opWhat: "a path or a file handle", args: []argSpec{dMode, dFlags, aRet}, synopsis: "lookup PATH|HANDLE"},
	{name: "stat", operand: []Type{TString, THandle}, opWhat: "a path or a file handle", args: []argSpec{dMode, dFlags, aCall, aRet}, synopsis: "stat PATH|HANDLE"},
	{name: "mkdir", operand: []Type{TString}, opWhat: "a path", args: []argSpec{aMode, dFlags, aCall, aRet}, synopsis: "mkdir PATH [mode PERM]"},
	{name: "rmdir", operand: []Type{TString}, opWhat: "a path", args: []argSpec{dFlags, aRet}, synopsis: "rmdir PATH"},
	{name: "truncate", operand: pathOrHandle, opWhat: "a path or a file handle", args: []argSpec{aToInt, dFlags, aCall, aRet},
		synopsis: "truncate PATH|HANDLE to N"},
	{name: "open", operand: []Type{TString}, opWhat: "a path", args: []argSpec{aAs, aFlags, aMode, aCall, aRet},
		synopsis: "open PATH as NAME [flags FLAGS] [mode PERM]"},
	{name: "mpiopen", operand: []Type{TString}, opWhat: "a path", args: []argSpec{aAs, aFlags, {key: "self", kind: argFlag}, aRet},
		synopsis: "mpiopen PATH as NAME [flags AMODE] [self]"},
	{name: "close", operand: handles, opWhat: "a file handle", args: []argSpec{dFlags, aCall, aRet}, synopsis: "close HANDLE"},
	{name: "dup", operand: []Type{THandle}, opWhat: "a POSIX file handle", args: []argSpec{aAs, dFlags,
		{key: "arg", kind: argExpr, typ: TInt, what: "argument", detail: true}, aCall, aRet},
		synopsis: "dup HANDLE as NAME"},
	{name: "seek", operand: handles, opWhat: "a file handle",
		args: []argSpec{{key: "to", kind: argExpr, typ: TInt, required: true, what: "offset"},
			{key: "from", kind: argWord, words: []string{"start", "current", "end", "data", "hole"}}, aShared, dFlags, aCall, aRet},
		synopsis: "seek HANDLE to OFFSET [from start|current|end] [shared]"},
	{name: "sync", operand: handles, opWhat: "a file handle", args: []argSpec{dFlags, aCall, aRet}, synopsis: "sync [HANDLE]"},
	{name: "datasync", operand: []Type{THandle}, opWhat: "a POSIX file handle", args: []argSpec{dFlags, aRet}, synopsis: "datasync HANDLE"},
	{name: "view", operand: []Type{TMPIHandle}, opWhat: "an MPI file handle",
		args: []argSpec{{key: "disp", kind: argExpr, typ: TInt, what: "displacement"},
			{key: "block", kind: argExpr, typ: TInt, what: "block length"},
			{key: "stride", kind: argExpr, typ: TInt, what: "stride"}, aRet},
		synopsis: "view HANDLE [disp D] [block B stride S]"},
	{name: "barrier", args: []argSpec{aRet}, synopsis: "barrier"},
	{name: "bcast", operand: []Type{TInt}, opWhat: "a byte count", args: []argSpec{aRoot, aCall, aRet}, synopsis: "bcast N [root R]"},
	{name: "reduce", operand: []Type{TInt}, opWhat: "a byte count", args: []argSpec{aRoot, aCall, aRet}, synopsis: "reduce N [root R]"},
	{name: "gather", operand: []Type{TInt}, opWhat: "a byte count", args: []argSpec{aRoot, aCall, aRet}, synopsis: "gather N [root R]"},
	{name: "scatter", operand: []Type{TInt}, opWhat: "a byte count", args: []argSpec{aRoot, aCall, aRet}, synopsis: "scatter N [root R]"},
	{name: "allreduce", operand: []Type{TInt}, opWhat: "a byte count", args: []argSpec{aCall, aRet}, synopsis: "allreduce N"},
	{name: "allgather", operand: []Type{TInt}, opWhat: "a byte count", args: []argSpec{aCall, aRet}, synopsis: "allgather N"},
	{name: "alltoall", operand: []Type{TInt}, opWhat: "a byte count", args: []argSpec{aCall, aRet}, synopsis: "alltoall N"},
	{name: "send", operand: []Type{TInt}, opWhat: "a byte count",
		args:     []argSpec{{key: "to", kind: argExpr, typ: TInt, required: true, what: "peer rank"}, aTag, aCall, aRet},
		synopsis: "send N to PEER [tag T]"},
	{name: "recv", operand: []Type{TInt}, opWhat: "a byte count",
		args:     []argSpec{{key: "from", kind: argExpr, typ: TInt, required: true, what: "peer rank"}, aTag, aAnySource, aAnyTag, aCall, aRet},
		synopsis: "recv N from PEER|any [tag T|any]"},
	{name: "sendrecv", operand: []Type{TInt}, opWhat: "a byte count",
		args: []argSpec{{key: "with", kind: argExpr, typ: TInt, what: "peer rank"},
			{key: "to", kind: argExpr, typ: TInt, what: "destination rank"},
			{key: "from", kind: argExpr, typ: TInt, what: "source rank"}, aTag,
			{key: "recvtag", kind: argExpr, typ: TInt, what: "receive tag"}, aAnySource, aAnyTag, aRet},
		synopsis: "sendrecv N with PEER|to PEER from PEER [tag T] [recvtag T]"},
	{name: "sleep", operand: []Type{TDuration}, opWhat: "a duration", synopsis: "sleep DURATION"},
	{name: "mark", operand: []Type{TString}, opWhat: "a label", synopsis: "mark LABEL"},
	{name: "fail", operand: []Type{TString}, opWhat: "a message", synopsis: "fail MESSAGE"},

	// Descriptors a script did not open, and the other descriptor calls.
	{name: "inherit", operand: []Type{TString}, opWhat: "a path", args: []argSpec{aAs,
		{key: "fd", kind: argExpr, typ: TInt, required: true, what: "descriptor"}, aFlags, aAt, {key: "quiet", kind: argFlag}},
		synopsis: "inherit PATH as NAME fd N [flags FLAGS] [at POS] [quiet]"},
	{name: "fcntl", operand: []Type{THandle}, opWhat: "a POSIX file handle", args: []argSpec{
		{key: "cmd", kind: argExpr, typ: TInt, required: true, what: "command"}, {key: "arg", kind: argExpr, typ: TInt, what: "argument"}, aRet},
		synopsis: "fcntl HANDLE cmd C [arg A]"},
	{name: "closerange", operand: []Type{TInt}, opWhat: "a descriptor", args: []argSpec{
		{key: "to", kind: argExpr, typ: TInt, required: true, what: "last descriptor"}, aFlags, aRet},
		synopsis: "closerange FIRST to LAST [flags F]"},
	{name: "copy", operand: []Type{THandle}, opWhat: "a POSIX file handle", args: []argSpec{
		{key: "to", kind: argName, typ: THandle, required: true}, aAt, {key: "outat", kind: argExpr, typ: TInt, what: "offset"}, aSizeReq,
		aPos, {key: "outpos", kind: argExpr, typ: TInt, what: "position", detail: true}, dFlags, aCall, aRet},
		synopsis: "copy HANDLE to HANDLE [at OFFSET] [outat OFFSET] size N"},
	{name: "allocate", operand: []Type{THandle}, opWhat: "a POSIX file handle", args: []argSpec{aAt, aSizeReq, dFlags, aRet},
		synopsis: "allocate HANDLE [at OFFSET] size N"},
	{name: "advise", operand: []Type{THandle}, opWhat: "a POSIX file handle", args: []argSpec{aAt, {key: "size", kind: argExpr, typ: TInt, what: "size"},
		{key: "advice", kind: argExpr, typ: TInt, what: "advice"}, aCall, aRet},
		synopsis: "advise HANDLE [at OFFSET] [size N] [advice A]"},
	{name: "map", operand: []Type{THandle}, opWhat: "a POSIX file handle", args: []argSpec{aAt, aSizeReq,
		{key: "prot", kind: argExpr, typ: TInt, what: "protection"}, aFlags, aRet},
		synopsis: "map HANDLE [at OFFSET] size N [prot P] [flags F]"},
	{name: "unmap", operand: []Type{TString}, opWhat: "a path", args: []argSpec{aAt, aSizeReq, dFlags, aRet},
		synopsis: "unmap PATH [at OFFSET] size N"},
	{name: "msync", operand: []Type{TString}, opWhat: "a path", args: []argSpec{aAt, aSizeReq, dFlags, aRet},
		synopsis: "msync PATH [at OFFSET] size N [flags F]"},
	{name: "readdir", operand: []Type{THandle}, opWhat: "a POSIX file handle", args: []argSpec{aSizeReq, aRet},
		synopsis: "readdir HANDLE size N"},
	{name: "link", operand: []Type{TString, THandle}, opWhat: "a path or a file handle",
		args:     []argSpec{{key: "to", kind: argExpr, typ: TString, required: true, what: "new path"}, dFlags, aCall, aRet},
		synopsis: "link PATH|HANDLE to PATH"},
	{name: "symlink", operand: []Type{TString}, opWhat: "a path",
		args:     []argSpec{{key: "target", kind: argExpr, typ: TString, required: true, what: "target"}, aCall, aRet},
		synopsis: "symlink PATH target TEXT"},
	{name: "readlink", operand: []Type{TString, THandle}, opWhat: "a path or a file handle", args: []argSpec{{key: "size", kind: argExpr, typ: TInt, what: "size"}, aCall, aRet},
		synopsis: "readlink PATH|HANDLE [size N]"},

	// Communicators and the completion of non-blocking calls.
	{name: "split", args: []argSpec{aAs, {key: "color", kind: argExpr, typ: TInt, what: "color"}, {key: "key", kind: argExpr, typ: TInt, what: "key"},
		{key: "id", kind: argExpr, typ: TInt, what: "communicator id", detail: true}, aCall, aRet},
		synopsis: "split as NAME [color C] [key K]"},
	{name: "wait", operand: []Type{TInt}, opWhat: "a number of requests", args: []argSpec{aCall, aRet}, synopsis: "wait N"},

	// Processes and threads.
	{name: "fork", operand: []Type{TInt}, opWhat: "a thread", args: []argSpec{aFlags, aRet}, synopsis: "fork THREAD [flags F]"},
	{name: "clone", operand: []Type{TInt}, opWhat: "a thread", args: []argSpec{aFlags, aRet}, synopsis: "clone THREAD [flags F]"},
	{name: "exec", operand: []Type{TString}, opWhat: "a path", args: []argSpec{dFlags, aRet}, synopsis: "exec PATH"},
	{name: "exit", args: []argSpec{aRet}, synopsis: "exit [ret STATUS]"},
}

// noThread are the commands that make no events: they take no thread.
var noThread = map[string]bool{"sleep": true, "fail": true}

// fdArgs are the commands that take fd N: those that give a descriptor.
var fdArgs = map[string]bool{"open": true, "dup": true}

// commArgs are the commands that take comm NAME.
var commArgs = map[string]bool{"barrier": true, "bcast": true, "reduce": true, "gather": true, "scatter": true, "allreduce": true,
	"allgather": true, "alltoall": true, "send": true, "recv": true, "sendrecv": true, "mpiopen": true, "split": true}

// commElems are the communication commands that take elements N.
var commElems = map[string]bool{"bcast": true, "reduce": true, "gather": true, "scatter": true, "allreduce": true,
	"allgather": true, "alltoall": true, "send": true, "recv": true, "sendrecv": true}

// completeCommands gives the commands of commandList the arguments every
// command of their kind takes. Through commands, at a script's first use:
// not at every program's start.
func completeCommands() {
	for i := range commandList {
		c := &commandList[i]
		if commElems[c.name] {
			c.args = append(c.args, aElemsC)
		}
		if commArgs[c.name] {
			c.args = append(c.args, aComm)
		}
		if fdArgs[c.name] {
			c.args = append(c.args, aFD)
		}
		if (c.name == "read" || c.name == "write") && c.arg("pos") == nil {
			c.args = append(c.args, aPos)
		}
		if !noThread[c.name] {
			c.args = append(c.args, aThread)
		}
	}
	commandList[indexOf("sync")].optOperand = true
}

func indexOf(name string) int {
	for i := range commandList {
		if commandList[i].name == name {
			return i
		}
	}
	panic(name)
}

// callVariants lists, for a call a command makes, the other calls of the
// same kind a trace may record instead; "call NAME" picks one (a converted
// trace says openat where a script would say open). Each makes the same
// event with another Op.
var callVariants = map[trace.Op][]trace.Op{
	trace.OpOpen:           {trace.OpOpenat, trace.OpOpenat2, trace.OpCreat, trace.OpFopen},
	trace.OpClose:          {trace.OpFclose},
	trace.OpDup:            {trace.OpDup2, trace.OpDup3, trace.OpFcntl},
	trace.OpRead:           {trace.OpFread},
	trace.OpWrite:          {trace.OpFwrite},
	trace.OpPreadv:         {trace.OpPreadv2},
	trace.OpPwritev:        {trace.OpPwritev2},
	trace.OpLseek:          {trace.OpFseek},
	trace.OpFsync:          {trace.OpFflush, trace.OpSyncfs},
	trace.OpFadvise:        {trace.OpReadahead},
	trace.OpStat:           {trace.OpLstat, trace.OpFstatat, trace.OpStatx},
	trace.OpFstat:          {trace.OpFstatat, trace.OpStatx}, // glibc's fstat is fstatat(fd, "", AT_EMPTY_PATH)
	trace.OpUnlink:         {trace.OpUnlinkat, trace.OpMPIFileDelete},
	trace.OpRename:         {trace.OpRenameat, trace.OpRenameat2},
	trace.OpLink:           {trace.OpLinkat},
	trace.OpSymlink:        {trace.OpSymlinkat},
	trace.OpReadlink:       {trace.OpReadlinkat},
	trace.OpCopyFileRange:  {trace.OpSendfile, trace.OpSplice},
	trace.OpMkdir:          {trace.OpMkdirat},
	trace.OpMPIFileReadAt:  {trace.OpMPIFileIreadAt},
	trace.OpMPIFileWriteAt: {trace.OpMPIFileIwriteAt},
	trace.OpMPIFileRead:    {trace.OpMPIFileIread},
	trace.OpMPIFileWrite:   {trace.OpMPIFileIwrite},
	trace.OpMPIFileSetSize: {trace.OpMPIFilePreallocate},
	trace.OpMPIGather:      {trace.OpMPIGatherv},
	trace.OpMPIScatter:     {trace.OpMPIScatterv},
	trace.OpMPIAllgather:   {trace.OpMPIAllgatherv},
	trace.OpMPIAlltoall:    {trace.OpMPIAlltoallv},
	trace.OpMPISend:        {trace.OpMPIIsend},
	trace.OpMPIRecv:        {trace.OpMPIIrecv},
	trace.OpMPICommSplit:   {trace.OpMPICommDup},
	trace.OpMPIWait:        {trace.OpMPIWaitall},
}

// CallVariants returns the calls "call NAME" may name instead of op.
func CallVariants(op trace.Op) []trace.Op { return callVariants[op] }

// DefaultCall returns the call a command makes when "call NAME" makes
// op: op itself, or the call op is a variant of (MPI_Gather for
// MPI_Gatherv). A call that is a variant of several (fstatat: stat of a
// path or of a handle) is its own default.
func DefaultCall(op trace.Op) trace.Op {
	def := op
	n := 0
	for d, vs := range callVariants {
		for _, v := range vs {
			if v == op {
				def = d
				n++
			}
		}
	}
	if n != 1 {
		return op
	}
	return def
}

// CommID is the id the preload capture gives the communicator whose
// members (world ranks) a communicator made from parent after seq others
// has: the id a script's split gives it (see comm.go).
func CommID(parent, seq uint32, members []int) uint32 { return commID(parent, seq, members) }

// MPIUndefined is MPI_UNDEFINED, the color of a split that makes no
// communicator.
const MPIUndefined = mpiUndefined

// commands finds a command's spec by its name; its first call completes
// commandList. (Built at the first use rather than at the start of every
// program that links this package, as ioreplay does: this package's start
// was 0.13 ms, 138 allocations and 28 page faults of each.)
var commands = sync.OnceValue(func() map[string]*cmdSpec {
	completeCommands()
	m := map[string]*cmdSpec{}
	for i := range commandList {
		m[commandList[i].name] = &commandList[i]
	}
	return m
})

func (c *cmdSpec) arg(key string) *argSpec {
	for i := range c.args {
		if c.args[i].key == key {
			return &c.args[i]
		}
	}
	return nil
}

// keys lists the command's arguments, without the call details.
func (c *cmdSpec) keys() []string {
	var ks []string
	for _, a := range c.args {
		if !a.detail {
			ks = append(ks, a.key)
		}
	}
	return ks
}

// keywords are reserved words: they cannot name variables.
var keywords = map[string]bool{
	"param": true, "group": true, "let": true, "if": true, "else": true, "repeat": true,
	"for": true, "as": true, "on": true, "time": true,
}

// reserved reports whether name is a keyword or a command.
func reserved(name string) bool { return keywords[name] || commands()[name] != nil }

// suggest returns the known word closest to w (edit distance at most 2),
// or "".
func suggest(w string, words []string) string {
	best, bestD := "", 3
	sort.Strings(words)
	for _, c := range words {
		if d := editDistance(w, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	if len(a) > 32 || len(b) > 32 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func commandNames() []string {
	commands() // commandList complete
	var ns []string
	for _, c := range commandList {
		ns = append(ns, c.name)
	}
	return ns
}

// Reserved reports whether name cannot name a variable or handle: a
// keyword, a command, or a predeclared value (rank, O_CREAT, ENOENT …).
func Reserved(name string) bool {
	if reserved(name) {
		return true
	}
	if _, ok := constants()[name]; ok {
		return true
	}
	switch name {
	case "rank", "nranks", "grank", "gsize", "true", "false", "min", "max", "abs", "pad", "xor", "size", "first":
		return true
	}
	return false
}

// ArgKeys lists the keyword arguments of every command. A name that is
// one of them cannot be a command's operand without parentheses.
func ArgKeys() []string {
	commands() // commandList complete
	seen := map[string]bool{}
	var out []string
	for _, c := range commandList {
		for _, a := range c.args {
			if !seen[a.key] {
				seen[a.key] = true
				out = append(out, a.key)
			}
		}
	}
	sort.Strings(out)
	return out
}
