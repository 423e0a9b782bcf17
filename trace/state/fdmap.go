package state

import "slices"

// FDMap maps descriptor numbers to values, the zero value meaning none. Its
// memory follows the descriptors in use, not their numbers: numbers from 0
// live in a slice while it stays dense (at most four times the entries,
// and no more than 4,096 numbers), others in a map, so that a trace whose
// open returns 1048575 costs one map entry, not a table of a million. It
// is what a descriptor table is made of here and in the script
// interpreter.
type FDMap[V comparable] struct {
	low  []V
	high map[int32]V
	n    int   // entries
	free int32 // every number in [0, free) is in use (Lowest)
}

// lowFDs bounds the slice: numbers from it on always live in the map.
const lowFDs = 1 << 12

// Get returns fd's value (the zero value: none).
func (m *FDMap[V]) Get(fd int32) V {
	if uint32(fd) < uint32(len(m.low)) {
		return m.low[fd]
	}
	return m.high[fd]
}

// Set sets fd's value; the zero value removes it.
func (m *FDMap[V]) Set(fd int32, v V) {
	var zero V
	if v == zero {
		m.Delete(fd)
		return
	}
	if uint32(fd) >= uint32(len(m.low)) {
		m.grow(fd)
	}
	if uint32(fd) < uint32(len(m.low)) {
		if m.low[fd] == zero {
			m.added(fd)
		}
		m.low[fd] = v
		return
	}
	if m.high == nil {
		m.high = map[int32]V{}
	}
	if _, ok := m.high[fd]; !ok {
		m.added(fd)
	}
	m.high[fd] = v
}

func (m *FDMap[V]) added(fd int32) {
	m.n++
	if fd == m.free {
		for m.free++; m.Get(m.free) != *new(V); m.free++ {
		}
	}
}

// grow makes room in the slice for fd if the slice stays dense, moving
// what the map held below the new length.
func (m *FDMap[V]) grow(fd int32) {
	if fd < 0 || fd >= lowFDs {
		return
	}
	n := min(max(16, 2*len(m.low), int(fd)+1), lowFDs)
	if n > 64 && n > 4*(m.n+1) {
		return
	}
	low := make([]V, n)
	copy(low, m.low)
	for k, v := range m.high {
		if k >= 0 && int(k) < n {
			low[k] = v
			delete(m.high, k)
		}
	}
	m.low = low
}

// Delete removes fd and returns its value.
func (m *FDMap[V]) Delete(fd int32) V {
	var zero V
	var v V
	if uint32(fd) < uint32(len(m.low)) {
		v = m.low[fd]
		m.low[fd] = zero
	} else if len(m.high) > 0 {
		v = m.high[fd]
		delete(m.high, fd)
	}
	if v != zero {
		m.n--
		if fd >= 0 && fd < m.free {
			m.free = fd
		}
	}
	return v
}

// Len returns how many descriptors have a value.
func (m *FDMap[V]) Len() int { return m.n }

// Lowest returns the lowest descriptor from `from` on without a value:
// where an open puts its descriptor (from 0), or F_DUPFD (from its
// argument).
func (m *FDMap[V]) Lowest(from int32) int32 {
	var zero V
	for fd := max(from, m.free, 0); ; fd++ {
		if m.Get(fd) == zero {
			return fd
		}
	}
}

// Each calls fn for every descriptor with a value, in increasing order.
func (m *FDMap[V]) Each(fn func(fd int32, v V)) {
	var zero V
	var high []int32
	for fd := range m.high {
		high = append(high, fd)
	}
	slices.Sort(high)
	i := 0
	for ; i < len(high) && high[i] < 0; i++ {
		fn(high[i], m.high[high[i]])
	}
	for fd, v := range m.low {
		if v != zero {
			fn(int32(fd), v)
		}
	}
	for ; i < len(high); i++ {
		fn(high[i], m.high[high[i]])
	}
}

// Clone returns a copy of m.
func (m *FDMap[V]) Clone() FDMap[V] {
	c := FDMap[V]{low: slices.Clone(m.low), n: m.n, free: m.free}
	if m.high != nil {
		c.high = make(map[int32]V, len(m.high))
		for k, v := range m.high {
			c.high[k] = v
		}
	}
	return c
}
