package replay

const haveTSC = true

// rdtsc returns the processor's time-stamp counter (clock_amd64.s).
func rdtsc() int64
