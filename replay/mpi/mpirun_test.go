package mpi

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/internal/mpitest"
)

// TestUnderMPIRun runs this package's MPI tests (build tag mpi) under
// mpirun with 4 processes, ten trace ranks spread over them.
func TestUnderMPIRun(t *testing.T) {
	if os.Getenv("IOTRACE_MPI_CHILD") != "" {
		t.Skip("already under mpirun")
	}
	bin := mpitest.BuildGo(t, "./replay/mpi", true)
	for _, np := range []int{4, 3} {
		r := mpitest.MustRun(t, t.TempDir(), 2*time.Minute, np, []string{"IOTRACE_MPI_CHILD=1"}, bin, "-test.run", "TestWorld", "-test.v")
		if n := strings.Count(r.Stdout, "--- PASS: TestWorld"); n != 6*np {
			t.Errorf("%d processes: %d passes, want %d\n%s", np, n, 6*np, r.Stdout)
		}
	}
}
