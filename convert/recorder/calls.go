package recorder

import (
	"strings"

	"github.com/iotrace/iotrace/trace"
	"github.com/iotrace/iotrace/trace/state"
)

// The calls Recorder records, as events. Recorder prints each call's
// arguments in the order of its C signature; a descriptor as the path it
// was opened on, a FILE* stream the same way, pointers as "%p". It does
// not record results: a read or write is taken to have moved what it
// asked, a call to have succeeded.

// posixOps are the POSIX calls that map to one op with the path as their
// first argument and nothing else of note.
var posixOps = map[string]trace.Op{
	"fsync": trace.OpFsync, "fdatasync": trace.OpFdatasync, "rmdir": trace.OpRmdir,
	"unlink": trace.OpUnlink, "remove": trace.OpUnlink,
}

// fdOf returns the descriptor a call names by its path (Recorder prints
// descriptors as the paths they were opened on): the highest one open on
// it in the thread's process, as the rank's follower knows them, or the
// lowest free one, which the follower learns at this call.
func (s *source) fdOf(th uint32, path trace.PathID) int32 {
	fd := int32(-1)
	s.follow.Each(th, func(n int32, d *state.Desc[struct{}]) {
		if d.Path == path && n > fd {
			fd = n
		}
	})
	if fd >= 0 {
		return fd
	}
	return s.follow.Free(th, 3)
}

func (s *source) pos(th uint32, fd int32) int64 {
	if d := s.follow.Lookup(th, fd); d != nil && d.Pos >= 0 {
		return d.Pos
	}
	return 0
}

// fopenFlags are the open flags of an fopen mode string.
func fopenFlags(mode string) uint32 {
	var f uint32
	switch {
	case strings.HasPrefix(mode, "r"):
		f = trace.ORdonly
	case strings.HasPrefix(mode, "w"):
		f = trace.OWronly | trace.OCreat | trace.OTrunc
	case strings.HasPrefix(mode, "a"):
		f = trace.OWronly | trace.OCreat | trace.OAppend
	}
	if strings.Contains(mode, "+") {
		f = f&^3 | trace.ORdwr
	}
	return f
}

