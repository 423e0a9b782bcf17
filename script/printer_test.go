package script

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFormatCanonical(t *testing.T) {
	in := `# header comment


param   T=60s   # measure
param mpart = 2MiB
group writers=nranks/2
group readers
let x=(1+2)*3 ; let y = x-(2-1)
let s="${x}y$x-${ rank+1 }\t\$"
repeat 4 as i{ write "f.$rank" size 4KiB at i*4KiB }
if rank==0{barrier}
else   if rank == 1 {

   # about bcast

   bcast 8 root 0 # trailing
   # end of else-if block
}
else { }
on writers {
  mpiopen "p" self flags MPI_MODE_RDWR as pf
  write pf size 1 all at 0
  close pf
}
time "t" {}
let p = -2^2 + (-2)^2 + 2^-1 + 2^3^2
let q = a+(b+c)-(d-e)
let b = !(x<3) && (x>1 || x==2)


# the end
`
	want := `# header comment

param T = 60s # measure
param mpart = 2MiB
group writers = nranks / 2
group readers
let x = (1 + 2) * 3
let y = x - (2 - 1)
let s = "${x}y$x-${rank + 1}\t\$"
repeat 4 as i {
    write "f.$rank" at i * 4KiB size 4KiB
}
if rank == 0 {
    barrier
} else if rank == 1 {
    # about bcast

    bcast 8 root 0 # trailing
    # end of else-if block
} else {}
on writers {
    mpiopen "p" as pf flags MPI_MODE_RDWR self
    write pf at 0 size 1 all
    close pf
}
time "t" {}
let p = -2^2 + (-2)^2 + 2^-1 + 2^3^2
let q = a + (b + c) - (d - e)
let b = !(x < 3) && (x > 1 || x == 2)

# the end
`
	got, err := FormatSource("t.iop", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	again, err := FormatSource("t.iop", got)
	if err != nil || string(again) != string(got) {
		t.Errorf("not idempotent (%v):\n%s", err, again)
	}
}

// TestFormatTestdata pins the example scripts to their canonical form.
func TestFormatTestdata(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.iop")
	if len(files) < 2 {
		t.Fatalf("testdata has %d scripts", len(files))
	}
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := FormatSource(name, src)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(src) {
			t.Errorf("%s is not in canonical form; formatted:\n%s", name, got)
		}
		if _, err := Load(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestRoundTrip parses every seed, formats it and parses it again: the
// trees must be the same.
func TestRoundTrip(t *testing.T) {
	n := 0
	for _, src := range seeds {
		f, err := Parse("t.iop", []byte(src))
		if err != nil {
			continue
		}
		n++
		out := Format(f)
		g, err := Parse("t.iop", out)
		if err != nil {
			t.Fatalf("%q: formatted text does not parse: %v\n%s", src, err, out)
		}
		if a, b := dump(f), dump(g); a != b {
			t.Errorf("%q: trees differ\n%s\n%s", src, a, b)
		}
	}
	if n < 20 {
		t.Errorf("only %d seeds parse", n)
	}
}

// TestBuildAndPrint builds a tree in Go, as a converter does, and prints it.
func TestBuildAndPrint(t *testing.T) {
	i := &Ident{Name: "i"}
	f := &File{Stmts: []Stmt{
		&ParamStmt{Name: &Ident{Name: "n"}, Value: Int(8)},
		&RepeatStmt{Count: &Ident{Name: "n"}, As: i, Body: &Block{Stmts: []Stmt{
			&CommandStmt{Name: "write", Operand: &StringLit{Parts: []StrPart{{Lit: "out."}, {Expr: &Ident{Name: "rank"}}}},
				Args: []*Arg{{Key: "size", Value: Size(4096)}, {Key: "at", Value: &BinaryExpr{Op: "*", X: i,
					Y: &BinaryExpr{Op: "+", X: Size(1 << 20), Y: Int(1)}}}}},
			&CommandStmt{Name: "sleep", Operand: Duration(1500000)},
		}}},
	}}
	want := "param n = 8\nrepeat n as i {\n    write \"out.$rank\" at i * (1MiB + 1) size 4KiB\n    sleep 1500us\n}\n"
	if got := string(Format(f)); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if _, err := Compile("built.iop", Format(f)); err != nil {
		t.Error(err)
	}
}
