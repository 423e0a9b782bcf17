//go:build !mpi

package mpi

import (
	"testing"

	"github.com/iotrace/iotrace/internal/mpitest"
)

// TestMain removes the test binary TestUnderMPIRun builds, once every
// test has run (the binary built with the tag mpi, which TestUnderMPIRun
// runs under mpirun, has its own TestMain: world_test.go).
func TestMain(m *testing.M) { mpitest.Main(m) }
