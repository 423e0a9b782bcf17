// Package hist counts durations in a histogram of bounded size whose
// percentiles are within 0.4 % of the true values: the latencies of a
// report, the issue lag of a replay.
package hist

import (
	"math"
	"math/bits"
)

// Hist counts non-negative durations (ns) in log-linear buckets, in the
// manner of HDR histograms: exact below 256, then 128 buckets per power of
// two, so a percentile read from it is within 0.4 % of the true value
// (half a bucket: a bucket is at most 1/128 of its lower bound wide). It
// holds at most 7,296 counters whatever the number of values, so the
// percentiles of 50 million calls cost no memory per call. The zero Hist
// is empty and ready to use.
type Hist struct {
	// counts[i] counts bucket off+i: only the buckets from the smallest
	// value's to the largest's (with some slack) are held, so that a
	// histogram of one value, or of values close together, is a few
	// counters (a replay keeps one per rank and op: a barrier's lag of a
	// second made every rank's 30 KiB).
	counts []uint64
	off    int
	n      uint64
	max    int64
	min    int64
}

const subBits = 7 // 128 sub-buckets per power of two

// maxBuckets is the number of buckets up to that of math.MaxInt64.
const maxBuckets = 256 + 54<<subBits + 1<<subBits

func bucketOf(v int64) int {
	if v < 256 {
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - (subBits + 1)
	return 256 + (shift-1)<<subBits + int(uint64(v)>>shift) - 1<<subBits
}

// bucketMid is the middle value of bucket i.
func bucketMid(i int) int64 {
	if i < 256 {
		return int64(i)
	}
	i -= 256
	shift := i>>subBits + 1
	lo := int64(i&(1<<subBits-1)+1<<subBits) << shift
	return lo + (int64(1)<<shift)/2
}

// Add records v (negative values count as 0).
func (h *Hist) Add(v int64) {
	if v < 0 {
		v = 0
	}
	b := bucketOf(v)
	h.cover(b, b+1)
	h.counts[b-h.off]++
	if h.n == 0 || v > h.max {
		h.max = v
	}
	if h.n == 0 || v < h.min {
		h.min = v
	}
	h.n++
}

// cover makes counts hold the buckets lo to hi−1, with a quarter of slack
// on the side it grows.
func (h *Hist) cover(lo, hi int) {
	if len(h.counts) == 0 {
		h.counts, h.off = make([]uint64, hi-lo), lo
		return
	}
	end := h.off + len(h.counts)
	if lo >= h.off && hi <= end {
		return
	}
	nlo, nhi := h.off, end
	if lo < nlo {
		nlo = max(lo-(end-lo)/4, 0)
	}
	if hi > nhi {
		nhi = min(hi+(hi-nlo)/4, maxBuckets)
	}
	n := make([]uint64, nhi-nlo)
	copy(n[h.off-nlo:], h.counts)
	h.counts, h.off = n, nlo
}

// Merge adds the counts of o.
func (h *Hist) Merge(o *Hist) {
	if o.n == 0 {
		return
	}
	h.cover(o.off, o.off+len(o.counts))
	d := o.off - h.off
	for i, c := range o.counts {
		h.counts[d+i] += c
	}
	if h.n == 0 || o.max > h.max {
		h.max = o.max
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.n += o.n
}

// Count is the number of values added.
func (h *Hist) Count() uint64 { return h.n }

// Max is the largest value added (exact).
func (h *Hist) Max() int64 { return h.max }

// Min is the smallest value added (exact).
func (h *Hist) Min() int64 { return h.min }

// Quantile returns the q-quantile (0 ≤ q ≤ 1) by the nearest-rank
// method: the ⌈q·n⌉-th smallest value, read as the middle of its bucket
// (so within 0.4 %) and exact when it is the minimum or the maximum.
func (h *Hist) Quantile(q float64) int64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n))) // 1-based
	if rank <= 1 {
		return h.min
	}
	if rank >= h.n {
		return h.max
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(max(bucketMid(h.off+i), h.min), h.max)
		}
	}
	return h.max
}
