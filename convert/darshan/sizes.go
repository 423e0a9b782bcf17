package darshan

import (
	"slices"

	"github.com/iotrace/iotrace/trace/access"
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
	lim := newLimiter(vals)
	_, br := total(reads)
	_, bw := total(writes)
	or, okR := others(leftR, bytesR-br, lim)
	ow, okW := others(leftW, bytesW-bw, lim)
	return append(reads, or...), append(writes, ow...), ok && okR && okW
}

// limiter keeps the other values (sizes or strides beyond the four
// common ones) from becoming common: each is used at most cap times (one
// less than the fourth common value's count), or as often as it if it is
// smaller (Darshan breaks ties by the larger value); none is a common one.
type limiter struct {
	cap, tieCount, tieValue int64
	avoid                   map[int64]bool
	used                    map[int64]int64
}

func newLimiter(commons []access.Common) *limiter {
	l := &limiter{avoid: map[int64]bool{}, used: map[int64]int64{}}
	for _, c := range commons {
		l.avoid[c.Value] = true
	}
	if len(commons) == 4 {
		l.tieCount, l.tieValue = commons[3].Count, commons[3].Value
		l.cap = commons[3].Count - 1
	} else {
		l.cap = 1 << 62
	}
	return l
}

// extreme is the least (dir 1: values up from lo) or most (dir −1: down
// from hi) that n values in [lo, hi] can add up to, each value used as
// often as lim allows.
func (l *limiter) extreme(n, lo, hi int64, dir int64) int64 {
	v := lo
	if dir < 0 {
		v = hi
	}
	var sum int64
	for steps := 0; n > 0 && v >= lo && v <= hi && steps < 1<<22; steps++ {
		k := min(l.room(v), n)
		sum += k * v
		n -= k
		v += dir
	}
	return sum + n*v // what could not be placed: as if at the edge
}

// room is how many more times v may be used.
func (l *limiter) room(v int64) int64 {
	if l.avoid[v] || v < 0 {
		return 0
	}
	c := l.cap
	if l.tieCount > 0 && v < l.tieValue {
		c = l.tieCount
	}
	return max(c-l.used[v], 0)
}

// others chooses sizes for left[b] accesses in each bucket b that add up
// to bytes, none common (lim).
func others(left [10]int64, bytes int64, lim *limiter) ([]sizeCount, bool) {
	var n int64
	var lo, hi, bmin, bmax [10]int64
	var minSum, maxSum int64
	for b := range left {
		if left[b] < 0 {
			return nil, false
		}
		n += left[b]
		lo[b], hi[b] = bucketRange(b)
		// the least and most the bucket's accesses can add up to, each
		// value as rarely as lim allows
		bmin[b], bmax[b] = lim.extreme(left[b], lo[b], hi[b], 1), lim.extreme(left[b], lo[b], hi[b], -1)
		minSum += bmin[b]
		maxSum += bmax[b]
	}
	if n == 0 {
		return nil, bytes == 0
	}
	ok := bytes >= minSum && bytes <= maxSum
	bytes = min(max(bytes, minSum), maxSum)
	// Per bucket totals: the mean size where it fits the bucket, then the
	// rest given to the buckets that can take it.
	var tot [10]int64
	mean := bytes / n
	var sum int64
	for b := range left {
		tot[b] = min(max(left[b]*mean, bmin[b]), bmax[b])
		sum += tot[b]
	}
	for b := len(left) - 1; b >= 0 && sum < bytes; b-- {
		add := min(bytes-sum, bmax[b]-tot[b])
		tot[b] += add
		sum += add
	}
	for b := 0; b < len(left) && sum > bytes; b++ {
		sub := min(sum-bytes, tot[b]-bmin[b])
		tot[b] -= sub
		sum -= sub
	}
	var out []sizeCount
	for b := range left {
		if left[b] == 0 {
			continue
		}
		sc, good := spread(left[b], tot[b], lo[b], hi[b], lim)
		ok = ok && good
		out = append(out, sc...)
	}
	return out, ok
}

// spread returns n values in [lo, hi] adding up to sum, each as rarely as
// lim allows: the mean, then values further and further from it, and the
// sum made right by moving the largest (or smallest) values.
func spread(n, sum, lo, hi int64, lim *limiter) ([]sizeCount, bool) {
	ok := true
	q := min(max(sum/n, lo), hi)
	counts := map[int64]int64{}
	take := func(v, k int64) {
		counts[v] += k
		lim.used[v] += k
	}
	left := n
	for d := int64(0); left > 0 && (q-d >= lo || q+d <= hi); d++ {
		for _, v := range []int64{q + d, q - d} {
			if left == 0 || v < lo || v > hi || (d == 0 && v != q+d) {
				continue
			}
			if k := min(lim.room(v), left); k > 0 {
				take(v, k)
				left -= k
			}
			if d == 0 {
				break
			}
		}
		if d > 1<<22 {
			break
		}
	}
	if left > 0 {
		take(q, left) // the bucket is too narrow: some value is common
		ok = false
	}
	var got int64
	for v, c := range counts {
		got += v * c
	}
	// move values to make the sum right
	for guard := int64(0); got != sum && guard < 4*n+64; guard++ {
		var vals []int64
		for v, c := range counts {
			if c > 0 {
				vals = append(vals, v)
			}
		}
		slices.Sort(vals)
		d := sum - got
		var from int64
		if d > 0 {
			from = vals[len(vals)-1]
		} else {
			from = vals[0]
		}
		to := min(max(from+d, lo), hi)
		// the nearest value to it that may take one more
		lim.used[from]--
		moved := false
		for step := int64(0); step <= 1<<12; step++ {
			for _, v := range []int64{to - step*sign(d), to} {
				if v >= lo && v <= hi && v != from && (v-from)*sign(d) > 0 && lim.room(v) > 0 {
					counts[from]--
					lim.used[v]++
					counts[v]++
					got += v - from
					moved = true
					break
				}
			}
			if moved {
				break
			}
		}
		if !moved {
			lim.used[from]++
			ok = false
			break
		}
	}
	if got != sum {
		ok = false
	}
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
	return out, ok
}

func sign(x int64) int64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}
