//go:build !amd64

package main

import "time"

var base = time.Now()

// ticks reads the monotonic clock, as ioreplay's engine does without a
// time-stamp counter.
func ticks() int64 { return int64(time.Since(base)) }
