// Package hostile holds the end-to-end test of iotrace and ioreplay
// against hostile and careless inputs: scripts, traces, logs and flags
// made to crash, hang or exhaust a command. Each is fed to the built
// binaries under a memory limit (ulimit -d) and a time limit, and must
// give one clear error line — or the right output — and never a Go stack
// trace. The inputs are made by the test, from a few lines each; the
// table in hostile_test.go says which item of the resource policy
// (docs/REPLAY.md, docs/FORMAT.md) each one holds to.
package hostile
