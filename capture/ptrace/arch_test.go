//go:build linux && (amd64 || arm64)

package ptrace

import (
	"os"
	"os/exec"
	"runtime"
	"testing"
)

// TestOtherArchCompiles type-checks this package for the other supported
// architecture (arm64 on amd64, amd64 on arm64), whose register mapping
// and system call table no test here can run: a change to the shared code
// that breaks it fails here, not on the first arm64 cluster.
func TestOtherArchCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the cross-architecture vet compiles the standard library for it")
	}
	t.Parallel()
	goTool := needTool(t, "go")
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH]
	cmd := exec.Command(goTool, "vet", ".")
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+other, "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("GOARCH=%s go vet: %v\n%s", other, err, out)
	}
}
