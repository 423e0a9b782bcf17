package access

import (
	"cmp"
	"slices"
)

// Reduce folds the per-rank records of every file that all nprocs ranks
// have a record of into one record of rank -1, as Darshan does at the end
// of a job (files only some ranks used keep a record per rank). Records
// are returned by file, then rank. Reduce changes the records it folds.
func Reduce(recs []*Posix, nprocs int) []*Posix {
	return reduce(recs, nprocs, func(r *Posix) (string, int) { return r.File, r.Rank }, reducePosix,
		func(r *Posix) { r.Rank = -1 })
}

// ReduceMPIIO is Reduce for MPI-IO records.
func ReduceMPIIO(recs []*MPIIO, nprocs int) []*MPIIO {
	return reduce(recs, nprocs, func(r *MPIIO) (string, int) { return r.File, r.Rank }, reduceMPIIO,
		func(r *MPIIO) { r.Rank = -1 })
}

// ReduceStdio is Reduce for STDIO records.
func ReduceStdio(recs []*Stdio, nprocs int) []*Stdio {
	return reduce(recs, nprocs, func(r *Stdio) (string, int) { return r.File, r.Rank }, func(a, b *Stdio) {
		a.Opens += b.Opens
		a.Fdopens += b.Fdopens
		a.Reads += b.Reads
		a.Writes += b.Writes
		a.Seeks += b.Seeks
		a.Flushes += b.Flushes
		a.BytesRead += b.BytesRead
		a.BytesWritten += b.BytesWritten
		a.MaxByteRead = max(a.MaxByteRead, b.MaxByteRead)
		a.MaxByteWritten = max(a.MaxByteWritten, b.MaxByteWritten)
		reduceTimes(&a.Times, &b.Times)
	}, func(r *Stdio) { r.Rank = -1 })
}

// Fold returns records of one file folded into one (rank -1) as Darshan's
// reduction folds them, whichever ranks they are of; it changes none of
// them.
func Fold(recs []*Posix) *Posix {
	acc := *recs[0]
	for _, r := range recs[1:] {
		reducePosix(&acc, r)
	}
	acc.Rank = -1
	return &acc
}

func reduce[R any](recs []*R, nprocs int, key func(*R) (string, int), fold func(a, b *R), shared func(*R)) []*R {
	by := map[string][]*R{}
	var files []string
	for _, r := range recs {
		f, _ := key(r)
		if by[f] == nil {
			files = append(files, f)
		}
		by[f] = append(by[f], r)
	}
	slices.Sort(files)
	var out []*R
	for _, f := range files {
		rs := by[f]
		slices.SortFunc(rs, func(a, b *R) int {
			_, ra := key(a)
			_, rb := key(b)
			return cmp.Compare(ra, rb)
		})
		ranks := map[int]bool{}
		for _, r := range rs {
			_, rk := key(r)
			ranks[rk] = true
		}
		if nprocs > 1 && len(ranks) == nprocs && len(rs) == nprocs {
			acc := rs[0]
			for _, r := range rs[1:] {
				fold(acc, r)
			}
			shared(acc)
			out = append(out, acc)
			continue
		}
		out = append(out, rs...)
	}
	return out
}

func minNonZero(a, b float64) float64 {
	if (b < a && b > 0) || a == 0 {
		return b
	}
	return a
}

func reduceTimes(a, b *Times) {
	a.OpenStart = minNonZero(a.OpenStart, b.OpenStart)
	a.ReadStart = minNonZero(a.ReadStart, b.ReadStart)
	a.WriteStart = minNonZero(a.WriteStart, b.WriteStart)
	a.CloseStart = minNonZero(a.CloseStart, b.CloseStart)
	a.OpenEnd = max(a.OpenEnd, b.OpenEnd)
	a.ReadEnd = max(a.ReadEnd, b.ReadEnd)
	a.WriteEnd = max(a.WriteEnd, b.WriteEnd)
	a.CloseEnd = max(a.CloseEnd, b.CloseEnd)
	a.ReadTime += b.ReadTime
	a.WriteTime += b.WriteTime
	a.MetaTime += b.MetaTime
	if b.MaxReadTime > a.MaxReadTime {
		a.MaxReadTime, a.MaxReadTimeSize = b.MaxReadTime, b.MaxReadTimeSize
	}
	if b.MaxWriteTime > a.MaxWriteTime {
		a.MaxWriteTime, a.MaxWriteTimeSize = b.MaxWriteTime, b.MaxWriteTimeSize
	}
}

// reducePosix folds b into a as Darshan's posix_record_reduction_op.
func reducePosix(a, b *Posix) {
	a.Opens += b.Opens
	a.Filenos += b.Filenos
	a.Dups += b.Dups
	a.Reads += b.Reads
	a.Writes += b.Writes
	a.Seeks += b.Seeks
	a.Stats += b.Stats
	a.Fsyncs += b.Fsyncs
	a.Fdsyncs += b.Fdsyncs
	a.RenameSources += b.RenameSources
	a.RenameTargets += b.RenameTargets
	a.BytesRead += b.BytesRead
	a.BytesWritten += b.BytesWritten
	a.MaxByteRead = max(a.MaxByteRead, b.MaxByteRead)
	a.MaxByteWritten = max(a.MaxByteWritten, b.MaxByteWritten)
	a.ConsecReads += b.ConsecReads
	a.ConsecWrites += b.ConsecWrites
	a.SeqReads += b.SeqReads
	a.SeqWrites += b.SeqWrites
	a.RWSwitches += b.RWSwitches
	a.FileNotAligned += b.FileNotAligned
	a.Aligned4K += b.Aligned4K
	a.Aligned1M += b.Aligned1M
	for i := range a.SizeRead {
		a.SizeRead[i] += b.SizeRead[i]
		a.SizeWrite[i] += b.SizeWrite[i]
	}
	a.Strides = mergeCommons(a.Strides, b.Strides)
	a.Accesses = mergeCommons(a.Accesses, b.Accesses)
	reduceTimes(&a.Times, &b.Times)
	a.RankExtremes.reduce(&b.RankExtremes)
}

// reduceMPIIO folds b into a as Darshan's mpiio_record_reduction_op.
func reduceMPIIO(a, b *MPIIO) {
	a.IndepOpens += b.IndepOpens
	a.CollOpens += b.CollOpens
	a.IndepReads += b.IndepReads
	a.IndepWrites += b.IndepWrites
	a.CollReads += b.CollReads
	a.CollWrites += b.CollWrites
	a.SplitReads += b.SplitReads
	a.SplitWrites += b.SplitWrites
	a.NBReads += b.NBReads
	a.NBWrites += b.NBWrites
	a.Syncs += b.Syncs
	a.Views += b.Views
	a.BytesRead += b.BytesRead
	a.BytesWritten += b.BytesWritten
	a.RWSwitches += b.RWSwitches
	for i := range a.SizeReadAgg {
		a.SizeReadAgg[i] += b.SizeReadAgg[i]
		a.SizeWriteAgg[i] += b.SizeWriteAgg[i]
	}
	a.Accesses = mergeCommons(a.Accesses, b.Accesses)
	reduceTimes(&a.Times, &b.Times)
	a.RankExtremes.reduce(&b.RankExtremes)
}
