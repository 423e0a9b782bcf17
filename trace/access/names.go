package access

import "fmt"

// Counters returns the record's integer counters under Darshan's names
// (POSIX_OPENS, POSIX_SIZE_READ_0_100, POSIX_ACCESS1_ACCESS …).
// POSIX_MMAPS is -1 (not monitored), as in Darshan's default build.
func (r *Posix) Counters() map[string]int64 {
	m := map[string]int64{
		"POSIX_OPENS": r.Opens, "POSIX_FILENOS": r.Filenos, "POSIX_DUPS": r.Dups,
		"POSIX_READS": r.Reads, "POSIX_WRITES": r.Writes, "POSIX_SEEKS": r.Seeks,
		"POSIX_STATS": r.Stats, "POSIX_MMAPS": -1, "POSIX_FSYNCS": r.Fsyncs, "POSIX_FDSYNCS": r.Fdsyncs,
		"POSIX_RENAME_SOURCES": r.RenameSources, "POSIX_RENAME_TARGETS": r.RenameTargets,
		"POSIX_MODE":       r.Mode,
		"POSIX_BYTES_READ": r.BytesRead, "POSIX_BYTES_WRITTEN": r.BytesWritten,
		"POSIX_MAX_BYTE_READ": r.MaxByteRead, "POSIX_MAX_BYTE_WRITTEN": r.MaxByteWritten,
		"POSIX_CONSEC_READS": r.ConsecReads, "POSIX_CONSEC_WRITES": r.ConsecWrites,
		"POSIX_SEQ_READS": r.SeqReads, "POSIX_SEQ_WRITES": r.SeqWrites,
		"POSIX_RW_SWITCHES":      r.RWSwitches,
		"POSIX_FILE_NOT_ALIGNED": r.FileNotAligned, "POSIX_FILE_ALIGNMENT": r.FileAlignment,
		"POSIX_MAX_READ_TIME_SIZE": r.MaxReadTimeSize, "POSIX_MAX_WRITE_TIME_SIZE": r.MaxWriteTimeSize,
		"POSIX_FASTEST_RANK": int64(r.FastestRank), "POSIX_FASTEST_RANK_BYTES": r.FastestRankBytes,
		"POSIX_SLOWEST_RANK": int64(r.SlowestRank), "POSIX_SLOWEST_RANK_BYTES": r.SlowestRankBytes,
	}
	for i, b := range BucketNames {
		m["POSIX_SIZE_READ_"+b] = r.SizeRead[i]
		m["POSIX_SIZE_WRITE_"+b] = r.SizeWrite[i]
	}
	commons(m, "POSIX_STRIDE", "STRIDE", r.Strides)
	commons(m, "POSIX_ACCESS", "ACCESS", r.Accesses)
	return m
}

// Counters returns the record's integer counters under Darshan's names.
func (r *MPIIO) Counters() map[string]int64 {
	m := map[string]int64{
		"MPIIO_INDEP_OPENS": r.IndepOpens, "MPIIO_COLL_OPENS": r.CollOpens,
		"MPIIO_INDEP_READS": r.IndepReads, "MPIIO_INDEP_WRITES": r.IndepWrites,
		"MPIIO_COLL_READS": r.CollReads, "MPIIO_COLL_WRITES": r.CollWrites,
		"MPIIO_SPLIT_READS": r.SplitReads, "MPIIO_SPLIT_WRITES": r.SplitWrites,
		"MPIIO_NB_READS": r.NBReads, "MPIIO_NB_WRITES": r.NBWrites,
		"MPIIO_SYNCS": r.Syncs, "MPIIO_VIEWS": r.Views, "MPIIO_MODE": r.Mode,
		"MPIIO_BYTES_READ": r.BytesRead, "MPIIO_BYTES_WRITTEN": r.BytesWritten,
		"MPIIO_RW_SWITCHES":        r.RWSwitches,
		"MPIIO_MAX_READ_TIME_SIZE": r.MaxReadTimeSize, "MPIIO_MAX_WRITE_TIME_SIZE": r.MaxWriteTimeSize,
		"MPIIO_FASTEST_RANK": int64(r.FastestRank), "MPIIO_FASTEST_RANK_BYTES": r.FastestRankBytes,
		"MPIIO_SLOWEST_RANK": int64(r.SlowestRank), "MPIIO_SLOWEST_RANK_BYTES": r.SlowestRankBytes,
	}
	for i, b := range BucketNames {
		m["MPIIO_SIZE_READ_AGG_"+b] = r.SizeReadAgg[i]
		m["MPIIO_SIZE_WRITE_AGG_"+b] = r.SizeWriteAgg[i]
	}
	commons(m, "MPIIO_ACCESS", "ACCESS", r.Accesses)
	return m
}

