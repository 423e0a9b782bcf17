package script

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// seeds holds every construct of the language, and some mistakes.
var seeds = []string{
	"",
	"# only a comment\n",
	"param T = 60s\nparam mpart = 2MiB\nparam name = \"x\"\ngroup writers = 4\ngroup readers\n",
	"let x = 1 + 2 * 3 - 4 / 2 % 3 ^ 2\nx = -x\nlet b = !(x < 3) && x >= 2 || x != 1 == true\n",
	"let s = \"out.$rank\"\nlet t = \"${s}.dat\"\nlet u = \"a\\\"b\\\\c\\$d\\n\\te\" + \"${rank % 4}x\"\n",
	"let sizes = 1B + 2kB + 3MB + 4GB + 5TB + 1KiB + 2MiB + 3GiB + 1TiB + 0x10 + 0o17 + 0b101 + 1_000\n",
	"let d = 10s + 500ms + 20us + 1m + 2h + 5ns + 1.5s\nlet k = 2.5KiB\n",
	"repeat 10 as i {\n    repeat i + 1 as j {\n        write \"f\" at (i * 10 + j) * 4KiB size 4KiB\n    }\n}\n",
	"repeat for 10s as i {\n    sleep 1ms\n}\nrepeat for 1m {\n}\n",
	"if rank == 0 {\n    barrier\n} else if rank == 1 {\n    bcast 8 root 1\n} else {\n    reduce 8\n}\n",
	"group g = 2\non g {\n    gather 4 root 0\n    scatter 4\n    allgather 4\n    alltoall 4\n    allreduce 8\n}\n",
	"time \"dump 3\" {\n    mark \"here\"\n}\n",
	"read \"a\" size 1\nread \"a\" at 8 size 1\nwrite \"a\" size 2\nappend \"a\" size 3\ncreate \"b\" mode 0o600\ndelete \"b\"\nrename \"a\" to \"c\"\nlookup \"c\"\nstat \"c\"\nmkdir \"d\" mode 0o700\nrmdir \"d\"\ntruncate \"c\" to 0\n",
	"open \"f\" as fh flags O_RDWR | O_CREAT | O_TRUNC mode 0o644\nwrite fh size 10\nwrite fh at 100 size 10\nread fh size 5\nread fh at 0 size 5\nseek fh to 0\nseek fh to -1 from end\nseek fh to 4 from current\nsync fh\ndatasync fh\ntruncate fh to 10\nstat fh\nclose fh\n",
	"mpiopen \"p\" as pf flags MPI_MODE_CREATE | MPI_MODE_RDWR\nview pf disp rank * 1MiB block 1MiB stride nranks * 1MiB\nwrite pf size 1MiB all\nwrite pf at 0 size 1 all\nwrite pf at 0 size 1\nwrite pf size 1\nread pf size 1 shared\nwrite pf size 1 ordered\nseek pf to 0\nseek pf to 0 shared\nsync pf\ntruncate pf to 0\nview pf\nclose pf\nmpiopen \"q\" as qf self\nclose qf\n",
	"send 1KiB to (rank + 1) % nranks tag 3\nrecv 1KiB from any tag any\n",
	"repeat nranks - 1 as i {\n    sendrecv 4B with xor(rank, i + 1) tag 1\n}\n",
	"open \"f\" as f flags O_RDWR call openat\nread f size 4KiB ret 100\nwrite f size 30 iov 2 flags 4 call pwritev2 ret -EIO\ndup f as g call dup3 flags O_CLOEXEC\nstat g flags 0x1000 call fstatat\nseek f to 0 from end ret 5000\nclose g call fclose\nclose f\nstat \"x\" ret -ENOENT\nmpiopen \"m\" as m\nwrite m size 8 elements 2 ret 4\nclose m\n",
	"param l = [1KiB, 32KiB + 8,\n    1MiB]\nlet n = [0, 0, 0]\nrepeat len(l) as i {\n    n[i] = n[i] + l[i]\n    write \"f\" size [l[i]][0]\n}\nmark \"$n ${l[2]}\"\n",
	"let m = max(1, 2, min(3, 4)) + abs(-5)\nlet p = pad(7, 3)\ngroup g\nlet z = size(g) + first(g)\n",
	"repeat 3 { write \"x\" size 1 }; barrier; barrier\n",
	"if true { # trailing\n    # leading\n\n    barrier # after\n    # end of block\n}\n\n\n# end of file\n",
	"if x {\n}\nelse {\n}\n",
	"write f at 0 size 4KiB\n",
	"repeat 10 write\n",
	"let x = (1 +\n  2)\n",
	"let x = 1 +\n    2\n",
	"\"unterminated\n",
	"let x = 0644\n",
	"let x = 4KB\n",
	"let x = a < b < c\n",
	"param p = rank\n",
	"on nobody { barrier }\n",
	"let x = \"${rank\"\n",
	"let x = -2^2 + (-2)^2 + 2^-1 + 2^3^2\n",
	"inherit \"/dev/pts/0\" as out fd 1 flags O_WRONLY | O_APPEND at 10\ninherit \"\" as pipe fd 7 quiet thread 2\nopen \"a\" as a fd 5 thread 1\nfork 3 flags CLONE_FILES\nclone 4 thread 3\nwrite a size 1 pos 9 thread 4\ndup a as b call dup2 fd 1\ndup a as c call fcntl flags F_DUPFD_CLOEXEC arg 10\nfcntl a cmd F_SETFL arg O_APPEND\ncopy a to b at 0 outat 4KiB size 1 call splice flags 4\ncopy pipe to b size 8 pos 0 outpos 0\nallocate a at 0 size 1MiB flags 1\nadvise a size 0 advice POSIX_FADV_DONTNEED\nmap a at 0 size 4KiB prot PROT_READ | PROT_WRITE flags MAP_SHARED\nreaddir a size 32KiB ret 0\nseek a to 0 from hole ret 100\nsync\nsync a call syncfs thread 3\nexec \"/bin/sh\" thread 3\nexit ret 1 thread 3\ncloserange 3 to 4294967295 flags CLOSE_RANGE_CLOEXEC\nlink \"a\" to \"b\" call linkat flags AT_SYMLINK_FOLLOW\nsymlink \"l\" target \"../a\"\nreadlink \"l\" size 4KiB ret 4\nfork 9 ret -EAGAIN\nbcast 8 root 0 elements 1 thread 1\nrecv 8 from any elements 2\n",
	"open \"a\" as a\nfork 1\nclose a thread 1\nwrite a size 1 thread 1\n",
	"copy a to b size 1\n",
	"fcntl x cmd F_DUPFD\n",
	"open \"a\" as a\ndup a as b call fcntl flags 1\nwrite b size 1\ndup a as a call dup2 fd 3\nseek a to 2 from end\nwrite a size 1\n",
	"inherit \"x\" as x\n",
	"split as half color rank % 2 key -rank\nbarrier comm half\nbcast 8 root 1 comm half elements 1\nsplit as d call MPI_Comm_dup comm half\nallreduce 16 comm d\nsplit as low color rank / 2 - 1 id 77\nsend 8 to 2 tag 1 call MPI_Isend\nrecv 8 from 1 tag 2 anysource anytag call MPI_Irecv\nwait 2 call MPI_Waitall\nsendrecv 8 with 1 comm low\nmpiopen \"f\" as f comm half\nclose f\n",
}

