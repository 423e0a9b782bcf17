package replay

import "github.com/iotrace/iotrace/internal/memlimit"

// bounded is an Executor whose calls wait for one of the slots of sem,
// shared by the ranks of the process: a rank in a blocking system call
// holds an OS thread, and a process of thousands of ranks would make
// more threads than its limits allow (memlimit.Threads).
//
// Only a backend without an MPI library is bounded: an MPI-IO collective
// waits in Do for the other ranks, which could be waiting for a slot.
type bounded struct {
	Executor
	sem chan struct{}
}

func (b bounded) Do(c *Call) (int64, Skip) {
	b.sem <- struct{}{}
	ret, skip := b.Executor.Do(c)
	<-b.sem
	return ret, skip
}

// ErrorDetail forwards the executor's, if it has them.
func (b bounded) ErrorDetail() string {
	if d, ok := b.Executor.(ErrorDetailer); ok {
		return d.ErrorDetail()
	}
	return ""
}

// threadBudget is memlimit.Threads; tests set their own.
var threadBudget = memlimit.Threads
