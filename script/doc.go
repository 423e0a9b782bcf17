// Package script is iotrace's pattern-script language: the shareable,
// readable form of an I/O workload, in the spirit of Parabench's PPL. A
// script (*.iop) says what every rank of a parallel run does — POSIX and
// MPI-IO calls, communication, think time — with loops, conditions on the
// rank, process groups, labelled regions, parameters the command line can
// override, and time-driven loops as b_eff_io measures with. The language
// is specified, with its grammar and what every statement expands to, in
// docs/SCRIPT.md. A taste:
//
//	param T = 10s
//	param chunk = 1MiB
//	group writers = nranks / 2
//	group readers
//
//	on writers {
//	    open "out.$grank" as f flags O_WRONLY | O_CREAT
//	    time "write" {
//	        repeat for T as i {
//	            write f at i * chunk size chunk
//	        }
//	    }
//	    close f
//	}
//	barrier
//
// # Pipeline
//
// Parse turns text into a *File (syntax tree; Format prints it back in
// canonical form, comments kept). Check resolves names and types and
// returns a *Program; Compile and Load do both. Every problem is an *Error
// reading "file:line:col: message"; passes return them as an ErrorList.
//
// Program.Instantiate binds a program to a Config — number of ranks,
// parameter and group overrides, nominal duration Model — and returns an
// *Instance: parameters evaluated, groups laid out (Instance.Groups,
// Instance.CommRanks give their ranks and communicator ids).
//
// Expand (or Instance.Expand) returns an *Expansion, a trace.Trace whose
// per-rank streams are made on demand by an interpreter: nothing is
// expanded up front, and a stream holds only the state of the loops its
// rank is in, so a loop of a billion iterations streams in constant memory.
// Events carry nominal times from the Model; a stream runs the other ranks
// of its communicators alongside, just far enough to time collective calls
// (everyone leaves at the latest arrival plus the call's duration) and to
// decide time-driven loops the same way on every rank.
//
// # Running a script rather than expanding it
//
// A replay runs a script: the decisions a script leaves to run time — when
// to leave a time-driven loop ("repeat for 10s") — are made by the replay,
// with real clocks, not by the nominal model. The pieces:
//
//   - Instance.NewInterp(rank, paths) returns an *Interp, one rank's
//     interpreter, an iterator driven by Step. Step returns StepEvent with
//     the rank's next call; StepSync with a collective call, after which
//     the caller calls Settle(end) with the time the call ended (a replay:
//     when the real call returned); StepDecide at the check before each
//     iteration of a time-driven loop (Check describes it: position,
//     duration, iteration, communicator), after which the caller calls
//     Decide(run another iteration?); and StepDone at the end. Every rank of
//     the loop's communicator must get the same decisions — b_eff_io's way
//     is that the group's first rank measures and broadcasts.
//   - Decider is that decision as an interface, Continue(LoopCheck), with
//     NominalDecider (the rank's own nominal clock) as the default.
//     Instance.Source(rank, paths, decider) wraps an Interp into a
//     trace.Source that asks the Decider at each check and settles
//     collective calls at their nominal durations: one goroutine per rank,
//     each with a Decider that agrees with the others, runs a script.
//
// Events of an interpreter use the same numbering as an expansion: POSIX
// descriptors from 3 (lowest free first), MPI file handles from 1,
// communicator 0 for all ranks, 1 for MPI_COMM_SELF and 2, 3, … for the
// groups in declaration order; peers and roots of calls inside an "on"
// block are ranks of the group, as MPI numbers them in a communicator.
package script
