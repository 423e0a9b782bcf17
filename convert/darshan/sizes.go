package darshan

import (
	"slices"

	"github.com/iotrace/iotrace/report/access"
)

// sizeCount is n accesses of size bytes.
type sizeCount struct{ size, n int64 }

func total(s []sizeCount) (n, bytes int64) {
	for _, c := range s {
		n += c.n
		bytes += c.n * c.size
	}
	return
}

// bucketRange is the range of sizes of histogram bucket b: [lo, hi].
func bucketRange(b int) (lo, hi int64) {
	lo = access.Buckets[b]
	if b+1 < len(access.Buckets) {
		return lo, access.Buckets[b+1] - 1
	}
	return lo, 1 << 50
}

// solveSizes chooses the read and write sizes of a record from its
// counters: the four most common access sizes and their counts (over
// reads and writes), the size histograms and the byte totals. Sizes are
// listed most common first. ok is false when the counters could not all
// be met (the caller's check reports which).
//
// When fewer than four common sizes are listed, every access had one of
// them: each is split between reads and writes so that the histograms
// and byte totals hold. With four, the accesses the histograms count
// beyond them get other sizes, within their bucket, spread around the
// bytes left so that none is as common as the fourth.
func solveSizes(commons access.Commons, histR, histW [10]int64, bytesR, bytesW int64) (reads, writes []sizeCount, ok bool) {
	var vals []access.Common
	for _, c := range commons {
		if c.Count > 0 && c.Value > 0 {
			vals = append(vals, c)
		}
	}
	// Split every common value into reads r[i] and writes c−r[i].
	r := make([]int64, len(vals))
	leftR, leftW := histR, histW
	// Per bucket, the values in it.
	byBucket := map[int][]int{}
	for i, v := range vals {
		b := access.Bucket(v.Value)
		byBucket[b] = append(byBucket[b], i)
	}
	ok = true
	complete := len(vals) < 4
	// free: indexes whose split is searched; the others are forced.
	var free []int
	for b, idx := range byBucket {
		var sum int64
		for _, i := range idx {
			sum += vals[i].Count
		}
		if complete && sum != histR[b]+histW[b] {
			ok = false
		}
		// Greedy: reads first up to the bucket's read count.
		need := histR[b]
		for _, i := range idx {
			r[i] = min(vals[i].Count, max(need, 0))
			need -= r[i]
		}
		if len(idx) > 1 {
			free = append(free, idx[:len(idx)-1]...)
		}
	}
	slices.Sort(free)
	readBytes := func() int64 {
		var s int64
		for i, v := range vals {
			s += r[i] * v.Value
		}
		return s
	}
	if complete && ok && readBytes() != bytesR && len(free) > 0 {
		// Search the free splits (the last value of each bucket takes the
		// rest of the bucket's reads) for the read byte total.
		budget := 2_000_000
		var try func(k int) bool
		try = func(k int) bool {
			if budget--; budget < 0 {
				return false
			}
			if k == len(free) {
				return readBytes() == bytesR
			}
			i := free[k]
			b := access.Bucket(vals[i].Value)
			idx := byBucket[b]
			last := idx[len(idx)-1]
			save := append([]int64(nil), r...)
			for x := int64(0); x <= vals[i].Count; x++ {
				r[i] = x
				// the bucket's other values: free ones keep theirs, the
				// last takes the rest of the bucket's reads
				var used int64
				for _, j := range idx {
					if j != last {
						used += r[j]
					}
				}
				rest := histR[b] - used
				if rest < 0 || rest > vals[last].Count {
					continue
				}
				r[last] = rest
				if try(k + 1) {
					return true
				}
			}
			copy(r, save)
			return false
		}
		if !try(0) {
			ok = false
		}
	}
	for i, v := range vals {
		b := access.Bucket(v.Value)
		if r[i] > 0 {
			reads = append(reads, sizeCount{v.Value, r[i]})
		}
		if w := v.Count - r[i]; w > 0 {
			writes = append(writes, sizeCount{v.Value, w})
		}
		leftR[b] -= r[i]
		leftW[b] -= v.Count - r[i]
	}
	if complete {
		for b := range leftR {
			if leftR[b] != 0 || leftW[b] != 0 {
				ok = false
			}
		}
		return reads, writes, ok
	}
	cap4 := max(vals[3].Count-1, 1)
	avoid := map[int64]bool{}
	for _, v := range vals {
		avoid[v.Value] = true
	}
	_, br := total(reads)
	_, bw := total(writes)
	or, okR := others(leftR, bytesR-br, cap4, avoid)
	ow, okW := others(leftW, bytesW-bw, cap4, avoid)
	return append(reads, or...), append(writes, ow...), ok && okR && okW
}