func commons(m map[string]int64, prefix, what string, c Commons) {
	for i, e := range c {
		m[fmt.Sprintf("%s%d_%s", prefix, i+1, what)] = e.Value
		m[fmt.Sprintf("%s%d_COUNT", prefix, i+1)] = e.Count
	}
}

// FCounters returns the record's times under Darshan's names
// (POSIX_F_OPEN_START_TIMESTAMP …), in seconds.
func (r *Posix) FCounters() map[string]float64 {
	m := fcounters("POSIX", &r.Times)
	m["POSIX_F_FASTEST_RANK_TIME"] = r.FastestRankTime
	m["POSIX_F_SLOWEST_RANK_TIME"] = r.SlowestRankTime
	return m
}

// FCounters returns the record's times under Darshan's names.
func (r *MPIIO) FCounters() map[string]float64 {
	m := fcounters("MPIIO", &r.Times)
	m["MPIIO_F_FASTEST_RANK_TIME"] = r.FastestRankTime
	m["MPIIO_F_SLOWEST_RANK_TIME"] = r.SlowestRankTime
	return m
}

func fcounters(p string, t *Times) map[string]float64 {
	return map[string]float64{
		p + "_F_OPEN_START_TIMESTAMP": t.OpenStart, p + "_F_READ_START_TIMESTAMP": t.ReadStart,
		p + "_F_WRITE_START_TIMESTAMP": t.WriteStart, p + "_F_CLOSE_START_TIMESTAMP": t.CloseStart,
		p + "_F_OPEN_END_TIMESTAMP": t.OpenEnd, p + "_F_READ_END_TIMESTAMP": t.ReadEnd,
		p + "_F_WRITE_END_TIMESTAMP": t.WriteEnd, p + "_F_CLOSE_END_TIMESTAMP": t.CloseEnd,
		p + "_F_READ_TIME": t.ReadTime, p + "_F_WRITE_TIME": t.WriteTime, p + "_F_META_TIME": t.MetaTime,
		p + "_F_MAX_READ_TIME": t.MaxReadTime, p + "_F_MAX_WRITE_TIME": t.MaxWriteTime,
	}
}

// Counters returns the record's integer counters under Darshan's names.
func (r *Stdio) Counters() map[string]int64 {
	return map[string]int64{
		"STDIO_OPENS": r.Opens, "STDIO_FDOPENS": r.Fdopens, "STDIO_READS": r.Reads, "STDIO_WRITES": r.Writes,
		"STDIO_SEEKS": r.Seeks, "STDIO_FLUSHES": r.Flushes, "STDIO_BYTES_READ": r.BytesRead,
		"STDIO_BYTES_WRITTEN": r.BytesWritten, "STDIO_MAX_BYTE_READ": r.MaxByteRead, "STDIO_MAX_BYTE_WRITTEN": r.MaxByteWritten,
	}
}

// FCounters returns the record's times under Darshan's names.
func (r *Stdio) FCounters() map[string]float64 { return fcounters("STDIO", &r.Times) }
