package darshan

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/trace/access"
)

// logOf makes the Darshan log of a workload: its counters as trace/access
// counts them, reduced as Darshan reduces them.
func logOf(t *testing.T, src string, ranks int) *Log {
	t.Helper()
	prog, err := script.Compile("w.iop", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	exp, err := script.Expand(prog, script.Config{Ranks: ranks})
	if err != nil {
		t.Fatal(err)
	}
	ps, ms, ss, err := access.FromTraceAll(exp, access.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := &Log{Name: "w", Version: "3.41", NProcs: ranks, RunTime: 1}
	for _, p := range access.Reduce(ps, ranks) {
		l.Records = append(l.Records, &Record{Module: "POSIX", Rank: p.Rank, File: p.File, Counters: p.Counters(), FCounters: p.FCounters()})
	}
	for _, m := range access.ReduceMPIIO(ms, ranks) {
		l.Records = append(l.Records, &Record{Module: "MPI-IO", Rank: m.Rank, File: m.File, Counters: m.Counters(), FCounters: m.FCounters()})
	}
	for _, s := range access.ReduceStdio(ss, ranks) {
		l.Records = append(l.Records, &Record{Module: "STDIO", Rank: s.Rank, File: s.File, Counters: s.Counters(), FCounters: s.FCounters()})
	}
	return l
}

// TestScriptGivesBackIORPatterns: IOR-like workloads of random shapes —
// shared file or file per process, transfer and block sizes, segments,
// lseek+write or pwrite, reads or not, and reads of a file written before
// — counted as Darshan counts them, become scripts that give every
// honoured counter back.
func TestScriptGivesBackIORPatterns(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 200
	if testing.Short() {
		n = 15
	}
	for i := range n {
		ranks := 1 + r.IntN(4)
		tsize := []int{100, 1000, 4096, 65536, 3 << 20}[r.IntN(5)]
		k := 1 + r.IntN(6)
		segs := 1 + r.IntN(3)
		shared := r.IntN(2) == 0
		seek := r.IntN(2) == 0
		read := r.IntN(3) > 0
		name := `"out.$rank"`
		stride := k * tsize
		base := "seg * " + fmt.Sprint(stride)
		if shared {
			name = `"shared"`
			base = fmt.Sprintf("(seg * nranks + rank) * %d", stride)
		}
		op := func(verb string) string {
			if seek {
				return fmt.Sprintf("seek f to %s + i * %d\n        %s f size %d", base, tsize, verb, tsize)
			}
			return fmt.Sprintf("%s f at %s + i * %d size %d", verb, base, tsize, tsize)
		}
		src := fmt.Sprintf(`open %s as f flags O_RDWR | O_CREAT mode 0o644
repeat %d as seg {
    repeat %d as i {
        %s
    }
}
close f
`, name, segs, k, op("write"))
		if read {
			src += fmt.Sprintf(`open %s as f flags O_RDONLY
repeat %d as seg {
    repeat %d as i {
        %s
    }
}
close f
`, name, segs, k, op("read"))
		}
		t.Run(fmt.Sprintf("%d-%dranks-t%d-k%d-s%d-shared%v-seek%v-read%v", i, ranks, tsize, k, segs, shared, seek, read), func(t *testing.T) {
			l := logOf(t, src, ranks)
			res, err := Script(l, "w")
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range res.Off {
				t.Errorf("%s", m)
			}
			if t.Failed() {
				t.Logf("workload:\n%s\nscript:\n%s", src, res.Script)
			}
		})
	}
}

func TestAlignedIn(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		off, size, n := r.Int64N(100000), r.Int64N(9000), r.Int64N(300)
		a := []int64{1, 2, 512, 4096, 1 << 20, 3000}[r.IntN(6)]
		var want int64
		for i := range n {
			if (off+i*size)%a == 0 {
				want++
			}
		}
		if got := alignedIn(off, size, n, a); got != want {
			t.Fatalf("alignedIn(%d, %d, %d, %d) = %d, want %d", off, size, n, a, got, want)
		}
	}
}

// TestScriptGivesBackMPIIOPatterns: collective and independent MPI-IO
// workloads of random shapes, and POSIX ones of many sizes (more than
// four: the common sizes are then not all of them), give their counters
// back.
func TestScriptGivesBackMPIIOPatterns(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 60 {
		ranks := 1 + r.IntN(4)
		tsize := []int{100, 4096, 65536, 1 << 20}[r.IntN(4)]
		k := 1 + r.IntN(6)
		all := []string{"", " all"}[r.IntN(2)]
		read := r.IntN(2) == 0
		src := fmt.Sprintf(`mpiopen "m" as f flags MPI_MODE_CREATE | MPI_MODE_RDWR
repeat %d as i {
    write f at (rank * %d + i) * %d size %d%s
}
close f
`, k, k, tsize, tsize, all)
		if read {
			src += fmt.Sprintf(`mpiopen "m" as f flags MPI_MODE_RDONLY
repeat %d as i {
    read f at (rank * %d + i) * %d size %d%s
}
close f
`, k, k, tsize, tsize, all)
		}
		t.Run(fmt.Sprintf("mpiio-%d-%dranks-t%d-k%d%s-read%v", i, ranks, tsize, k, all, read), func(t *testing.T) {
			l := logOf(t, src, ranks)
			res, err := Script(l, "w")
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range res.Off {
				t.Errorf("%s", m)
			}
			if t.Failed() {
				t.Logf("workload:\n%s\nscript:\n%s", src, res.Script)
			}
		})
	}
	for i := range 40 {
		ranks := 1 + r.IntN(3)
		n := 2 + r.IntN(12)
		var sizes []string
		for range n {
			sizes = append(sizes, fmt.Sprint(1+r.IntN(70000)))
		}
		src := fmt.Sprintf(`let sz = [%s]
let off = 0
open "f.$rank" as f flags O_RDWR | O_CREAT mode 0o644
repeat len(sz) as i {
    write f at off size sz[i]
    off = off + sz[i]
}
close f
`, strings.Join(sizes, ", "))
		t.Run(fmt.Sprintf("sizes-%d-%dranks-%d", i, ranks, n), func(t *testing.T) {
			l := logOf(t, src, ranks)
			res, err := Script(l, "w")
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range res.Off {
				t.Errorf("%s", m)
			}
			if t.Failed() {
				t.Logf("workload:\n%s\nscript:\n%s", src, res.Script)
			}
		})
	}
}

// TestScriptGivesBackStdioPatterns: stream workloads (fopen, fwrite,
// fread, fseek, fflush, fclose) of random shapes give their STDIO counters
// back.
func TestScriptGivesBackStdioPatterns(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 60 {
		ranks := 1 + r.IntN(3)
		n := 1 + r.IntN(20)
		sz := 1 + r.IntN(9000)
		flush := r.IntN(3)
		read := r.IntN(2) == 0
		gap := r.IntN(2) == 0
		name := `"log.$rank"`
		if r.IntN(2) == 0 {
			name = `"shared.log"`
		}
		src := fmt.Sprintf(`open %s as s flags O_WRONLY | O_CREAT | O_TRUNC mode 0o666 call fopen
repeat %d {
    write s size %d call fwrite
}
repeat %d {
    sync s call fflush
}
`, name, n, sz, flush)
		if gap {
			src += fmt.Sprintf("seek s to %d call fseek\nwrite s size %d call fwrite\n", n*sz+5000, sz)
		}
		src += "close s call fclose\n"
		if read {
			src += fmt.Sprintf(`open %s as s flags O_RDONLY call fopen
repeat %d {
    read s size %d call fread
}
close s call fclose
`, name, n, sz)
		}
		t.Run(fmt.Sprintf("stdio-%d-%dranks-n%d-sz%d-flush%d-read%v-gap%v-%s", i, ranks, n, sz, flush, read, gap, name), func(t *testing.T) {
			l := logOf(t, src, ranks)
			res, err := Script(l, "w")
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range res.Off {
				t.Errorf("%s", m)
			}
			nstdio := 0
			for _, rec := range l.Records {
				if rec.Module == "STDIO" {
					nstdio++
				}
			}
			if nstdio == 0 || res.Counters < 9*nstdio || !strings.Contains(string(res.Script), "call fwrite") {
				t.Errorf("%d STDIO records, %d counters compared", nstdio, res.Counters)
			}
			if t.Failed() {
				t.Logf("workload:\n%s\nscript:\n%s", src, res.Script)
			}
		})
	}
}
