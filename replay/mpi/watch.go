//go:build mpi

package mpi

/*
#include "cmpi.h"
*/
import "C"

import (
	"fmt"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"
)

// watch notices a process of the job that stops answering: its node
// lost, its link cut, the process frozen. MPI has no such notice of its
// own (Open MPI's TCP transport waits for a peer whose link is down as
// long as TCP does: minutes), and its launcher notices a lost node only
// through its own keepalive (docs/MPI.md, "When a node is lost").
//
// From NewTeam to Close, every process sends process 0 a heartbeat every
// interval, and process 0 sends one to every process, on a communicator
// of their own (a duplicate of MPI_COMM_WORLD, its errors returned), from
// a goroutine of its own, so that a process busy in a long file call or in
// a blocking MPI call of the setup still answers. Process 0 watches every
// process; the others watch process 0. A process that hears nothing from
// one it watches for the timeout calls lost with an error naming it;
// process 0 then tells every process still answering to stop too (stop
// message, its error), and they call lost with its words. A process that
// closes says goodbye first, so that the others stop watching it.
type watch struct {
	comm       C.MPI_Comm
	rank, size int
	timeout    time.Duration
	every      time.Duration
	// describe names processes in an error: their hosts, their ranks.
	describe func(procs []int) string
	// lost is called once, from the watch's goroutine, with what was
	// lost; told says process 0 said so (this process heard everyone it
	// watches).
	lost func(err error, told bool)
	// mute stops the heartbeats: a test's process that stops answering.
	mute atomic.Bool

	quit, done chan struct{}
}

// Messages of the watch: their tag is their kind; a stop message carries
// the error as text.
const (
	watchBeat = 1
	watchBye  = 2
	watchStop = 3
	watchMsg  = 256 // bytes of a message buffer
)

// heartbeat returns the interval of the heartbeats for a timeout: a fifth
// of it, between 10 ms and 5 s.
func heartbeat(timeout time.Duration) time.Duration {
	return min(max(timeout/5, 10*time.Millisecond), 5*time.Second)
}

// newWatch makes the watch's communicator (collective over
// MPI_COMM_WORLD) and starts watching.
func newWatch(p *Proc, timeout time.Duration, describe func([]int) string, lost func(error, bool)) (*watch, error) {
	w := &watch{rank: p.Rank, size: p.Size, timeout: timeout, every: heartbeat(timeout), describe: describe, lost: lost,
		quit: make(chan struct{}), done: make(chan struct{})}
	if rc := C.MPI_Comm_dup(C.comm_world(), &w.comm); rc != C.MPI_SUCCESS {
		return nil, mpiErr("MPI_Comm_dup", rc)
	}
	C.errors_return(w.comm)
	go w.run()
	return w, nil
}

// close says goodbye to the processes this one watches or is watched by,
// and stops the watch. Call it before MPI_Finalize.
func (w *watch) close() {
	select {
	case <-w.quit:
	default:
		close(w.quit)
	}
	<-w.done
}

// peers returns the processes this one exchanges heartbeats with.
func (w *watch) peers() []int {
	if w.rank != 0 {
		return []int{0}
	}
	ps := make([]int, 0, w.size-1)
	for q := 1; q < w.size; q++ {
		ps = append(ps, q)
	}
	return ps
}

