package script

import (
	"github.com/iotrace/iotrace/trace"
	"strings"
	"testing"
)

// TestCallDetails expands the call details (call, ret, iov, elements,
// flags, mode) and checks every field they set, and what a result does to
// the positions and sizes the script tracks.
func TestCallDetails(t *testing.T) {
	wantRanks(t, `
open "a" as f flags O_RDWR | O_CREAT call openat
write f size 100
read f size 50 ret 20
read f size 10
seek f to 0 from end ret 5000
write f size 8 iov 2
write f at 64 size 30 iov 3 flags 4 call pwritev2
read f size 4 call fread ret 0
write f size 48 elements 16 call fwrite
stat f
stat f flags AT_EMPTY_PATH call fstatat
lookup f mode 4 flags AT_EMPTY_PATH
readlink f size 64 ret -EINVAL
link f to "a2" flags AT_SYMLINK_FOLLOW
stat "a" flags 0x100 call fstatat ret -ENOENT
close f call fclose
open "missing" as g flags O_RDONLY ret -ENOENT
open "b" as g flags O_RDONLY
read g size 1
close g ret -EIO
lookup "b" mode 4
delete "b" call unlinkat flags 0x200 ret -EISDIR
rename "x" to "y" call renameat2 flags 1
mkdir "d" mode 0o700 call mkdirat
rmdir "d" ret -ENOTEMPTY
truncate "x" to 5 ret -EACCES
`, Config{Ranks: 1}, map[uint32]string{0: `
	openat a flags=O_RDWR|O_CREAT mode=0644 ret=3
	write a fd=3 size=100 ret=100
	read a fd=3 off=100 size=50 ret=20
	read a fd=3 off=120 size=10 ret=10
	lseek a fd=3 whence=2 ret=5000
	writev a fd=3 off=5000 size=8 count=2 ret=8
	pwritev2 a fd=3 off=64 size=30 flags=0x4 count=3 ret=30
	fread a fd=3 off=5008 size=4
	fwrite a fd=3 off=5008 size=48 count=16 ret=48
	fstat a fd=3
	fstatat fd=3 flags=0x1000
	access fd=3 flags=0x1000 mode=04
	readlinkat fd=3 size=64 ret=-22
	linkat -> a2 fd=3 flags=0x400
	fstatat a flags=0x100 ret=-2
	fclose a fd=3
	open missing ret=-2
	open b ret=3
	read b fd=3 size=1 ret=1
	close b fd=3 ret=-5
	access b mode=04
	unlinkat b flags=0x200 ret=-21
	renameat2 x -> y flags=0x1
	mkdirat d mode=0700
	rmdir d ret=-39
	truncate x size=5 ret=-13
`})
}

func TestCallDetailsMPI(t *testing.T) {
	wantRanks(t, `
mpiopen "m" as f ret -EACCES
mpiopen "p" as f
write f size 8000 elements 1000
write f size 100 ret 40
read f at 0 size 10 call MPI_File_iread_at
truncate f to 1MiB call MPI_File_preallocate
seek f to 0 from current ret -22
close f
gather 8 call MPI_Gatherv
alltoall 16 call MPI_Alltoallv ret 1
send 4 to 0 ret -1
`, Config{Ranks: 1}, map[uint32]string{0: `
	MPI_File_open m flags=MPI_MODE_CREATE|MPI_MODE_RDWR ret=-13
	MPI_File_open p fd=1 flags=MPI_MODE_CREATE|MPI_MODE_RDWR
	MPI_File_write p fd=1 size=8000 count=1000 ret=8000
	MPI_File_write p fd=1 off=8000 size=100 count=100 ret=40
	MPI_File_iread_at p fd=1 size=10 count=10 ret=10
	MPI_File_preallocate p fd=1 size=1048576
	MPI_File_seek p fd=1 whence=1 ret=-22
	MPI_File_close p fd=1
	MPI_Gatherv bytes=8
	MPI_Alltoallv bytes=16 ret=1
	MPI_Send bytes=4 ret=-1
`})
}

// TestCallDetailErrors checks that details are refused where they mean
// nothing, with a message that says why.
func TestCallDetailErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{`write "f" size 1 ret 1`, "needs a command that makes one call"},
		{`open "f" as h ret 3`, "must be negative"},
		{`open "f" as h call pread`, "'call' may name 'openat', 'openat2', 'creat' or 'fopen'"},
		{`open "f" as h` + "\n" + `read h size 1 call fwrite`, "may name 'fread'"},
		{`open "f" as h` + "\n" + `read h at 0 size 1 call fread`, "makes pread, which has no other spelling"},
		{`mpiopen "f" as h` + "\n" + `write h size 1 iov 2`, "'iov' needs a POSIX file handle"},
		{`open "f" as h` + "\n" + `write h size 1 elements 2`, "'elements' needs an MPI file handle"},
		{`write "f" size 1 flags 2`, "of read and write needs a POSIX file handle"},
		{`bcast 8 call MPI_Gather`, "has no other spelling"},
		{`barrier call MPI_Gather`, "barrier takes no arguments"},
		{`stat "f" call stat64x`, `unknown call "stat64x"`},
	} {
		_, err := Compile("t.iop", []byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want an error containing %q", c.src, err, c.want)
		}
	}
	// A failed open leaves the handle closed, so the next open of the
	// same name is fine, and a use of it is an error when it runs.
	mustCompile(t, "open \"f\" as h ret -ENOENT\nopen \"g\" as h\nclose h")
	p := mustCompile(t, "open \"f\" as h ret -ENOENT\nclose h")
	x, err := Expand(p, Config{Ranks: 1})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := x.Rank(0)
	if _, err := trace.ReadAll(s); err == nil || !strings.Contains(err.Error(), "h is not open") {
		t.Errorf("close after a failed open: %v", err)
	}
}

// TestDup checks dup: a new handle on the same open file, sharing its
// position, numbered as an open would be.
func TestDup(t *testing.T) {
	wantRanks(t, `
open "a" as f flags O_RDWR
write f size 100
dup f as g
write g size 10
write f size 5
dup f as h call dup3 flags O_CLOEXEC
close f
read h size 1
dup h as k ret -EMFILE
close g
close h
`, Config{Ranks: 1}, map[uint32]string{0: `
	open a flags=O_RDWR ret=3
	write a fd=3 size=100 ret=100
	dup a fd=3 ret=4
	write a fd=4 off=100 size=10 ret=10
	write a fd=3 off=110 size=5 ret=5
	dup3 a fd=3 flags=0x80000 ret=5
	close a fd=3
	read a fd=5 off=115 size=1 ret=1
	dup a fd=5 ret=-24
	close a fd=4
	close a fd=5
`})
	for _, c := range []struct{ src, want string }{
		{"open \"f\" as h\ndup h as h", "h is still open"},
		{"open \"f\" as h\ndup h as g ret 3", "the ret of dup must be negative"},
		{"mpiopen \"f\" as h\ndup h as g", "dup needs a POSIX file handle"},
	} {
		_, err := Compile("t.iop", []byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want an error containing %q", c.src, err, c.want)
		}
	}
}
