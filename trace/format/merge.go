package format

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/iotrace/iotrace/trace"
)

// MergeStats says what Merge did.
type MergeStats struct {
	Files    int
	Blocks   int
	Ranks    int
	Events   int64
	Warnings []string // recovered truncation, skipped damaged blocks
}

// Merge writes to w one trace holding every block of the named trace files
// (and the trace files of named directories). Blocks are copied byte for
// byte, not re-encoded. Two inputs that hold the same rank are an error.
// With opts.Salvage, damaged blocks of the inputs are left out instead of
// failing the merge; a truncated input contributes its complete blocks.
func Merge(w io.Writer, opts ReadOptions, names ...string) (MergeStats, error) {
	var st MergeStats
	names, err := ExpandNames(names)
	if err != nil {
		return st, err
	}
	var files []*file
	defer func() {
		for _, f := range files {
			f.closer.Close()
		}
	}()
	for _, n := range names {
		f, err := openFile(n, opts)
		if err != nil {
			return st, err
		}
		files = append(files, f)
	}
	return mergeFiles(w, opts, files)
}

// mergeFiles is Merge of files already open.
func mergeFiles(w io.Writer, opts ReadOptions, files []*file) (MergeStats, error) {
	var st MergeStats
	owner := map[uint32]*file{}
	hasInfo := map[uint32]bool{}
	for _, f := range files {
		for _, bi := range f.blocks {
			if o, ok := owner[bi.Rank]; ok && o != f {
				return st, fmt.Errorf("rank %d is in both %s and %s", bi.Rank, o.name, f.name)
			}
			owner[bi.Rank] = f
			if bi.Kind == kindRankInfo && !hasInfo[bi.Rank] {
				// A rank-info block may hold only the rank's clock: the
				// rank has its own epoch when one holds an epoch.
				if _, p, err := f.readBlock(bi.Offset, nil); err == nil {
					hasInfo[bi.Rank] = hasEpoch(p)
				}
			}
		}
		if f.truncated != "" {
			st.Warnings = append(st.Warnings, fmt.Sprintf("%s: %s; merged the %d complete blocks before it", f.name, f.truncated, len(f.blocks)))
		}
		for _, d := range f.damage {
			st.Warnings = append(st.Warnings, fmt.Sprintf("%s: left out damaged block", d))
		}
	}
	m := mergeMeta(files)
	for _, f := range files {
		m.Epoch = min(m.Epoch, f.meta.Epoch)
	}
	m.Ranks = max(m.Ranks, len(owner))

	// The new header; blocks follow at known offsets.
	body := encodeMeta(m)
	out := &countWriter{w: w}
	hdr := append([]byte(Magic), 0, 0, 0, 0, 0, 0, 0, 0)
	binary.LittleEndian.PutUint16(hdr[8:], Version)
	binary.LittleEndian.PutUint32(hdr[12:], uint32(len(body)))
	hdr = append(hdr, body...)
	hdr = binary.LittleEndian.AppendUint32(hdr, crc(body))
	if _, err := out.Write(hdr); err != nil {
		return st, err
	}
	var index []BlockInfo
	written := map[uint32]bool{} // ranks with a block in the merge
	writeBlock := func(kind uint8, payload []byte, info BlockInfo) error {
		written[info.Rank] = true
		var h [blockHeaderLen]byte
		copy(h[:], blockMagic)
		h[4] = kind
		binary.LittleEndian.PutUint32(h[8:], uint32(len(payload)))
		binary.LittleEndian.PutUint32(h[12:], crc(h[4:12], payload))
		info.Offset, info.Length, info.Kind = out.n, int64(len(payload)), kind
		index = append(index, info)
		if _, err := out.Write(h[:]); err != nil {
			return err
		}
		_, err := out.Write(payload)
		return err
	}
	// writeEpoch writes a rank-info block that holds rank r's epoch.
	writeEpoch := func(r uint32, epoch int64) error {
		var fl fields
		fl.varint(fieldEpoch, epoch)
		return writeBlock(kindRankInfo, append(binary.AppendUvarint(nil, uint64(r)), fl...), BlockInfo{Rank: r})
	}
	// Ranks whose times count from their file's epoch, not the new one,
	// say so in a rank-info block.
	for _, f := range files {
		if f.meta.Epoch == m.Epoch {
			continue
		}
		for _, bi := range f.blocks {
			if !hasInfo[bi.Rank] && !written[bi.Rank] {
				if err := writeEpoch(bi.Rank, f.meta.Epoch); err != nil {
					return st, err
				}
			}
		}
	}
	var buf []byte
	for _, f := range files {
		st.Files++
		var lost []uint32 // ranks of f all of whose blocks were left out
		for _, bi := range f.blocks {
			kind, p, err := f.readBlock(bi.Offset, buf)
			if err != nil {
				if !opts.Salvage {
					return st, formatError(f.name, bi.Offset, "%v", err)
				}
				st.Warnings = append(st.Warnings, fmt.Sprintf("%s: offset %d: left out damaged block: %v", f.name, bi.Offset, err))
				lost = append(lost, bi.Rank)
				continue
			}
			buf = p
			if err := writeBlock(kind, p, bi); err != nil {
				return st, err
			}
			st.Blocks++
			st.Events += bi.Events
		}
		// A rank whose blocks were all damaged still counts in the
		// trace's epoch when its input is read (its blocks are listed;
		// their damage shows only when they are read): its epoch stays,
		// in a rank-info block, so that the merge reads as its inputs do.
		for _, r := range lost {
			if !written[r] {
				if err := writeEpoch(r, f.meta.Epoch); err != nil {
					return st, err
				}
			}
		}
	}
	p := appendIndex(nil, index)
	idxOff := out.n
	if err := writeBlock(kindIndex, p, BlockInfo{}); err != nil {
		return st, err
	}
	var t [trailerLen]byte
	copy(t[:], trailerMagic)
	binary.LittleEndian.PutUint64(t[8:], uint64(idxOff))
	if _, err := out.Write(t[:]); err != nil {
		return st, err
	}
	st.Ranks = len(owner)
	return st, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

var _ trace.Trace = (*Reader)(nil)

// hasEpoch says whether the rank-info payload p records an epoch.
func hasEpoch(p []byte) bool {
	_, n := binary.Uvarint(p)
	if n <= 0 {
		return false
	}
	found := false
	eachField(p[n:], func(id uint64, _ []byte) error {
		found = found || id == fieldEpoch
		return nil
	})
	return found
}
