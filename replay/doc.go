// Package replay runs a trace again: every rank of the trace becomes a
// goroutine that issues the rank's calls through a backend (replay/posix),
// in one of three timing modes, while the communication layer
// (replay/comm) keeps the order between ranks that barriers, collectives
// and messages imposed in the traced run.
//
// The pipeline is
//
//	trace → transforms → plan → prepare → per-rank runners → backend
//	                                             └→ recorder (the replay's own trace)
//
// Transforms (rank subset, op filter, file layout, size scaling,
// alignment, Isaila-style request splitting) are Sources that wrap the
// rank streams. The plan reads the transformed trace once: it maps every
// path into the target directory (trace/target), finds the files the trace
// reads but does not create (they are prepared with the size it needs),
// learns which ranks use which communicator, and counts the calls. A
// runner then issues each call at the time its timing mode says, measures
// its issue lag, and records the call with measured times, so that the
// replay is itself a trace for report.Compute and report.Compare.
//
// docs/REPLAY.md describes timing, dependencies, transforms and the
// safety rules.
package replay