func addSeeds(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	files, _ := filepath.Glob("testdata/*.iop")
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
}

// FuzzParse checks that the parser never panics, that a parsed script
// formats into text that parses to the same tree, and that formatting is
// idempotent. The checker runs on every tree that parses.
func FuzzParse(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		file, err := Parse("fuzz.iop", src)
		if err != nil {
			if _, ok := err.(ErrorList); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		out := Format(file)
		again, err := Parse("fuzz.iop", out)
		if err != nil {
			t.Fatalf("formatted script does not parse: %v\ninput:\n%s\nformatted:\n%s", err, src, out)
		}
		if a, b := dump(file), dump(again); a != b {
			t.Fatalf("trees differ after formatting\ninput:\n%s\nformatted:\n%s\nbefore: %s\nafter:  %s", src, out, a, b)
		}
		if out2 := Format(again); !bytes.Equal(out, out2) {
			t.Fatalf("formatting is not idempotent\nfirst:\n%s\nsecond:\n%s", out, out2)
		}
		Check(file)
	})
}

// FuzzExpand runs scripts that check, on two ranks with a step budget, to
// find panics in the interpreter and the world that times it.
func FuzzExpand(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		p, err := Compile("fuzz.iop", src)
		if err != nil {
			return
		}
		in, err := p.Instantiate(Config{Ranks: 3, Groups: nil})
		if err != nil {
			return
		}
		in.budget = 20000
		x := in.Expand()
		buf := make([]trace.Event, 64)
		for _, r := range x.Ranks() {
			s, err := x.Rank(r)
			if err != nil {
				t.Fatal(err)
			}
			for range 100 {
				if _, err := s.ReadEvents(buf); err != nil {
					break
				}
			}
		}
	})
}
