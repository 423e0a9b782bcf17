package hist

import (
	"encoding/binary"
	"errors"
)

// MarshalBinary encodes h (so that histograms of several processes can be
// merged in one): uvarint count, varint min and max, then the buckets as
// uvarint runs of (zero buckets skipped, count).
func (h *Hist) MarshalBinary() ([]byte, error) {
	b := binary.AppendUvarint(nil, h.n)
	b = binary.AppendVarint(b, h.min)
	b = binary.AppendVarint(b, h.max)
	skip := uint64(h.off)
	for _, c := range h.counts {
		if c == 0 {
			skip++
			continue
		}
		b = binary.AppendUvarint(b, skip)
		b = binary.AppendUvarint(b, c)
		skip = 0
	}
	return b, nil
}

// UnmarshalBinary decodes what MarshalBinary wrote.
func (h *Hist) UnmarshalBinary(b []byte) error {
	bad := errors.New("bad histogram encoding")
	var v Hist
	var k int
	if v.n, k = binary.Uvarint(b); k <= 0 {
		return bad
	}
	b = b[k:]
	if v.min, k = binary.Varint(b); k <= 0 {
		return bad
	}
	b = b[k:]
	if v.max, k = binary.Varint(b); k <= 0 {
		return bad
	}
	b = b[k:]
	var sum uint64
	for len(b) > 0 {
		skip, k := binary.Uvarint(b)
		if k <= 0 {
			return bad
		}
		b = b[k:]
		c, k := binary.Uvarint(b)
		if k <= 0 || c == 0 {
			return bad
		}
		b = b[k:]
		if skip > maxBuckets || uint64(v.off+len(v.counts))+skip >= maxBuckets {
			return bad
		}
		if len(v.counts) == 0 {
			v.off, skip = int(skip), 0
		}
		for ; skip > 0; skip-- {
			v.counts = append(v.counts, 0)
		}
		v.counts = append(v.counts, c)
		sum += c
	}
	if sum != v.n {
		return bad
	}
	*h = v
	return nil
}
