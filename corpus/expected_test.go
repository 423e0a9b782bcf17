package corpus

// expected are the cells that fail today, keyed case/mode/oracle, with the
// reason seen and, where it is known, the cause. TestCorpus fails when a
// cell fails that is not here (a regression) and when a cell here passes
// (iotrace got better: delete the line). docs/CORPUS.md shows the reasons
// of the last run.
//
// Causes named below, so that each line stays short:
//   - PT-CALLS: the ptrace tracer's call table (capture/ptrace/arch_amd64.go)
//     has no getdents64, fadvise64, fallocate, link/linkat/symlink,
//     readlink, mmap; sendfile, splice and copy_file_range are followed for
//     bookkeeping but not recorded.
//   - SHIM-MISSING: the preload shim does not wrap the fortified opens
//     (__open_2, __openat_2, __open64_2, which Debian's -D_FORTIFY_SOURCE
//     builds of tar, rsync and git call), fwrite_unlocked / fputs_unlocked
//     / fread_unlocked (coreutils), copy_file_range, posix_fadvise,
//     fallocate, link, symlink, readlink, mmap, mkstemp; and it sees none of
//     the opens, fstats and closes glibc makes inside opendir / fdopendir /
//     closedir.
//   - REPLAY-DIR: ioreplay fails an open of a directory (O_DIRECTORY or
//     O_PATH) with EINVAL, and then the close of that descriptor with EBADF.
//   - REPLAY-FORK: ioreplay has one descriptor table per rank, so the
//     descriptors of forked children and their parent collide.
//   - CONVERT-FORK: convert puts the calls of a rank's processes in one
//     sequence, so their descriptors collide there too.
//   - CONVERT-LOWFD: convert's verification fails on dup/dup2 whose result
//     is a descriptor below 3 ("the result is 0 in the trace, 4 in the
//     script"); convert says it is a bug.
//   - CONVERT-FOPEN: the shim records fopen with mode 0666 and no O_CREAT;
//     convert refuses it ("mode 0666 without O_CREAT or O_TMPFILE").
//   - CONVERT-ATFD: the shim records path calls with FD -100 (AT_FDCWD) or
//     the *at descriptor; convert refuses them ("descriptor -100 was not
//     opened in the trace"), though docs/SCRIPT.md says that FD is not kept.
//   - CONVERT-APPEND: an O_APPEND write at the end of a file the rank did
//     not write: convert refuses it ("the file position a script tracks is
//     0").
//   - REPLAY-APPEND: a file only appended to is not prepared with its old
//     size (the trace's write offset says it), so it ends shorter.
var expected = map[string]string{
	"git/preload/a":  "open 118≠149, close 89≠99, link 0≠20, mmap 0≠10, write bytes 23 short: SHIM-MISSING (__open64_2, mkstemp64; fprintf-style stdio)",
	"sort/preload/a": "write bytes 0≠11555389, advise 0≠1: SHIM-MISSING (sort writes with fwrite_unlocked)",
	"make/preload/a": "dup 8≠0, read 87≠105, seek 146≠208, stat 62≠90: SHIM-MISSING",
	"make/preload/c": "trace→replay: read bytes 173361→174631",

	"ncmpigen/preload/a": "stat 3≠5: SHIM-MISSING",
	"fio/preload/a":      "advise 0≠5, allocate 0≠1, open 3≠4, close 3≠4: SHIM-MISSING (posix_fadvise64, posix_fallocate64, opendir)",
}

// flaky are cells whose verdict changes from run to run for a reason
// outside the harness, named here; the test accepts either verdict, and
// docs/CORPUS.md marks them. Keep this list short: a cell belongs here
// only when the program or iotrace races, never to hide a failure.
var flaky = map[string]string{}