// call fills e (start, duration, rank and thread set) from sg.
func (s *source) call(e *trace.Event, sg *sig) {
	t := s.t
	fn := t.h.name(sg)
	args := sg.args
	a := func(i int) int64 { return argInt(args, i) }
	path := func(i int) trace.PathID {
		p := arg(args, i)
		if p == "" || p == "%p" {
			return 0
		}
		return t.paths.Intern(p)
	}
	th := e.Thread
	data := func(op trace.Op, pi int, n int64, off int64, explicit bool) {
		e.Op, e.Path = op, path(pi)
		e.FD = s.fdOf(th, e.Path)
		e.Size, e.Ret = n, n
		if explicit {
			e.Offset = off
		} else {
			e.Offset = s.pos(th, e.FD)
		}
	}
	switch fn {
	case "open", "open64":
		e.Op, e.Path, e.Flags, e.Mode = trace.OpOpen, path(0), uint32(a(1)), uint32(a(2))
		e.Ret = int64(s.follow.Free(th, 3))
	case "creat", "creat64":
		e.Op, e.Path, e.Flags, e.Mode = trace.OpCreat, path(0), trace.OWronly|trace.OCreat|trace.OTrunc, uint32(a(1))
		e.Ret = int64(s.follow.Free(th, 3))
	case "fopen", "fopen64":
		e.Op, e.Path, e.Flags = trace.OpFopen, path(0), fopenFlags(arg(args, 1))
		if e.Flags&trace.OCreat != 0 {
			e.Mode = 0o666
		}
		e.Ret = int64(s.follow.Free(th, 3))
	case "close", "fclose":
		e.Op, e.Path = trace.OpClose, path(0)
		if fn == "fclose" {
			e.Op = trace.OpFclose
		}
		e.FD = s.fdOf(th, e.Path)
	case "write":
		data(trace.OpWrite, 0, a(2), 0, false)
	case "read":
		data(trace.OpRead, 0, a(2), 0, false)
	case "pwrite", "pwrite64":
		data(trace.OpPwrite, 0, a(2), a(3), true)
	case "pread", "pread64":
		data(trace.OpPread, 0, a(2), a(3), true)
	case "fwrite":
		data(trace.OpFwrite, 3, a(1)*a(2), 0, false)
		e.Count = int32(a(2))
	case "fread":
		data(trace.OpFread, 3, a(1)*a(2), 0, false)
		e.Count = int32(a(2))
	case "writev", "readv":
		// Recorder keeps the iovec count, not the sizes
		op := trace.OpWritev
		if fn == "readv" {
			op = trace.OpReadv
		}
		data(op, 0, 0, 0, false)
		e.Count = int32(a(2))
		t.note("readv/writev calls whose sizes Recorder does not record (made with size 0)")
	case "lseek", "lseek64", "fseek", "fseeko":
		e.Op, e.Path = trace.OpLseek, path(0)
		if fn == "fseek" || fn == "fseeko" {
			e.Op = trace.OpFseek
		}
		e.FD = s.fdOf(th, e.Path)
		e.Offset, e.Whence = a(1), int32(a(2))
		cur := s.pos(th, e.FD)
		switch e.Whence {
		case 0:
			e.Ret = e.Offset
		case 1:
			e.Ret = cur + e.Offset
		default:
			e.Ret = max(e.Offset, 0) // the end of the file is not recorded
			t.note("seeks from the end of a file, whose size Recorder does not record (taken as the offset)")
		}
		if e.Op == trace.OpFseek {
			e.Ret = 0
		}
	case "__xstat", "__xstat64":
		e.Op, e.Path = trace.OpStat, path(1)
	case "__lxstat", "__lxstat64":
		e.Op, e.Path = trace.OpLstat, path(1)
	case "__fxstat", "__fxstat64":
		e.Op, e.Path = trace.OpFstat, path(1)
		e.FD = s.fdOf(th, e.Path)
	case "mkdir":
		e.Op, e.Path, e.Mode = trace.OpMkdir, path(0), uint32(a(1))
	case "rename":
		e.Op, e.Path, e.Path2 = trace.OpRename, path(0), path(1)
	case "link":
		e.Op, e.Path, e.Path2 = trace.OpLink, path(0), path(1)
	case "symlink":
		e.Op, e.Path, e.Path2 = trace.OpSymlink, path(1), path(0)
	case "readlink":
		e.Op, e.Path, e.Size = trace.OpReadlink, path(0), a(2)
	case "access":
		e.Op, e.Path, e.Mode = trace.OpAccess, path(0), uint32(a(1))
	case "faccessat":
		e.Op, e.Path, e.Mode, e.FD = trace.OpAccess, path(1), uint32(a(2)), -100
	case "truncate":
		e.Op, e.Path, e.Size = trace.OpTruncate, path(0), a(1)
	case "ftruncate":
		e.Op, e.Path, e.Size = trace.OpFtruncate, path(0), a(1)
		e.FD = s.fdOf(th, e.Path)
	case "dup":
		e.Op, e.Path = trace.OpDup, path(0)
		e.FD = s.fdOf(th, e.Path)
		e.Ret = int64(s.follow.Free(th, 0))
	case "dup2":
		e.Op, e.Path = trace.OpDup2, path(0)
		e.FD = s.fdOf(th, e.Path)
		e.Ret = a(1)
	case "mmap", "mmap64":
		e.Op, e.Path, e.Size, e.Mode, e.Flags, e.Offset = trace.OpMmap, path(4), a(1), uint32(a(2)), uint32(a(3)), a(5)
		e.FD = s.fdOf(th, e.Path)
	default:
		if op, ok := posixOps[fn]; ok {
			e.Op, e.Path = op, path(0)
			if op.Info().FD == trace.FDOn {
				e.FD = s.fdOf(th, e.Path)
			}
			return
		}
		if strings.HasPrefix(fn, "MPI_File_") && s.mpiio(e, sg, fn) {
			return
		}
		if strings.HasPrefix(fn, "MPI_") && s.mpi(e, sg, fn) {
			return
		}
		s.mark(e, fn)
	}
}

