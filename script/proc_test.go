package script

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/trace"
)

// TestProcesses: a fork copies the table (the child's copy of a handle
// shares the position; closing it leaves the parent's open), dup2 onto an
// open descriptor closes the handle that held it, exec closes the
// close-on-exec descriptors, exit ends the child, close_range closes a
// range; inherit binds a descriptor the script did not open (quiet: with
// no event); every event carries its thread.
func TestProcesses(t *testing.T) {
	wantRanks(t, `
inherit "/dev/pts/0" as out fd 1 flags O_WRONLY
inherit "/dev/null" as in fd 0 quiet
open "a" as a flags O_WRONLY | O_CREAT | O_CLOEXEC
open "b" as b flags O_WRONLY | O_CREAT
fork 7
write a size 5 thread 7
close a thread 7
write a size 3
dup b as o2 call dup2 fd 1 thread 7
write o2 size 2 thread 7
clone 8 thread 7
write o2 size 2 thread 8
exec "/bin/true" thread 7
open "c" as c thread 7
exit thread 7
write out size 1
read in size 10 ret 0
closerange 3 to 4294967295
open "c" as c
fcntl c cmd F_SETFD arg FD_CLOEXEC
fcntl c cmd F_GETFL ret 32769
dup c as d call fcntl flags F_DUPFD_CLOEXEC fd 10
sync
sync c call syncfs
close c
close d
`, Config{Ranks: 1}, map[uint32]string{0: `
	inherit /dev/pts/0 fd=1 flags=0x1 ret=1
	open a flags=O_WRONLY|O_CREAT|O_CLOEXEC mode=0644 ret=3
	open b flags=O_WRONLY|O_CREAT mode=0644 ret=4
	fork ret=7
	write a thread=7 fd=3 size=5 ret=5
	close a thread=7 fd=3
	write a fd=3 off=5 size=3 ret=3
	dup2 b thread=7 fd=4 ret=1
	write b thread=7 fd=1 size=2 ret=2
	clone thread=7 ret=8
	write b thread=8 fd=1 off=2 size=2 ret=2
	exec /bin/true thread=7
	open c thread=7 flags=O_RDWR|O_CREAT mode=0644 ret=3
	exit thread=7
	write /dev/pts/0 fd=1 size=1 ret=1
	read /dev/null size=10
	close_range fd=3 size=4294967295
	open c flags=O_RDWR|O_CREAT mode=0644 ret=3
	fcntl c fd=3 size=1 flags=0x2
	fcntl c fd=3 flags=0x3 ret=32769
	fcntl c fd=3 flags=0x406 ret=10
	sync
	syncfs c fd=3
	close c fd=3
	close c fd=10
`})
}

// TestProcessErrors: the handles of one process are not another's.
func TestProcessErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		// The child closed its copy: using it there fails when it runs.
		{"open \"a\" as a\nfork 1\nclose a thread 1\nwrite a size 1 thread 1\n", "t.iop:4:7: rank 0: a is not open (closed at 3:1)"},
		// Opened by the child only.
		{"fork 1\nopen \"a\" as a thread 1\nwrite a size 1\n", "t.iop:3:7: rank 0: a is not open"},
		// exec closed the close-on-exec descriptor.
		{"open \"a\" as a flags O_RDONLY | O_CLOEXEC\nexec \"/bin/x\"\nread a size 1\n", "t.iop:3:6: rank 0: a is not open (closed at 2:1)"},
		// dup2 onto a's descriptor closed a.
		{"open \"a\" as a\nopen \"b\" as b\ndup b as c fd 3 call dup2\nwrite a size 1\n", "t.iop:4:7: rank 0: a is not open (closed at 3:1)"},
		{"fork 1 ret 3\n", "the ret of fork must be negative"},
		{"open \"a\" as a\nfcntl a cmd F_DUPFD\n", "fcntl's dup commands make a handle"},
		// A dup through fcntl is one with a dup command only.
		{"open \"a\" as a\ndup a as b call fcntl flags F_SETFL\nwrite b size 1\n", "t.iop:2:29: rank 0: a dup through fcntl has the command F_DUPFD or F_DUPFD_CLOEXEC as its flags, got 4"},
	} {
		p, err := Compile("t.iop", []byte(c.src))
		if err != nil {
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("%q: %v, want %q", c.src, err, c.want)
			}
			continue
		}
		x, err := Expand(p, Config{Ranks: 1})
		if err != nil {
			t.Fatal(err)
		}
		s, _ := x.Rank(0)
		_, err = trace.ReadAll(s)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.src, err, c.want)
		}
	}
}

