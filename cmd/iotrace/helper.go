package main

import "github.com/iotrace/iotrace/capture/ptrace"

// iotrace record runs this same binary as a tiny helper that installs the
// seccomp filter and execs the program (Go cannot run code between fork
// and exec). The helper is recognised here, before anything else of the
// command runs; HelperMain returns at once in every other case.
func init() { ptrace.HelperMain() }
