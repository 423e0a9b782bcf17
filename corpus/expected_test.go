package corpus

// expected are the cells that fail today, keyed case/mode/oracle, with the
// reason seen and, where it is known, the cause. TestCorpus fails when a
// cell fails that is not here (a regression) and when a cell here passes
// (iotrace got better: delete the line). docs/CORPUS.md shows the reasons
// of the last run.
var expected = map[string]string{
	// Open MPI's ompio makes non-blocking MPI-IO (MPI_File_iwrite_at)
	// through POSIX AIO: glibc's AIO threads make the pwrites inside libc,
	// which the shim cannot see (it notes that the program used POSIX AIO,
	// and iotrace record says so). The MPI_File_iwrite_at calls are
	// recorded and replayed; ptrace sees the pwrites.
	"mpi4py-nonblocking/preload/a": "POSIX AIO: glibc's threads make the pwrites of MPI_File_iwrite_at inside libc, unseen by the shim (record says so)",
}

// flaky are cells whose verdict changes from run to run for a reason
// outside the harness, named here; the test accepts either verdict, and
// docs/CORPUS.md marks them. Keep this list short: a cell belongs here
// only when the program or iotrace races, never to hide a failure.
var flaky = map[string]string{}