func (w *watch) run() {
	defer close(w.done)
	if w.size < 2 {
		<-w.quit
		return
	}
	peers := w.peers()
	start := time.Now()
	last := map[int]time.Time{} // the watched processes still there: when last heard
	for _, q := range peers {
		last[q] = start
	}
	// C memory: the buffers MPI reads and writes after the calls return.
	mem := C.calloc(C.size_t(3*watchMsg), 1)
	inBuf, beatBuf, stopBuf := mem, unsafe.Add(mem, watchMsg), unsafe.Add(mem, 2*watchMsg)
	reqs := unsafe.Slice((*C.MPI_Request)(C.calloc(C.size_t(w.size+1), C.size_t(unsafe.Sizeof(C.MPI_Request(nil))))), w.size+1)
	for i := range reqs {
		reqs[i] = C.req_null()
	}
	recv := &reqs[w.size] // the posted receive; reqs[q] the send to q
	src := C.int(-1)
	if w.rank != 0 {
		src = 0
	}
	post := func() { C.irecv_any(inBuf, watchMsg, src, w.comm, recv) }
	post()
	send := func(q int, kind C.int, buf unsafe.Pointer, n C.int) {
		if reqs[q] != C.req_null() {
			var done C.int
			C.test(&reqs[q], &done)
			if done == 0 {
				return // the last one is still on its way: no pile-up for a peer that does not answer
			}
		}
		C.isend_bytes(buf, n, C.int(q), kind, w.comm, &reqs[q])
	}
	var stopLen C.int
	stopped := false
	poll := min(w.every/4, 50*time.Millisecond)
	tick := time.NewTicker(poll)
	defer tick.Stop()
	nextBeat := start
	for {
		select {
		case <-w.quit:
			if w.bye(peers, last, reqs, recv) {
				// Every message left: MPI no longer reads the buffers.
				C.free(mem)
			}
			C.free(unsafe.Pointer(&reqs[0]))
			return
		case <-tick.C:
		}
		now := time.Now()
		for {
			var done, from, tag C.int
			if rc := C.test_from(recv, &done, &from, &tag); rc != C.MPI_SUCCESS || done == 0 {
				break
			}
			q := int(from)
			switch tag {
			case watchBeat:
				if _, ok := last[q]; ok {
					last[q] = now
				}
			case watchBye:
				delete(last, q)
			case watchStop:
				if !stopped {
					stopped = true
					msg := C.GoString((*C.char)(inBuf))
					w.lost(fmt.Errorf("process 0: %s", msg), true)
				}
			}
			post()
		}
		if !now.Before(nextBeat) && !w.mute.Load() {
			for q := range last {
				send(q, watchBeat, beatBuf, 8)
			}
			nextBeat = now.Add(w.every)
		}
		if stopped {
			continue
		}
		var silent []int
		for q, t := range last {
			if now.Sub(t) > w.timeout {
				silent = append(silent, q)
			}
		}
		if len(silent) == 0 {
			continue
		}
		// Name, with the first, those silent for half the timeout (their
		// heartbeats come every fifth): processes of a node lost at once
		// fall silent a heartbeat apart.
		for q, t := range last {
			if d := now.Sub(t); d > w.timeout/2 && d <= w.timeout {
				silent = append(silent, q)
			}
		}
		stopped = true
		slices.Sort(silent)
		err := fmt.Errorf("%s %s not answered for %v (--peer-timeout)", w.describe(silent), plural(len(silent), "has", "have"), w.timeout.Round(time.Millisecond))
		if w.rank == 0 {
			// Tell the others, so that they stop now rather than once
			// they miss process 0's heartbeats.
			text := []byte(err.Error())
			text = text[:min(len(text), watchMsg-1)]
			C.memcpy(stopBuf, unsafe.Pointer(&text[0]), C.size_t(len(text)))
			stopLen = C.int(len(text) + 1)
			for q := range last {
				if !slices.Contains(silent, q) {
					send(q, watchStop, stopBuf, stopLen)
				}
			}
		}
		for _, q := range silent {
			delete(last, q)
		}
		w.lost(err, false)
	}
}

// bye tells the processes still watched that this one goes, waits a
// moment for its messages to leave, and ends the watch's MPI calls. It
// reports whether every message left (a peer that does not answer may
// keep one: its buffer must then stay).
func (w *watch) bye(peers []int, last map[int]time.Time, reqs []C.MPI_Request, recv *C.MPI_Request) bool {
	bye := C.calloc(8, 1)
	left := true
	for q := range last {
		if reqs[q] != C.req_null() {
			var done C.int
			if C.test(&reqs[q], &done); done == 0 {
				left = false // a heartbeat still on its way
				C.forget(&reqs[q])
			}
		}
		C.isend_bytes(bye, 8, C.int(q), watchBye, w.comm, &reqs[q])
	}
	deadline := time.Now().Add(time.Second)
	for _, q := range peers {
		for reqs[q] != C.req_null() && time.Now().Before(deadline) {
			var done C.int
			C.test(&reqs[q], &done)
			if done == 0 {
				time.Sleep(time.Millisecond)
			}
		}
		if reqs[q] != C.req_null() {
			left = false
			C.forget(&reqs[q])
		}
	}
	C.cancel_recv(recv)
	if left {
		C.free(bye)
	}
	return left
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