// TestProcessChecks: the checker follows the handles of the rank's main
// thread and does not guess for the others.
func TestProcessChecks(t *testing.T) {
	ok := []string{
		// A child's close leaves the parent's copy open.
		"open \"a\" as a\nfork 1\nclose a thread 1\nwrite a size 1\nclose a\n",
		// dup2 onto a's descriptor closes a: its name is free again.
		"open \"a\" as a\nopen \"b\" as b\ndup b as c fd 3 call dup2\nopen \"a\" as a\n",
		// close_range closed them.
		"open \"a\" as a\ncloserange 3 to 100\nopen \"a\" as a\n",
		"open \"a\" as a thread 2\nclose a\n",
	}
	for _, src := range ok {
		if _, err := Compile("t.iop", []byte(src)); err != nil {
			t.Errorf("%q: %v", src, err)
		}
	}
	bad := map[string]string{
		"open \"a\" as a\nclose a\nwrite a size 1\n":                      "a is used after it was closed",
		"open \"a\" as a\nfork 1\nclose a\nwrite a size 1\n":              "a is used after it was closed",
		"open \"a\" as a\ncopy a to b size 1\n":                           "undefined: b",
		"open \"a\" as a\nread a at 0 size 1 pos 3\n":                     "'pos' needs a call at the handle's position",
		"open \"a\" as a\nopen \"b\" as b\nclose b\ncopy a to b size 1\n": "b is used after it was closed",
	}
	for src, want := range bad {
		if _, err := Compile("t.iop", []byte(src)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", src, err, want)
		}
	}
}

// TestNewCalls: copies, fallocate, posix_fadvise, mmap, getdents, links.
func TestNewCalls(t *testing.T) {
	wantRanks(t, `
open "in" as in flags O_RDONLY
open "out" as out flags O_WRONLY | O_CREAT
copy in to out size 100
copy in to out at 4KiB size 100 ret 50
copy in to out outat 1MiB size 10 call sendfile
inherit "" as pipe fd 9 quiet
copy pipe to out size 8 pos 0 outpos 0 call splice flags 4
allocate out at 0 size 1MiB
allocate out at 2MiB size 1MiB flags 1
advise in size 0 advice POSIX_FADV_SEQUENTIAL
map in at 4KiB size 8KiB prot PROT_READ flags MAP_SHARED
open "dir" as d flags O_RDONLY | O_DIRECTORY
readdir d size 32KiB ret 480
readdir d size 32KiB
link "in" to "in2"
symlink "lnk" target "../in"
readlink "lnk" size 4KiB ret 5
symlink "l2" target "x" call symlinkat ret -EEXIST
`, Config{Ranks: 1}, map[uint32]string{0: `
	open in ret=3
	open out flags=O_WRONLY|O_CREAT mode=0644 ret=4
	copy_file_range in -> out fd=3 fd2=4 size=100 ret=100
	copy_file_range in -> out fd=3 off=4096 fd2=4 off2=100 size=100 flags=0x1 ret=50
	sendfile in -> out fd=3 off=100 fd2=4 off2=1048576 size=10 flags=0x2 ret=10
	splice -> out fd=9 fd2=4 size=8 flags=0x4 ret=8
	fallocate out fd=4 size=1048576
	fallocate out fd=4 off=2097152 size=1048576 flags=0x1
	posix_fadvise in fd=3 flags=0x2
	mmap in fd=3 off=4096 size=8192 flags=0x1 mode=01
	open dir flags=O_RDONLY|O_DIRECTORY ret=5
	getdents dir fd=5 size=32768 ret=480
	getdents dir fd=5 size=32768
	link in -> in2
	symlink lnk -> ../in
	readlink lnk size=4096 ret=5
	symlinkat l2 -> x ret=-17
`})
}

// TestSplit: communicators made by split are used with comm NAME: peers
// and roots are their ranks, collectives wait for their members only, a
// negative color makes none; ids are the preload capture's.
func TestSplit(t *testing.T) {
	x, evs := expandAll(t, `
split as half color rank % 2
barrier comm half
bcast 8 root 1 comm half elements 1
split as rev key nranks - 1 - rank
sendrecv 30 to (grank + 1) % gsize from (grank + gsize - 1) % gsize tag 14 comm rev
split as d call MPI_Comm_dup comm half
allreduce 16 comm d
split as low color rank / 2 - 1 id 77
send 8 to 3 tag 1 call MPI_Isend
recv 8 from 1 tag 2 anysource anytag call MPI_Irecv
wait 2 call MPI_Waitall
`, Config{Ranks: 4})
	half0 := commID(0, 0, []int{0, 2})
	if got := rankLines(x, evs[0]); !slices.Equal(got, []string{
		fmt.Sprintf("MPI_Comm_split ret=%d", half0),
		fmt.Sprintf("MPI_Barrier comm=%d", half0),
		fmt.Sprintf("MPI_Bcast peer=2 comm=%d bytes=8 count=1", half0),
		fmt.Sprintf("MPI_Comm_split ret=%d", commID(0, 1, []int{0, 1, 2, 3})),
		fmt.Sprintf("MPI_Sendrecv peer=3 tag=14 recv=1/14 comm=%d bytes=30", commID(0, 1, []int{0, 1, 2, 3})),
		fmt.Sprintf("MPI_Comm_dup comm=%d ret=%d", half0, commID(half0, 0, []int{0, 2})),
		fmt.Sprintf("MPI_Allreduce comm=%d bytes=16", commID(half0, 0, []int{0, 2})),
		"MPI_Comm_split ret=-1",
		"MPI_Isend peer=3 tag=1 bytes=8",
		"MPI_Irecv flags=0x3 peer=1 tag=2 bytes=8",
		"MPI_Waitall count=2",
	}) {
		t.Errorf("rank 0:\n%s", strings.Join(got, "\n"))
	}
	if got := rankLines(x, evs[3])[7]; got != "MPI_Comm_split ret=77" {
		t.Errorf("rank 3's split of color 0: %s", got)
	}
}
