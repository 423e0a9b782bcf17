package report

import (
	"encoding/json"
	"io"

	"github.com/iotrace/iotrace/trace/access"
)

// The JSON shapes. Field names are stable: scripts depend on them
// (docs/FORMAT.md, "Reports", describes every one).

type jsonOp struct {
	Op         string  `json:"op"`
	Class      string  `json:"class"`
	Count      int64   `json:"count"`
	Bytes      int64   `json:"bytes"`
	Errors     int64   `json:"errors"`
	Total      float64 `json:"total_seconds"`
	AvgPerRank float64 `json:"avg_seconds_per_rank"`
	Bandwidth  float64 `json:"bandwidth_mb_s"`
	Min        float64 `json:"min_seconds"`
	P50        float64 `json:"p50_seconds"`
	P99        float64 `json:"p99_seconds"`
	Max        float64 `json:"max_seconds"`
	InMPIIO    bool    `json:"in_mpiio,omitempty"`
}

type jsonSize struct {
	Op      string `json:"op"`
	Size    *int64 `json:"size,omitempty"`
	SizeMin *int64 `json:"size_min,omitempty"`
	SizeMax *int64 `json:"size_max,omitempty"`
	Count   int64  `json:"count"`
}

type jsonRank struct {
	Rank      uint32             `json:"rank"`
	Events    int64              `json:"events"`
	Start     float64            `json:"start_seconds"`
	End       float64            `json:"end_seconds"`
	Seconds   map[string]float64 `json:"seconds"`
	IOSeconds float64            `json:"io_seconds"`
	Bytes     int64              `json:"bytes"`
	CommBytes int64              `json:"comm_bytes"`
	Straggler bool               `json:"straggler"`
}

type jsonFile struct {
	Path       string  `json:"path"`
	Ranks      int     `json:"ranks"`
	Opens      int64   `json:"opens"`
	Reads      int64   `json:"reads"`
	ReadBytes  int64   `json:"read_bytes"`
	Writes     int64   `json:"writes"`
	WriteBytes int64   `json:"write_bytes"`
	Other      int64   `json:"other"`
	Errors     int64   `json:"errors"`
	Seconds    float64 `json:"seconds"`
}

type jsonCommon struct {
	Value int64 `json:"value"`
	Count int64 `json:"count"`
}

type jsonAccess struct {
	Path            string       `json:"path"`
	Rank            int          `json:"rank"`
	Layer           string       `json:"layer"`
	Ranks           int          `json:"ranks"`
	Shared          *bool        `json:"shared,omitempty"`
	Reads           int64        `json:"reads"`
	Writes          int64        `json:"writes"`
	ReadBytes       int64        `json:"read_bytes"`
	WriteBytes      int64        `json:"write_bytes"`
	SeqReads        int64        `json:"seq_reads"`
	SeqWrites       int64        `json:"seq_writes"`
	ConsecReads     int64        `json:"consec_reads"`
	ConsecWrites    int64        `json:"consec_writes"`
	Sizes           []jsonCommon `json:"common_sizes"`
	Strides         []jsonCommon `json:"common_strides"`
	Aligned4K       int64        `json:"aligned_4k"`
	Aligned1M       int64        `json:"aligned_1m"`
	NotAlignedBlock int64        `json:"not_block_aligned"`
	BlockSize       int64        `json:"block_size"`
	RWSwitches      int64        `json:"rw_switches"`
	MaxByteRead     int64        `json:"max_byte_read"`
	MaxByteWritten  int64        `json:"max_byte_written"`
	SlowestRank     int          `json:"slowest_rank"`
	SlowestSeconds  float64      `json:"slowest_seconds"`
	OverlapBytes    *int64       `json:"rw_overlap_bytes,omitempty"`
}

func commonsJSON(c access.Commons) []jsonCommon {
	out := []jsonCommon{}
	for _, e := range c {
		if e.Count > 0 {
			out = append(out, jsonCommon{e.Value, e.Count})
		}
	}
	return out
}

// accessJSON lists the access patterns of every file (rank -1), then of
// every file and rank.
func accessJSON(s *Stats) []jsonAccess {
	out := []jsonAccess{}
	for _, rows := range [][]*AccessRow{s.Access, s.AccessByRank} {
		for _, r := range rows {
			j := jsonAccess{Path: r.Path, Rank: r.Rank, Layer: r.Layer, Ranks: r.Ranks, Reads: r.Reads, Writes: r.Writes,
				ReadBytes: r.ReadBytes, WriteBytes: r.WriteBytes, SeqReads: r.SeqReads, SeqWrites: r.SeqWrites,
				ConsecReads: r.ConsecReads, ConsecWrites: r.ConsecWrites,
				Sizes: commonsJSON(r.Sizes), Strides: commonsJSON(r.Strides),
				Aligned4K: r.Aligned4K, Aligned1M: r.Aligned1M, NotAlignedBlock: r.NotAlignedBlock, BlockSize: r.BlockSize,
				RWSwitches: r.RWSwitches, MaxByteRead: r.MaxByteRead, MaxByteWritten: r.MaxByteWritten,
				SlowestRank: r.SlowestRank, SlowestSeconds: r.SlowestTime}
			if r.Rank < 0 {
				sh, ov := r.Shared, r.OverlapBytes
				j.Shared, j.OverlapBytes = &sh, &ov
			}
			out = append(out, j)
		}
	}
	return out
}