// others chooses sizes for left[b] accesses in each bucket b that add up
// to bytes, none of a size in avoid, each size at most cap times where
// the bucket is wide enough.
func others(left [10]int64, bytes int64, cap int64, avoid map[int64]bool) ([]sizeCount, bool) {
	var n int64
	var lo, hi [10]int64
	var minSum, maxSum int64
	for b := range left {
		if left[b] < 0 {
			return nil, false
		}
		n += left[b]
		lo[b], hi[b] = bucketRange(b)
		minSum += left[b] * lo[b]
		maxSum += left[b] * hi[b]
	}
	if n == 0 {
		return nil, bytes == 0
	}
	ok := bytes >= minSum && bytes <= maxSum
	bytes = min(max(bytes, minSum), maxSum)
	// Per bucket totals: start at the low ends, give the rest to the
	// buckets in turn up to their high ends.
	var tot [10]int64
	extra := bytes - minSum
	for b := range left {
		tot[b] = left[b] * lo[b]
	}
	for b := len(left) - 1; b >= 0 && extra > 0; b-- {
		add := min(extra, left[b]*(hi[b]-lo[b]))
		tot[b] += add
		extra -= add
	}
	var out []sizeCount
	for b := range left {
		if left[b] == 0 {
			continue
		}
		out = append(out, spread(left[b], tot[b], lo[b], hi[b], cap, avoid)...)
	}
	return out, ok
}

// spread returns n sizes in [lo, hi] adding up to sum: the mean, and
// pairs the same distance below and above it, so that few share a size.
func spread(n, sum, lo, hi, cap int64, avoid map[int64]bool) []sizeCount {
	q, rem := sum/n, sum%n
	counts := map[int64]int64{}
	// rem sizes of q+1, n−rem of q, then moved apart in pairs.
	var base []int64
	var nq, nq1 = n - rem, rem
	k := int64(1)
	add := func(v int64, c int64) { counts[v] += c }
	// Pair up sizes of q: q−k and q+k.
	for nq >= 2 && (counts[q] >= cap || avoid[q] || nq > cap) {
		if q-k < lo || q+k > hi {
			break
		}
		if !avoid[q-k] && !avoid[q+k] && counts[q-k] < cap && counts[q+k] < cap {
			add(q-k, 1)
			add(q+k, 1)
			nq -= 2
		}
		k++
		if k > 1<<20 {
			break
		}
	}
	k = 1
	for nq1 >= 2 && (avoid[q+1] || nq1 > cap) {
		if q+1-k < lo || q+1+k > hi {
			break
		}
		if !avoid[q+1-k] && !avoid[q+1+k] && counts[q+1-k] < cap && counts[q+1+k] < cap {
			add(q+1-k, 1)
			add(q+1+k, 1)
			nq1 -= 2
		}
		k++
		if k > 1<<20 {
			break
		}
	}
	add(q, nq)
	add(q+1, nq1)
	_ = base
	var out []sizeCount
	for v, c := range counts {
		if c > 0 {
			out = append(out, sizeCount{v, c})
		}
	}
	slices.SortFunc(out, func(a, b sizeCount) int {
		if a.n != b.n {
			return int(b.n - a.n)
		}
		return int(b.size - a.size)
	})
	return out
}
