package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/iotrace/iotrace/internal/mpitest"
	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/format"
)

// recMPIProgC is an MPI program doing POSIX I/O of its own: each rank
// writes 3 × 4096 bytes to out-RANK at offsets 8192, 0 and 4096
// (pwrite, pwrite, then lseek + write), fsyncs, closes, and after a
// barrier rank 0 reads every rank's file back with one read of 16 KiB
// each (12288 bytes returned).
const recMPIProgC = `
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	static char buf[16384];
	memset(buf, 'a' + rank, sizeof buf);
	char name[64];
	snprintf(name, sizeof name, "out-%d", rank);
	int fd = open(name, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (fd < 0 || pwrite(fd, buf, 4096, 8192) != 4096 || pwrite(fd, buf, 4096, 0) != 4096 ||
	    lseek(fd, 4096, SEEK_SET) != 4096 || write(fd, buf, 4096) != 4096 || fsync(fd) != 0 || close(fd) != 0) {
		perror(name);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0) {
		for (int r = 0; r < size; r++) {
			snprintf(name, sizeof name, "out-%d", r);
			fd = open(name, O_RDONLY);
			if (fd < 0 || read(fd, buf, sizeof buf) != 12288 || close(fd) != 0) {
				perror(name);
				MPI_Abort(MPI_COMM_WORLD, 1);
			}
		}
	}
	MPI_Finalize();
	return 0;
}
`

// TestRecordUnderMpirun: "mpirun -np 4 iotrace record -o run.iot -- ./app"
// with the ptrace recorder, as the issue writes it. Each rank writes its
// own rank-NNNNN.iot without coordination, with the rank the launcher
// gave it (the one MPI_Comm_rank returns: the files the rank wrote are
// its own), and the directory reads back as one trace holding exactly the
// calls the program made on its files, with their offsets.
func TestRecordUnderMpirun(t *testing.T) {
	recSkipUnsupported(t)
	mpitest.Need(t)
	// The recorder resolves paths through symbolic links (a kernel cwd).
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "app.c")
	if err := os.WriteFile(src, []byte(recMPIProgC), 0o644); err != nil {
		t.Fatal(err)
	}
	mpitest.CC(t, dir, "app", src)
	out := filepath.Join(dir, "run.iot")
	// --include: only the program's own files, not what Open MPI opens.
	mpitest.MustRun(t, dir, 2*time.Minute, 4, nil, iotraceBin, "record", "--include", dir, "-o", out, "--", "./app")
	for r := 0; r < 4; r++ {
		if _, err := os.Stat(filepath.Join(out, fmt.Sprintf("rank-%05d.iot", r))); err != nil {
			t.Errorf("rank %d wrote no file of its own: %v", r, err)
		}
	}
	got, evs := tallies(t, out)
	for r := 0; r < 4; r++ {
		// The calls are compared; of the process events (Open MPI's
		// threads and their exits), the main thread's exit.
		mainExit := 0
		for _, e := range evs {
			if e.Rank == uint32(r) && e.Op == trace.OpExit && e.Thread == 0 && e.Ret == 0 {
				mainExit++
			}
		}
		if mainExit != 1 {
			t.Errorf("rank %d: %d exits of the main thread with status 0, want 1", r, mainExit)
		}
		for op := range got[uint32(r)] {
			if op.Class() == trace.ClassProcess {
				delete(got[uint32(r)], op)
			}
		}
		want := map[trace.Op]tally{
			// glibc's open() is the openat system call.
			trace.OpOpenat: {1, 0}, trace.OpPwrite: {2, 2 * 4096}, trace.OpLseek: {1, 0},
			trace.OpWrite: {1, 4096}, trace.OpFsync: {1, 0}, trace.OpClose: {1, 0},
		}
		if r == 0 {
			want[trace.OpOpenat] = tally{5, 0}
			want[trace.OpClose] = tally{5, 0}
			want[trace.OpRead] = tally{4, 4 * 12288}
		}
		if fmt.Sprint(got[uint32(r)]) != fmt.Sprint(want) {
			t.Errorf("rank %d: %v; want %v", r, got[uint32(r)], want)
		}
	}
	// The offsets of each rank's writes, in its own file.
	rd, err := format.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	offs := map[uint32][]int64{}
	for _, e := range evs {
		if e.Op == trace.OpWrite || e.Op == trace.OpPwrite {
			if p := rd.Path(e.Path); p != filepath.Join(dir, fmt.Sprintf("out-%d", e.Rank)) {
				t.Errorf("rank %d wrote %s", e.Rank, p)
			}
			offs[e.Rank] = append(offs[e.Rank], e.Offset)
		}
	}
	for r := uint32(0); r < 4; r++ {
		if fmt.Sprint(offs[r]) != "[8192 0 4096]" {
			t.Errorf("rank %d: writes at %v; want [8192 0 4096]", r, offs[r])
		}
	}
}