// mark keeps a call iotrace has no op for as a mark with its name.
func (s *source) mark(e *trace.Event, fn string) {
	e.Op, e.Path = trace.OpMark, s.t.paths.Intern(fn)
	s.t.mu.Lock()
	s.t.marks[fn]++
	s.t.mu.Unlock()
}

// handle returns the MPI file handle Recorder names h.
func (s *source) handle(h string) int32 {
	if id, ok := s.fhs[h]; ok {
		return id
	}
	id := int32(len(s.fhs) + 1)
	s.fhs[h] = id
	return id
}

func (s *source) mpiio(e *trace.Event, sg *sig, fn string) bool {
	args := sg.args
	a := func(i int) int64 { return argInt(args, i) }
	if c, ok := mpiioData[fn]; ok {
		e.Op = c.op
		e.FD = s.handle(arg(args, 0))
		e.Size = a(c.count) * typeSize(arg(args, c.count+1))
		e.Ret, e.Count = e.Size, int32(a(c.count))
		if h := s.follow.Handle(e.FD); h != nil {
			e.Path, e.Comm = h.Path, h.Comm
			if e.Op.Info().Addr == trace.AddrIndividual {
				e.Offset = h.Pos
			}
		}
		if e.Op.Info().Addr == trace.AddrExplicit {
			e.Offset = a(1)
		}
		if typeSize(arg(args, c.count+1)) == 0 {
			s.t.note("MPI-IO calls of a datatype whose size is not known (made with size 0)")
		}
		return true
	}
	switch fn {
	case "MPI_File_open":
		// comm, filename, amode, info, fh
		e.Op = trace.OpMPIFileOpen
		e.Comm, _ = s.t.commOf(arg(args, 0), s.rank)
		e.Path = s.t.paths.Intern(arg(args, 1))
		e.Flags = uint32(a(2))
		name := arg(args, 4)
		delete(s.fhs, name)
		e.FD = s.handle(name)
	case "MPI_File_close":
		e.Op = trace.OpMPIFileClose
		e.FD = s.handle(arg(args, 0))
		if h := s.follow.Handle(e.FD); h != nil {
			e.Path, e.Comm = h.Path, h.Comm
		}
	case "MPI_File_set_view":
		// fh, disp, etype, filetype, datarep, info
		e.Op, e.FD, e.Offset = trace.OpMPIFileSetView, s.handle(arg(args, 0)), a(1)
		s.t.note("MPI_File_set_view calls whose filetype Recorder does not describe (taken as contiguous)")
	case "MPI_File_sync":
		e.Op, e.FD = trace.OpMPIFileSync, s.handle(arg(args, 0))
	case "MPI_File_seek", "MPI_File_seek_shared":
		e.Op, e.FD, e.Offset, e.Whence = trace.OpMPIFileSeek, s.handle(arg(args, 0)), a(1), int32(a(2))
		if fn == "MPI_File_seek_shared" {
			e.Op = trace.OpMPIFileSeekShared
		}
	case "MPI_File_set_size":
		e.Op, e.FD, e.Size = trace.OpMPIFileSetSize, s.handle(arg(args, 0)), a(1)
	default:
		return false
	}
	if h := s.follow.Handle(e.FD); h != nil && e.Op != trace.OpMPIFileOpen {
		e.Path, e.Comm = h.Path, h.Comm
	}
	return true
}

// world returns the world rank of rank r of a communicator.
func world(members []int, r int64) int32 {
	if members == nil || r < 0 {
		return int32(r)
	}
	if int(r) < len(members) {
		return int32(members[r])
	}
	return int32(r)
}

