//go:build mpi

package mpi

/*
#cgo linux,amd64 CFLAGS: -I/usr/lib/x86_64-linux-gnu/openmpi/include
#cgo linux,arm64 CFLAGS: -I/usr/lib/aarch64-linux-gnu/openmpi/include
#cgo LDFLAGS: -lmpi
#include "cmpi.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"unsafe"
)

// Available reports whether this build has MPI (the build tag mpi).
const Available = true

var initOnce struct {
	sync.Once
	err error
}

// Init initialises MPI for threads (MPI_THREAD_MULTIPLE: every trace rank
// is a goroutine, and I/O and communication run at once). It may be
// called more than once.
func Init() error {
	initOnce.Do(func() {
		var provided C.int
		if rc := C.init_thread(&provided); rc != C.MPI_SUCCESS {
			initOnce.err = fmt.Errorf("MPI_Init_thread: %s", errorString(rc))
			return
		}
		if provided < C.thread_multiple() {
			initOnce.err = fmt.Errorf("the MPI library gives thread level %d, not MPI_THREAD_MULTIPLE (%d), which a replay needs: its trace ranks are threads", int(provided), int(C.thread_multiple()))
			return
		}
		C.errors_return(C.comm_world())
		C.errors_return(C.comm_self())
	})
	return initOnce.err
}

// Finalize ends MPI.
func Finalize() error {
	if C.is_init() == 0 || C.is_final() != 0 {
		return nil
	}
	if rc := C.MPI_Finalize(); rc != C.MPI_SUCCESS {
		return fmt.Errorf("MPI_Finalize: %s", errorString(rc))
	}
	return nil
}

// Abort ends every process of the job with code.
func Abort(code int) {
	if C.is_init() != 0 && C.is_final() == 0 {
		C.MPI_Abort(C.comm_world(), C.int(code))
	}
	os.Exit(code)
}

// WorldRank and WorldSize are this process's rank and the number of
// processes.
func WorldRank() int {
	var r C.int
	C.MPI_Comm_rank(C.comm_world(), &r)
	return int(r)
}

func WorldSize() int {
	var s C.int
	C.MPI_Comm_size(C.comm_world(), &s)
	return int(s)
}

func errorString(rc C.int) string {
	buf := (*C.char)(C.malloc(512))
	defer C.free(unsafe.Pointer(buf))
	C.error_string(rc, buf, 512)
	s := C.GoString(buf)
	if s == "" {
		s = fmt.Sprintf("MPI error %d", int(rc))
	}
	return s
}

// mpiErr turns an MPI return code into an error naming the call.
func mpiErr(call string, rc C.int) error {
	if rc == C.MPI_SUCCESS {
		return nil
	}
	return fmt.Errorf("%s: %s", call, errorString(rc))
}

// unitBytes is the unit of transfers whose byte count does not fit an
// MPI count (an int): 1 MiB.
const unitBytes = 1 << 20

// counted returns the MPI count of n bytes, and whether it counts units
// of unitBytes (rounded up) instead of bytes.
func counted(n int64) (C.int, C.int) {
	if n <= math.MaxInt32 {
		return C.int(n), 0
	}
	u := (n + unitBytes - 1) / unitBytes
	return C.int(min(u, math.MaxInt32)), 1
}

// cbuf is memory MPI may keep using after a call returns (the buffers of
// non-blocking calls): C memory, zeroed, which Go's collector does not
// move or free.
type cbuf struct {
	p unsafe.Pointer
	n int64
}

func newCbuf(n int64) cbuf {
	n = max(n, 8)
	p := C.calloc(C.size_t(n), 1)
	if p == nil {
		panic(fmt.Sprintf("out of memory for a buffer of %d bytes", n))
	}
	return cbuf{p: p, n: n}
}

func (b *cbuf) free() {
	if b.p != nil {
		C.free(b.p)
		b.p, b.n = nil, 0
	}
}

// errNoMPI is returned where a call needs a communicator this process
// does not take part in.
var errNoMPI = errors.New("no MPI communicator")
