//go:build linux && (amd64 || arm64)

package ptrace

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// The tracer starts its helper by running the executable that contains
// the tracer (Config.Helper, /proc/self/exe by default) with helperEnv set
// to helperVersion and argv [helper, PATH, ARGV0, ARGS…]. The helper says
// it runs (helperReady) on the socket at descriptor helperFD and waits
// there until the tracer has attached (helperGo); then it installs the
// seccomp filter on itself and execs PATH. Go's os/exec cannot run code
// between fork and exec, hence the detour.
const (
	helperEnv     = "IOTRACE_PTRACE_HELPER"
	helperVersion = "1"
	helperFD      = 3
	helperReady   = 'r'
	helperGo      = 'g'
)

// HelperMain turns the process into the tracer's helper when the tracer
// started it, and returns at once otherwise. When it applies it never
// returns: it execs the traced program, or exits with status 127 (program
// not found, tracer gone) or 126 (program not executable).
//
// Every program that calls Run must call HelperMain first thing, from an
// init function of package main or of a test (init runs on the main
// thread, which the helper needs): the tracer runs that same executable
// as its helper.
func HelperMain() {
	switch os.Getenv(helperEnv) {
	case helperVersion:
		os.Exit(runHelper())
	case helperCalibrate:
		os.Exit(runCalibration())
	}
}

func runHelper() int {
	os.Unsetenv(helperEnv)
	runtime.LockOSThread()
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "iotrace: "+format+"\n", args...)
		return code
	}
	if unix.Gettid() != unix.Getpid() {
		return fail(127, "internal error: the tracer's helper must run on the main thread (call ptrace.HelperMain from an init function)")
	}
	if len(os.Args) < 3 {
		return fail(127, "internal error: the tracer's helper needs a program to run")
	}
	var b [1]byte
	b[0] = helperReady
	if _, err := unix.Write(helperFD, b[:]); err != nil {
		return fail(127, "the tracer is gone; not running %s", os.Args[2])
	}
	for {
		n, err := unix.Read(helperFD, b[:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if n != 1 || b[0] != helperGo {
			return fail(127, "the tracer did not attach; not running %s", os.Args[2])
		}
		break
	}
	unix.Close(helperFD)
	// The tracer set a parent-death signal for the time before it attached;
	// from now on PTRACE_O_EXITKILL does that job, and the program should
	// find its process as a plain exec would leave it.
	unix.Prctl(unix.PR_SET_PDEATHSIG, 0, 0, 0, 0)
	prog, err := buildFilter(archCalls)
	if err != nil {
		return fail(127, "%v", err)
	}
	if err := installFilter(prog); err != nil {
		return fail(127, "%v", err)
	}
	path, argv := os.Args[1], os.Args[2:]
	err = unix.Exec(path, argv, os.Environ())
	code := 126
	if errors.Is(err, unix.ENOENT) {
		code = 127
	}
	return fail(code, "%s: %v", argv[0], err)
}
