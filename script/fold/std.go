package fold

// The standard streams a program inherits and uses without a trace
// showing them opened are declared with quiet inherits. Where the main
// thread uses one that nothing touched before, the lowerer leaves its
// declaration to Convert, which puts it at the start of the rank's
// program and, so that ranks' programs stay alike (rank 0 often prints
// and the others do not), also declares it on every rank that never
// touches that stream and does not use the name. A quiet inherit makes no
// event and descriptors 0 to 2 are below those a script gives, so
// declaring one that a rank never uses changes nothing it does.

// stdLeaf is the quiet inherit of descriptor fd on path as name.
func stdLeaf(in *interner, fd int32, path, name string) *stmt {
	b := &lb{}
	b.l.hidden = -1
	b.l.cmd, b.l.operand, b.l.path, b.l.handle, b.l.opens = "inherit", oPath, b.str(path), name, name
	b.arg("fd", int64(fd), kInt)
	b.opt("flags", 0, kOFlags, 0)
	b.opt("at", 0, kSize, 0)
	b.word("quiet", "")
	b.opt("thread", 0, kInt, 0)
	l := b.l
	l.args = append([]argT(nil), b.l.args...)
	t := in.leaf(&l, b.kinds)
	holes := make([]poly, len(b.h))
	for i, v := range b.h {
		holes[i] = constPoly(v)
	}
	return &stmt{kind: tLeaf, t: t, holes: holes, gaps: []gap{{n: 1}}}
}

// stdUse is what a rank's lowerer saw of the standard streams.
type stdUse struct {
	hoisted [3]*stdDecl
	touched [3]bool
	kinds   map[string]bool // every handle name the rank used
}

// hoistStd puts the declarations of the standard streams at the start of
// every rank's program (see above).
func hoistStd(in *interner, lists [][]*stmt, lws []stdUse) {
	var first [3]*stdDecl
	for _, lw := range lws {
		for fd, d := range lw.hoisted {
			if d != nil && first[fd] == nil {
				first[fd] = d
			}
		}
	}
	for i, lw := range lws {
		var pre []*stmt
		for fd := range 3 {
			d := lw.hoisted[fd]
			if d == nil && first[fd] != nil && !lw.touched[fd] {
				if _, used := lw.kinds[first[fd].name]; !used {
					d = first[fd]
				}
			}
			if d != nil {
				pre = append(pre, stdLeaf(in, int32(fd), d.path, d.name))
			}
		}
		if len(pre) > 0 {
			lists[i] = append(pre, lists[i]...)
		}
	}
}