type jsonRegion struct {
	Label      string   `json:"label"`
	Count      int64    `json:"count"`
	Ranks      int      `json:"ranks"`
	Seconds    float64  `json:"seconds"`
	AvgPerRank float64  `json:"avg_seconds_per_rank"`
	Wall       float64  `json:"wall_seconds"`
	Ops        []jsonOp `json:"ops"`
	Total      jsonOp   `json:"total"`
}

type jsonStats struct {
	Ranks      int           `json:"ranks"`
	Events     int64         `json:"events"`
	Markers    int64         `json:"markers"`
	Process    int64         `json:"process_events"`
	InMPIIO    int64         `json:"calls_in_mpiio"`
	Duration   float64       `json:"duration_seconds"`
	Start      float64       `json:"start_seconds"`
	End        float64       `json:"end_seconds"`
	Times      string        `json:"times,omitempty"`
	Ops        []jsonOp      `json:"ops"`
	Total      jsonOp        `json:"total"`
	Sizes      []jsonSize    `json:"sizes"`
	ByRank     *[]jsonRank   `json:"by_rank,omitempty"`
	Stragglers *[]uint32     `json:"stragglers,omitempty"`
	Files      *[]jsonFile   `json:"files,omitempty"`
	Access     *[]jsonAccess `json:"access,omitempty"`
	Regions    *[]jsonRegion `json:"regions,omitempty"`
	BeffIO     *jsonBeff     `json:"beffio,omitempty"`
	Replay     *jsonReplay   `json:"replay,omitempty"`
}

func opJSON(r *OpRow) jsonOp {
	return jsonOp{Op: r.Op, Class: r.Class.String(), Count: r.Count, Bytes: r.Bytes, Errors: r.Errors,
		Total: float64(r.Total) / 1e9, AvgPerRank: r.AvgPerRank(), Bandwidth: r.Bandwidth(),
		Min: float64(r.Lat.Min()) / 1e9, P50: float64(r.Lat.Quantile(0.5)) / 1e9,
		P99: float64(r.Lat.Quantile(0.99)) / 1e9, Max: float64(r.Lat.Max()) / 1e9, InMPIIO: r.InMPIIO}
}

func opsJSON(rows []*OpRow) []jsonOp {
	out := make([]jsonOp, 0, len(rows))
	for _, r := range rows {
		out = append(out, opJSON(r))
	}
	return out
}

// statsJSON is the JSON of view: the op and size tables always, and the
// view's own table.
func statsJSON(s *Stats, view string) jsonStats {
	js := jsonStats{Ranks: s.Ranks, Events: s.Events, Markers: s.Markers, Process: s.ProcEvents, InMPIIO: s.InMPIIO, Duration: s.Duration(), Start: float64(s.Start) / 1e9,
		End: float64(s.End) / 1e9, Times: s.Times, Ops: opsJSON(s.Ops), Total: opJSON(s.Total), Sizes: []jsonSize{}, Replay: replayJSON(s.Replay)}
	for _, r := range s.Sizes {
		if r.Exact() {
			js.Sizes = append(js.Sizes, jsonSize{Op: r.Op, Size: &r.Min, Count: r.Count})
		} else {
			js.Sizes = append(js.Sizes, jsonSize{Op: r.Op, SizeMin: &r.Min, SizeMax: &r.Max, Count: r.Count})
		}
	}
	switch view {
	case "rank":
		ranks, strag := []jsonRank{}, append([]uint32{}, s.Stragglers...)
		for _, r := range s.ByRank {
			jr := jsonRank{Rank: r.Rank, Events: r.Events, Start: float64(r.Start) / 1e9, End: float64(r.End) / 1e9,
				Seconds: map[string]float64{}, IOSeconds: float64(r.IOTime()) / 1e9, Bytes: r.Bytes(),
				CommBytes: r.CommBytes(), Straggler: r.Straggler}
			for _, c := range rankColumns {
				jr.Seconds[c] = float64(r.Time(c)) / 1e9
			}
			ranks = append(ranks, jr)
		}
		js.ByRank, js.Stragglers = &ranks, &strag
	case "file":
		files := []jsonFile{}
		for _, f := range s.Files {
			files = append(files, jsonFile{Path: f.Path, Ranks: f.Ranks, Opens: f.Opens(), Reads: f.Reads(),
				ReadBytes: f.ReadBytes(), Writes: f.Writes(), WriteBytes: f.WriteBytes(), Other: f.Other(),
				Errors: f.Errors(), Seconds: float64(f.Time()) / 1e9})
		}
		js.Files = &files
		acc := accessJSON(s)
		js.Access = &acc
	case "access":
		acc := accessJSON(s)
		js.Access = &acc
	case "region":
		regs := []jsonRegion{}
		for _, r := range s.Regions {
			regs = append(regs, jsonRegion{Label: r.Label, Count: r.Count, Ranks: r.Ranks, Seconds: float64(r.Time) / 1e9,
				AvgPerRank: r.AvgPerRank(), Wall: float64(r.Wall) / 1e9, Ops: opsJSON(r.Ops), Total: opJSON(Sum(r.Ops))})
		}
		js.Regions = &regs
	case "beffio":
		js.BeffIO = beffJSON(s)
	}
	return js
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
