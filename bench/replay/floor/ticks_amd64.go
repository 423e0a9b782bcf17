package main

// ticks reads the time-stamp counter (ticks_amd64.s), as ioreplay's
// engine does where the counter is trustworthy.
func ticks() int64
