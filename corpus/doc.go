// Package corpus is the corpus of real programs iotrace is judged on: its
// test (corpus_test.go) records tar, gzip, sqlite3, git, cp, sort, rsync,
// dd, make, python3, dash, fio, h5py and PnetCDF under mpirun, and a
// threaded C program, in both capture modes, and checks each recording
// with four oracles — the capture against strace, the replay's end state,
// the replay's own trace, the round trip through a pattern script. The
// table of results is docs/CORPUS.md, written by corpus/run.sh.
package corpus