func (s *source) mpi(e *trace.Event, sg *sig, fn string) bool {
	args := sg.args
	a := func(i int) int64 { return argInt(args, i) }
	bytes := func(count, typ int) int64 { return a(count) * typeSize(arg(args, typ)) }
	comm := func(i int) []int {
		var m []int
		e.Comm, m = s.t.commOf(arg(args, i), s.rank)
		return m
	}
	size := func(m []int) int64 {
		if m == nil {
			return int64(s.t.h.ranks)
		}
		return int64(len(m))
	}
	switch fn {
	case "MPI_Barrier":
		e.Op = trace.OpMPIBarrier
		comm(0)
	case "MPI_Bcast": // buf, count, type, root, comm
		e.Op, e.Bytes = trace.OpMPIBcast, bytes(1, 2)
		e.Peer = world(comm(4), a(3))
	case "MPI_Reduce": // sbuf, rbuf, count, type, op, root, comm
		e.Op, e.Bytes = trace.OpMPIReduce, bytes(2, 3)
		e.Peer = world(comm(6), a(5))
	case "MPI_Allreduce": // sbuf, rbuf, count, type, op, comm
		e.Op, e.Bytes = trace.OpMPIAllreduce, bytes(2, 3)
		comm(5)
	case "MPI_Gather": // sbuf, scount, stype, rbuf, rcount, rtype, root, comm
		e.Op, e.Bytes = trace.OpMPIGather, bytes(1, 2)
		e.Peer = world(comm(7), a(6))
	case "MPI_Gatherv": // sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm
		e.Op, e.Bytes = trace.OpMPIGatherv, bytes(1, 2)
		e.Peer = world(comm(8), a(7))
	case "MPI_Scatter": // sbuf, scount, stype, rbuf, rcount, rtype, root, comm
		e.Op, e.Bytes = trace.OpMPIScatter, bytes(4, 5)
		e.Peer = world(comm(7), a(6))
	case "MPI_Scatterv": // sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm
		e.Op, e.Bytes = trace.OpMPIScatterv, bytes(5, 6)
		e.Peer = world(comm(8), a(7))
	case "MPI_Allgather": // sbuf, scount, stype, rbuf, rcount, rtype, comm
		e.Op, e.Bytes = trace.OpMPIAllgather, bytes(1, 2)
		comm(6)
	case "MPI_Allgatherv": // sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm
		e.Op, e.Bytes = trace.OpMPIAllgatherv, bytes(1, 2)
		comm(7)
	case "MPI_Alltoall": // sbuf, scount, stype, rbuf, rcount, rtype, comm
		e.Op = trace.OpMPIAlltoall
		e.Bytes = bytes(1, 2) * size(comm(6))
	case "MPI_Send", "MPI_Ssend", "MPI_Isend": // buf, count, type, dest, tag, comm[, req]
		e.Op, e.Bytes, e.Tag = trace.OpMPISend, bytes(1, 2), int32(a(4))
		if fn == "MPI_Isend" {
			e.Op = trace.OpMPIIsend
		}
		e.Peer = world(comm(5), a(3))
	case "MPI_Recv", "MPI_Irecv": // buf, count, type, source, tag, comm, status|req
		e.Op, e.Bytes, e.Tag = trace.OpMPIRecv, bytes(1, 2), int32(a(4))
		if fn == "MPI_Irecv" {
			e.Op = trace.OpMPIIrecv
		}
		e.Peer = world(comm(5), a(3))
	case "MPI_Sendrecv": // sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, status
		e.Op, e.Bytes, e.Tag = trace.OpMPISendrecv, bytes(1, 2), int32(a(4))
		m := comm(10)
		e.Peer = world(m, a(3))
		e.SetRecvFrom(world(m, a(8)), int32(a(9)))
	case "MPI_Wait":
		e.Op, e.Count = trace.OpMPIWait, 1
	case "MPI_Waitall": // count, reqs, statuses
		e.Op, e.Count = trace.OpMPIWaitall, int32(a(0))
	case "MPI_Comm_split", "MPI_Comm_split_type", "MPI_Comm_create", "MPI_Cart_create", "MPI_Cart_sub", "MPI_Comm_dup":
		e.Op = trace.OpMPICommSplit
		if fn == "MPI_Comm_dup" {
			e.Op = trace.OpMPICommDup
		}
		comm(0)
		c := s.t.comms[arg(args, newCommArg[fn])]
		switch {
		case c == nil:
			e.Ret = -1 // MPI_COMM_NULL
		case c.world:
			s.mark(e, fn)
			s.t.note("communicators of every rank, replayed as MPI_COMM_WORLD (the calls that made them are marks)")
		default:
			e.Ret = int64(c.id)
		}
	default:
		return false
	}
	return true
}
