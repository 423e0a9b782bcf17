package corpus

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// A Case is one real program doing real work in a fresh directory DIR.
type Case struct {
	Name string
	What string // what it does, one line for docs/CORPUS.md
	// Pkgs are the Debian packages of the programs it runs: docs/CORPUS.md
	// gives their versions.
	Pkgs  []string
	Needs []Need
	// Ranks > 0: the program runs under mpirun -np Ranks --oversubscribe,
	// and so do strace and iotrace record (one per rank).
	Ranks int
	// Prepare makes what the case needs outside DIR (programs compiled by
	// the harness, scripts, job files) in c.Prog; it runs once.
	Prepare func(c *caseDirs) error
	// Inputs creates the program's input files in dir, once; every run
	// gets its own copy, with every mtime set to the same instant.
	Inputs func(c *caseDirs, dir string) error
	// Argv is the command, run with DIR as its working directory.
	Argv func(c *caseDirs) []string
	Env  []string
	// Note says what of the program is not deterministic and what the
	// oracles compare instead; Slack lets the counts of these op families
	// differ by up to so many calls in oracle (a), because two runs of the
	// program do (Note says why).
	Note  string
	Slack map[string]int64
	// ByteSlack lets the bytes of these op families differ by up to so
	// many in oracle (a), for the same reason (Note says why).
	ByteSlack map[string]int64
}

// Need is something a case cannot run without, and the Debian package
// that has it.
type Need struct {
	Prog  string       // looked up in PATH (or an absolute path)
	Pkg   string       // the Debian package(s) to install
	Check func() error // instead of Prog: a check of its own
	Desc  string       // what Check checks, for the message
}

// caseDirs are a case's directories: Root holds everything; Dir is DIR,
// the program's working directory (Root/work); Prog holds what Prepare
// made; Tmp is the runs' TMPDIR and Home their HOME, both outside DIR.
type caseDirs struct {
	Root, Dir, Prog, Tmp, Home, Inputs string
}

const python = "/usr/bin/python3"

var (
	needStrace = Need{Prog: "strace", Pkg: "strace"}
	// iotrace record --preload builds its shim with cc on first use, and
	// its MPI part with mpicc.
	needCC     = Need{Prog: "cc", Pkg: "gcc libc6-dev"}
	needMPI    = Need{Prog: "mpirun", Pkg: "openmpi-bin"}
	needMPICC  = Need{Prog: "mpicc", Pkg: "libopenmpi-dev"}
	needGCC    = Need{Prog: "gcc", Pkg: "gcc libc6-dev"}
	needPython = Need{Prog: python, Pkg: "python3"}
)

// gitEnv fixes git's author, committer and dates, so that object names
// are the same in every run, and keeps the machine's configuration out.
var gitEnv = []string{
	"GIT_AUTHOR_NAME=Corpus", "GIT_AUTHOR_EMAIL=corpus@example.org",
	"GIT_COMMITTER_NAME=Corpus", "GIT_COMMITTER_EMAIL=corpus@example.org",
	"GIT_AUTHOR_DATE=2020-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2020-01-01T00:00:00Z",
	"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
}

// cases is the corpus, in the order of docs/CORPUS.md.
var cases = []*Case{
	{
		Name: "tar-czf",
		What: "`tar czf archive.tgz src`: tar reads a tree of 11 files in 6 directories and forks gzip, which writes the archive through its standard output",
		Pkgs: []string{"tar", "gzip"}, Needs: []Need{{Prog: "tar", Pkg: "tar"}, {Prog: "gzip", Pkg: "gzip"}},
		Inputs: func(c *caseDirs, dir string) error { return makeTree(filepath.Join(dir, "src"), 1) },
		Argv:   func(c *caseDirs) []string { return []string{"tar", "czf", "archive.tgz", "src"} },
	},
	{
		Name: "tar-xzf",
		What: "`tar xzf archive.tgz`: tar forks gzip -d, reads the decompressed stream from it and creates the tree",
		Pkgs: []string{"tar", "gzip"}, Needs: []Need{{Prog: "tar", Pkg: "tar"}, {Prog: "gzip", Pkg: "gzip"}},
		Prepare: func(c *caseDirs) error {
			// The archive is made once, by tar itself, from the same tree.
			src := filepath.Join(c.Prog, "tree")
			if err := makeTree(filepath.Join(src, "src"), 1); err != nil {
				return err
			}
			if err := fixTimes(src); err != nil {
				return err
			}
			return runQuiet(src, "tar", "czf", filepath.Join(c.Prog, "archive.tgz"), "src")
		},
		Inputs: func(c *caseDirs, dir string) error {
			return copyFile(filepath.Join(c.Prog, "archive.tgz"), filepath.Join(dir, "archive.tgz"))
		},
		Argv: func(c *caseDirs) []string { return []string{"tar", "xzf", "archive.tgz"} },
	},
	{
		Name: "sqlite3",
		What: "`sqlite3 db.sqlite SQL`: creates a table and inserts 200 rows, one transaction each (rollback journal created, synced and deleted 200 times)",
		Pkgs: []string{"sqlite3"}, Needs: []Need{{Prog: "sqlite3", Pkg: "sqlite3"}},
		Inputs: func(c *caseDirs, dir string) error { return nil },
		Argv: func(c *caseDirs) []string {
			var sql strings.Builder
			sql.WriteString("CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL);\n")
			for i := 0; i < 200; i++ {
				fmt.Fprintf(&sql, "INSERT INTO t(name, v) VALUES('row-%03d', %d.5);\n", i, i)
			}
			return []string{"sqlite3", "db.sqlite", sql.String()}
		},
	},
	{
		Name: "git",
		What: "`git init`, `git add -A`, `git commit` of a tree of 12 files (author, committer and dates fixed, so object names are stable)",
		Pkgs: []string{"git", "dash"}, Needs: []Need{{Prog: "git", Pkg: "git"}},
		Inputs: func(c *caseDirs, dir string) error {
			if err := makeTree(filepath.Join(dir, "src"), 2); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, "README"), text(3, 1500), 0o644)
		},
		Argv: func(c *caseDirs) []string {
			return []string{"sh", "-c", "git init -q && git add -A && git commit -q -m initial"}
		},
		Env:  gitEnv,
		Note: "deterministic once the dates are fixed: the same objects, index and refs in every run",
	},
	{
		Name: "cp-r",
		What: "`cp -r src copy`: coreutils cp copies a tree (copy_file_range for the data)",
		Pkgs: []string{"coreutils"}, Needs: []Need{{Prog: "cp", Pkg: "coreutils"}},
		Inputs: func(c *caseDirs, dir string) error { return makeTree(filepath.Join(dir, "src"), 3) },
		Argv:   func(c *caseDirs) []string { return []string{"cp", "-r", "src", "copy"} },
	},
	{
		Name: "sort",
		What: "`sort -o sorted.txt big.txt`: sorts a 12 MiB text file of 400,000 lines into another file",
		Pkgs: []string{"coreutils"}, Needs: []Need{{Prog: "sort", Pkg: "coreutils"}},
		Inputs: func(c *caseDirs, dir string) error {
			return os.WriteFile(filepath.Join(dir, "big.txt"), lines(4, 400_000), 0o644)
		},
		Argv: func(c *caseDirs) []string { return []string{"sort", "-o", "sorted.txt", "big.txt"} },
	},
	{
		Name: "rsync",
		What: "`rsync -a src/ mirror/`: rsync's sender, generator and receiver processes copy a tree through temporary files renamed into place",
		Pkgs: []string{"rsync"}, Needs: []Need{{Prog: "rsync", Pkg: "rsync"}},
		Inputs: func(c *caseDirs, dir string) error { return makeTree(filepath.Join(dir, "src"), 5) },
		Argv:   func(c *caseDirs) []string { return []string{"rsync", "-a", "src/", "mirror/"} },
		Note:   "the receiver's temporary names (.name.XXXXXX) differ from run to run; and depending on how its processes interleave, the receiver sometimes opens a directory once more (openat relative to its parent, O_PATH, then fcntl F_SETFD) and closes it: (a) lets open, close and dup differ by 1",
		Slack:  map[string]int64{"open": 1, "close": 1, "dup": 1},
	},
	{
		Name: "gzip",
		What: "`gzip big.txt`: compresses a 3 MiB file into big.txt.gz and removes big.txt",
		Pkgs: []string{"gzip"}, Needs: []Need{{Prog: "gzip", Pkg: "gzip"}},
		Inputs: func(c *caseDirs, dir string) error {
			return os.WriteFile(filepath.Join(dir, "big.txt"), lines(6, 100_000), 0o644)
		},
		Argv: func(c *caseDirs) []string { return []string{"gzip", "big.txt"} },
	},
	{
		Name: "gunzip",
		What: "`gunzip data.txt.gz`: decompresses a 3 MiB file and removes the .gz",
		Pkgs: []string{"gzip"}, Needs: []Need{{Prog: "gunzip", Pkg: "gzip"}},
		Inputs: func(c *caseDirs, dir string) error {
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			zw.Name = "data.txt"
			zw.Write(lines(7, 100_000))
			zw.Close()
			return os.WriteFile(filepath.Join(dir, "data.txt.gz"), b.Bytes(), 0o644)
		},
		Argv: func(c *caseDirs) []string { return []string{"gunzip", "data.txt.gz"} },
	},
	{
		Name: "dd",
		What: "`dd if=in.bin of=out.bin bs=64k count=20 conv=fsync`: 20 reads and writes of 64 KiB, then fsync",
		Pkgs: []string{"coreutils"}, Needs: []Need{{Prog: "dd", Pkg: "coreutils"}},
		Inputs: func(c *caseDirs, dir string) error {
			return os.WriteFile(filepath.Join(dir, "in.bin"), noise(8, 2<<20), 0o644)
		},
		Argv: func(c *caseDirs) []string {
			return []string{"dd", "if=in.bin", "of=out.bin", "bs=64k", "count=20", "conv=fsync", "status=none"}
		},
	},
	{
		Name:   "coreutils-links",
		What:   "`sh -c 'tar cf out.tar src && sync -f out.tar && ln …'`: tar, then syncfs, a hard link and a symbolic one, cat through the symbolic link, fallocate and truncate, mv of a directory, sed -i (a temporary file renamed over the original), rm",
		Pkgs:   []string{"tar", "coreutils", "util-linux", "sed", "dash"},
		Needs:  []Need{{Prog: "tar", Pkg: "tar"}, {Prog: "fallocate", Pkg: "util-linux"}, {Prog: "sed", Pkg: "sed"}, {Prog: "sync", Pkg: "coreutils"}},
		Inputs: func(c *caseDirs, dir string) error { return makeTree(filepath.Join(dir, "src"), 11) },
		Argv: func(c *caseDirs) []string {
			return []string{"sh", "-c", "tar cf out.tar src && sync -f out.tar && ln out.tar hard.tar && ln -s out.tar soft.tar && " +
				"cat soft.tar > copy.tar && fallocate -l 1M space.bin && truncate -s 64k space.bin && mv src moved && " +
				"sed -i s/the/THE/ moved/README.txt && rm hard.tar"}
		},
		Note: "sed -i writes a temporary file whose name (sedXXXXXX) differs from run to run, renamed over the original",
	},
	{
		Name: "sqlite3-wal",
		What: "`sqlite3 db.sqlite SQL` in WAL mode: 100 transactions append to the write-ahead log, whose index (db.sqlite-shm) sqlite maps into memory (mmap, MAP_SHARED), then a checkpoint copies the log into the database",
		Pkgs: []string{"sqlite3"}, Needs: []Need{{Prog: "sqlite3", Pkg: "sqlite3"}},
		Inputs: func(c *caseDirs, dir string) error { return nil },
		Argv: func(c *caseDirs) []string {
			var sql strings.Builder
			sql.WriteString("PRAGMA journal_mode=WAL;\nCREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL);\n")
			for i := 0; i < 100; i++ {
				fmt.Fprintf(&sql, "INSERT INTO t(name, v) VALUES('row-%03d', %d.5);\n", i, i)
			}
			sql.WriteString("PRAGMA wal_checkpoint(TRUNCATE);\nSELECT count(*) FROM t;\n")
			return []string{"sqlite3", "db.sqlite", sql.String()}
		},
	},
	{
		Name: "git-gc",
		What: "`git init`, `git add -A`, `git commit`, then `git gc`: pack-objects writes a pack through a temporary file, reading loose objects and the pack index through mmap, and prune removes the loose objects",
		Pkgs: []string{"git", "dash"}, Needs: []Need{{Prog: "git", Pkg: "git"}},
		Inputs: func(c *caseDirs, dir string) error {
			if err := makeTree(filepath.Join(dir, "src"), 12); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, "README"), text(13, 1500), 0o644)
		},
		Argv: func(c *caseDirs) []string {
			return []string{"sh", "-c", "git init -q && git add -A && git commit -q -m initial && git gc -q --prune=now"}
		},
		Note:      "gc writes its lock file gc.pid with its process id, whose number of digits differs from run to run: (a) lets the bytes written differ by 2",
		ByteSlack: map[string]int64{"write": 2},
		Env:       gitEnv,
	},
	{
		Name: "make",
		What: "`make`: builds a C project of 3 sources and a header with gcc (cc1, as, collect2, ld as child processes)",
		Pkgs: []string{"make", "gcc", "binutils"}, Needs: []Need{{Prog: "make", Pkg: "make"}, needGCC},
		Inputs: func(c *caseDirs, dir string) error { return writeFiles(dir, cProject) },
		Argv:   func(c *caseDirs) []string { return []string{"make", "-s"} },
	},
	{
		Name: "python3",
		What: "system python3: writes files, mkdir d, writes d/f, renames d to e, reads e/f, appends to a file, pwrite/fsync/ftruncate, lists a directory, removes a file",
		Pkgs: []string{"python3"}, Needs: []Need{needPython},
		Prepare: func(c *caseDirs) error {
			return os.WriteFile(filepath.Join(c.Prog, "fileops.py"), []byte(pyFileOps), 0o644)
		},
		Inputs: func(c *caseDirs, dir string) error {
			return writeFiles(dir, map[string]string{
				"log.txt": string(text(9, 3000)),
				"old.txt": "to be removed\n",
			})
		},
		Argv: func(c *caseDirs) []string { return []string{python, "-I", filepath.Join(c.Prog, "fileops.py")} },
	},
	{
		Name: "python3-mmap",
		What: "system python3: a file grown with posix_fallocate, written through a shared mapping (mmap, msync, munmap), advised (posix_fadvise), copied with sendfile and copy_file_range, hard- and symbolic-linked, replaced with os.replace, a directory renamed while a file in it is open and written, a tree copied with shutil.copytree (symlinks kept), scandir, truncate by name",
		Pkgs: []string{"python3"}, Needs: []Need{needPython},
		Prepare: func(c *caseDirs) error {
			return os.WriteFile(filepath.Join(c.Prog, "mmapops.py"), []byte(pyMmapOps), 0o644)
		},
		Inputs: func(c *caseDirs, dir string) error { return makeTree(filepath.Join(dir, "tree"), 14) },
		Argv:   func(c *caseDirs) []string { return []string{python, "-I", filepath.Join(c.Prog, "mmapops.py")} },
	},
	{
		Name: "git-clone",
		What: "`git init`, `git add -A`, `git commit`, then `git clone` of the repository into a sibling directory: a local clone hard-links the object files (link) and checks the tree out",
		Pkgs: []string{"git", "dash"}, Needs: []Need{{Prog: "git", Pkg: "git"}},
		Inputs: func(c *caseDirs, dir string) error {
			if err := makeTree(filepath.Join(dir, "repo", "src"), 15); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, "repo", "README"), text(16, 1500), 0o644)
		},
		Argv: func(c *caseDirs) []string {
			return []string{"sh", "-c", "cd repo && git init -q && git add -A && git commit -q -m initial && cd .. && git clone -q repo copy"}
		},
		Env: gitEnv,
	},
	{
		Name: "cp-a-links",
		What: "`sh -c 'ln …; cp -a src dst && cp -al src linked'`: a tree with a hard link and a symbolic link copied with cp -a (links kept: linkat, symlinkat) and again as a tree of hard links (cp -al)",
		Pkgs: []string{"coreutils", "dash"}, Needs: []Need{{Prog: "cp", Pkg: "coreutils"}},
		Inputs: func(c *caseDirs, dir string) error { return makeTree(filepath.Join(dir, "src"), 17) },
		Argv: func(c *caseDirs) []string {
			return []string{"sh", "-c", "ln src/README.txt src/hard.txt && ln -s docs/guide.txt src/soft.txt && cp -a src dst && cp -al src linked"}
		},
	},
	{
		Name: "dd-direct",
		What: "`dd if=in.bin of=out.bin bs=64k count=16 iflag=direct oflag=direct,dsync`: reads and writes that bypass the page cache (O_DIRECT), each write synced (O_DSYNC)",
		Pkgs: []string{"coreutils"}, Needs: []Need{{Prog: "dd", Pkg: "coreutils"}},
		Inputs: func(c *caseDirs, dir string) error {
			return os.WriteFile(filepath.Join(dir, "in.bin"), noise(18, 1<<20), 0o644)
		},
		Argv: func(c *caseDirs) []string {
			return []string{"dd", "if=in.bin", "of=out.bin", "bs=64k", "count=16", "iflag=direct", "oflag=direct,dsync", "status=none"}
		},
	},
	{
		Name: "bash-fds",
		What: "`bash -c 'exec {log}>>log.txt; … done < in.txt; exec {log}>&-; cat <<<… ; printf … > >(cat > p.txt)'`: a descriptor bash picks (10 and up, fcntl F_DUPFD), a loop reading a file line by line, a here-string, a process substitution",
		Pkgs: []string{"bash", "coreutils"}, Needs: []Need{{Prog: "bash", Pkg: "bash"}, {Prog: "cat", Pkg: "coreutils"}},
		Inputs: func(c *caseDirs, dir string) error {
			return os.WriteFile(filepath.Join(dir, "in.txt"), lines(19, 200), 0o644)
		},
		Argv: func(c *caseDirs) []string {
			return []string{"bash", "-c", `exec {log}>>log.txt; echo start >&$log; while read -r l; do echo "$l" >&$log; done < in.txt; exec {log}>&-; ` +
				`cat <<<"a here-string" > h.txt; printf "%s\n" a b c > >(cat > p.txt); wait $!`}
		},
	},
	{
		Name: "xz-threads",
		What: "`xz -T2 --block-size=1MiB -k big.txt`: two compressing threads, 1 MiB blocks of a 4 MiB file, then `xz -dc big.txt.xz > back.txt`",
		Pkgs: []string{"xz-utils", "dash"}, Needs: []Need{{Prog: "xz", Pkg: "xz-utils"}},
		Inputs: func(c *caseDirs, dir string) error {
			return os.WriteFile(filepath.Join(dir, "big.txt"), lines(20, 130_000), 0o644)
		},
		Argv: func(c *caseDirs) []string {
			return []string{"sh", "-c", "xz -T2 -1 --block-size=1MiB -k big.txt && xz -dc big.txt.xz > back.txt"}
		},
	},
	{
		Name: "find-delete",
		What: "`find src -type f -name '*.txt' -exec cat {} + > all.txt`, then `find src -name '*.bin' -delete` and `find src -depth -type d -empty -delete`: find's directory walk (fts, openat relative to directory descriptors, unlinkat)",
		Pkgs: []string{"findutils", "coreutils", "dash"}, Needs: []Need{{Prog: "find", Pkg: "findutils"}},
		Inputs: func(c *caseDirs, dir string) error { return makeTree(filepath.Join(dir, "src"), 21) },
		Argv: func(c *caseDirs) []string {
			return []string{"sh", "-c", "find src -type f -name '*.txt' -exec cat {} + > all.txt && find src -name '*.bin' -delete && find src -depth -type d -empty -delete"}
		},
	},
	{
		Name: "sort-parallel",
		What: "`sort --parallel=2 -S 1M -T . -o sorted.txt big.txt`: two sorting threads, a 1 MiB buffer, so sort spills runs to temporary files in DIR and merges them",
		Pkgs: []string{"coreutils"}, Needs: []Need{{Prog: "sort", Pkg: "coreutils"}},
		Inputs: func(c *caseDirs, dir string) error {
			return os.WriteFile(filepath.Join(dir, "big.txt"), lines(22, 100_000), 0o644)
		},
		Argv: func(c *caseDirs) []string {
			return []string{"sort", "--parallel=2", "-S", "1M", "-T", ".", "-o", "sorted.txt", "big.txt"}
		},
		Note: "the temporary files' names (sortXXXXXX) differ from run to run",
	},
	{
		Name: "perl-inplace",
		What: "`perl -i.bak -pe s/e/E/g a.txt b.txt`: each file renamed to its .bak and written anew under its name",
		Pkgs: []string{"perl-base"}, Needs: []Need{{Prog: "perl", Pkg: "perl-base"}},
		Inputs: func(c *caseDirs, dir string) error {
			return writeFiles(dir, map[string]string{"a.txt": string(text(23, 20000)), "b.txt": string(text(24, 3000))})
		},
		Argv: func(c *caseDirs) []string { return []string{"perl", "-i.bak", "-pe", "s/e/E/g", "a.txt", "b.txt"} },
	},
	{
		Name: "split-cat",
		What: "`split -b 100k big.bin part_ && cat part_* > joined.bin && rm part_*`: a file cut into pieces, joined again, the pieces removed",
		Pkgs: []string{"coreutils", "dash"}, Needs: []Need{{Prog: "split", Pkg: "coreutils"}},
		Inputs: func(c *caseDirs, dir string) error {
			return os.WriteFile(filepath.Join(dir, "big.bin"), noise(25, 750_000), 0o644)
		},
		Argv: func(c *caseDirs) []string {
			return []string{"sh", "-c", "split -b 100k big.bin part_ && cat part_* > joined.bin && rm part_*"}
		},
	},
	{
		Name: "tar-links",
		What: "`tar xf links.tar`: an archive holding a tree with a hard link and a symbolic link, extracted (linkat, symlinkat)",
		Pkgs: []string{"tar"}, Needs: []Need{{Prog: "tar", Pkg: "tar"}},
		Prepare: func(c *caseDirs) error {
			src := filepath.Join(c.Prog, "tree")
			if err := makeTree(filepath.Join(src, "src"), 26); err != nil {
				return err
			}
			if err := os.Link(filepath.Join(src, "src", "README.txt"), filepath.Join(src, "src", "hard.txt")); err != nil {
				return err
			}
			if err := os.Symlink("docs/guide.txt", filepath.Join(src, "src", "soft.txt")); err != nil {
				return err
			}
			if err := fixTimes(src); err != nil {
				return err
			}
			return runQuiet(src, "tar", "cf", filepath.Join(c.Prog, "links.tar"), "src")
		},
		Inputs: func(c *caseDirs, dir string) error {
			return copyFile(filepath.Join(c.Prog, "links.tar"), filepath.Join(dir, "links.tar"))
		},
		Argv: func(c *caseDirs) []string { return []string{"tar", "xf", "links.tar"} },
	},
	{
		Name: "python3-rmtree",
		What: "system python3: tempfile.mkstemp in DIR, os.makedirs of a deep tree, os.walk, shutil.move of a directory, shutil.rmtree (which walks with directory descriptors: openat, unlinkat relative to them)",
		Pkgs: []string{"python3"}, Needs: []Need{needPython},
		Prepare: func(c *caseDirs) error {
			return os.WriteFile(filepath.Join(c.Prog, "treeops.py"), []byte(pyTreeOps), 0o644)
		},
		Inputs: func(c *caseDirs, dir string) error { return makeTree(filepath.Join(dir, "src"), 27) },
		Argv:   func(c *caseDirs) []string { return []string{python, "-I", filepath.Join(c.Prog, "treeops.py")} },
		Note:   "mkstemp's file name differs from run to run",
	},
	{
		Name: "git-checkout",
		What: "`git init`, `add`, `commit`, then a branch with a file changed, one removed and one added, committed, and `git checkout` back: git rewrites the work tree (unlink, create, index rewritten through a lock file)",
		Pkgs: []string{"git", "dash"}, Needs: []Need{{Prog: "git", Pkg: "git"}},
		Inputs: func(c *caseDirs, dir string) error {
			if err := makeTree(filepath.Join(dir, "src"), 28); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, "README"), text(29, 1500), 0o644)
		},
		Argv: func(c *caseDirs) []string {
			return []string{"sh", "-c", "git init -q -b main && git add -A && git commit -q -m one && git checkout -q -b two && " +
				"echo changed >> README && git rm -q src/README.txt && echo new > added.txt && sleep 1 && git add -A && git commit -q -m two && git checkout -q main"}
		},
		Note: "git reads a file again whose change time is not older than the index's (racy git), which depends on whether the two fell in the same second: the case sleeps a second after changing files, before git add writes the index",
		Env:  gitEnv,
	},
	{
		Name: "zip-unzip",
		What: "`zip -qr a.zip src && unzip -q a.zip -d out`: zip writes the archive through a temporary file renamed into place, unzip creates the tree again",
		Pkgs: []string{"zip", "unzip", "dash"}, Needs: []Need{{Prog: "zip", Pkg: "zip"}, {Prog: "unzip", Pkg: "unzip"}},
		Inputs: func(c *caseDirs, dir string) error { return makeTree(filepath.Join(dir, "src"), 30) },
		Argv: func(c *caseDirs) []string {
			return []string{"sh", "-c", "zip -qr a.zip src && unzip -q a.zip -d out"}
		},
		Note: "zip's temporary file name (ziXXXXXX) differs from run to run",
	},
	{
		Name: "make-j2",
		What: "`make -j2`: the C project of the make case built by two jobs at once",
		Pkgs: []string{"make", "gcc", "binutils"}, Needs: []Need{{Prog: "make", Pkg: "make"}, needGCC},
		Inputs: func(c *caseDirs, dir string) error { return writeFiles(dir, cProject) },
		Argv:   func(c *caseDirs) []string { return []string{"make", "-s", "-j2"} },
	},
	{
		Name: "python3-tmpfile",
		What: "system python3: an O_TMPFILE file written and given a name by linkat through /proc/self/fd, preadv and pwritev, lseek with SEEK_DATA and SEEK_HOLE on a sparse file, flock, dup2 onto standard output",
		Pkgs: []string{"python3"}, Needs: []Need{needPython},
		Prepare: func(c *caseDirs) error {
			return os.WriteFile(filepath.Join(c.Prog, "tmpops.py"), []byte(pyTmpOps), 0o644)
		},
		Inputs: func(c *caseDirs, dir string) error { return nil },
		Argv:   func(c *caseDirs) []string { return []string{python, "-I", filepath.Join(c.Prog, "tmpops.py")} },
	},
	{
		Name: "cp-sparse",
		What: "`sh -c 'truncate -s 8M sparse.img && dd … seek=… conv=notrunc && cp --sparse=always sparse.img copy.img'`: a sparse file written in two places without truncation, then copied by cp, which looks for its data with SEEK_DATA and SEEK_HOLE",
		Pkgs: []string{"coreutils", "dash"}, Needs: []Need{{Prog: "cp", Pkg: "coreutils"}, {Prog: "dd", Pkg: "coreutils"}},
		Inputs: func(c *caseDirs, dir string) error {
			return os.WriteFile(filepath.Join(dir, "block.bin"), noise(31, 200_000), 0o644)
		},
		Argv: func(c *caseDirs) []string {
			return []string{"sh", "-c", "truncate -s 8M sparse.img && dd if=block.bin of=sparse.img bs=64k seek=10 conv=notrunc status=none && " +
				"dd if=block.bin of=sparse.img bs=64k seek=100 count=1 conv=notrunc status=none && cp --sparse=always sparse.img copy.img"}
		},
	},
	{
		Name: "python3-compileall",
		What: "`python3 -m compileall -q pkg`: Python byte-compiles a package, each .pyc written to a temporary name in __pycache__ and renamed into place, then `python3 -c 'import pkg.mod'` imports it from the cache",
		Pkgs: []string{"python3", "dash"}, Needs: []Need{needPython},
		Inputs: func(c *caseDirs, dir string) error {
			return writeFiles(filepath.Join(dir, "pkg"), map[string]string{
				"__init__.py":     "VERSION = 1\n",
				"mod.py":          "def f(x):\n    return x * 2\n\nVALUE = f(21)\n",
				"sub/__init__.py": "",
				"sub/util.py":     "import os\n\ndef here():\n    return os.path.dirname(__file__)\n",
			})
		},
		Argv: func(c *caseDirs) []string {
			return []string{"sh", "-c", python + " -m compileall -q pkg && " + python + " -c 'import pkg.mod, pkg.sub.util; assert pkg.mod.VALUE == 42'"}
		},
		Env: []string{"PYTHONDONTWRITEBYTECODE=", "SOURCE_DATE_EPOCH=1577836800"},
	},
	{
		Name: "ls-du",
		What: "`sh -c 'ls -laR src > list.txt; du -a src > du.txt; md5sum src/*/* > sums.txt'`: a tree listed (getdents, statx, readlink), its sizes summed (fstatat relative to directory descriptors), and files hashed",
		Pkgs: []string{"coreutils", "dash"}, Needs: []Need{{Prog: "ls", Pkg: "coreutils"}, {Prog: "du", Pkg: "coreutils"}, {Prog: "md5sum", Pkg: "coreutils"}},
		Inputs: func(c *caseDirs, dir string) error {
			if err := makeTree(filepath.Join(dir, "src"), 32); err != nil {
				return err
			}
			return os.Symlink("docs/guide.txt", filepath.Join(dir, "src", "link.txt"))
		},
		Argv: func(c *caseDirs) []string {
			return []string{"sh", "-c", "ls -laR src > list.txt; du -a src > du.txt; md5sum src/*/* > sums.txt 2>/dev/null; true"}
		},
		Env: []string{"LC_ALL=C", "TZ=UTC"},
	},
	{
		Name: "awk-split",
		What: "`awk '{ print > ($1 \".txt\") }' data.txt`: mawk (Debian's awk) writes each line to the file its first field names, with eight files open at once, then `cat *.txt | wc -l`",
		Pkgs: []string{"mawk", "coreutils", "dash"}, Needs: []Need{{Prog: "awk", Pkg: "mawk"}},
		Inputs: func(c *caseDirs, dir string) error {
			var b bytes.Buffer
			for i := 0; i < 4000; i++ {
				fmt.Fprintf(&b, "k%d line %d of the input, some text to make it longer\n", i%8, i)
			}
			return os.WriteFile(filepath.Join(dir, "data.txt"), b.Bytes(), 0o644)
		},
		Argv: func(c *caseDirs) []string {
			return []string{"sh", "-c", "awk '{ print > ($1 \".txt\") }' data.txt && cat k*.txt | wc -l > count.txt"}
		},
	},
	{
		Name: "sqlite3-vacuum",
		What: "`sqlite3 db.sqlite SQL` reading through a memory map (PRAGMA mmap_size), a delete and VACUUM (the database rewritten through its journal), then `sqlite3 db.sqlite .dump | sqlite3 copy.sqlite`: two processes joined by a pipe",
		Pkgs: []string{"sqlite3", "dash"}, Needs: []Need{{Prog: "sqlite3", Pkg: "sqlite3"}},
		Inputs: func(c *caseDirs, dir string) error { return nil },
		Argv: func(c *caseDirs) []string {
			var sql strings.Builder
			sql.WriteString("PRAGMA mmap_size=1048576;\nCREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL);\nBEGIN;\n")
			for i := 0; i < 2000; i++ {
				fmt.Fprintf(&sql, "INSERT INTO t(name, v) VALUES('row-%04d-some-padding-text', %d.5);\n", i, i)
			}
			sql.WriteString("COMMIT;\nSELECT count(*), sum(v) FROM t WHERE name LIKE 'row-1%';\nDELETE FROM t WHERE id % 2 = 0;\nVACUUM;\n")
			if err := os.WriteFile(filepath.Join(c.Prog, "vacuum.sql"), []byte(sql.String()), 0o644); err != nil {
				return []string{"false"}
			}
			return []string{"sh", "-c", "sqlite3 db.sqlite < " + filepath.Join(c.Prog, "vacuum.sql") + " && sqlite3 db.sqlite .dump | sqlite3 copy.sqlite"}
		},
	},
	{
		Name: "tar-append",
		What: "`sh -c 'tar cf a.tar src/docs && tar rf a.tar src/code && tar tf a.tar > list.txt'`: tar appends to an archive it reads to its end first (O_RDWR, reads, a seek back over the end blocks, writes), then lists it",
		Pkgs: []string{"tar", "dash"}, Needs: []Need{{Prog: "tar", Pkg: "tar"}},
		Inputs: func(c *caseDirs, dir string) error { return makeTree(filepath.Join(dir, "src"), 33) },
		Argv: func(c *caseDirs) []string {
			return []string{"sh", "-c", "tar cf a.tar src/docs && tar rf a.tar src/code && tar tf a.tar > list.txt"}
		},
	},
	{
		Name: "python3-venv",
		What: "`python3 -m venv --without-pip env`: Python makes a virtual environment (directories, symbolic links to the interpreter, pyvenv.cfg, activation scripts written from templates)",
		Pkgs: []string{"python3", "python3-venv"}, Needs: []Need{needPython, {Pkg: "python3-venv", Desc: "python3's venv module", Check: checkVenv}},
		Inputs: func(c *caseDirs, dir string) error { return nil },
		Argv:   func(c *caseDirs) []string { return []string{python, "-I", "-m", "venv", "--without-pip", "env"} },
	},
	{
		Name: "ar-link",
		What: "`sh -c 'gcc -c a.c b.c && ar rcs libab.a a.o b.o && gcc -o prog main.c -L. -lab && ./prog > out.txt'`: a static library built by ar (a temporary archive renamed into place), linked by ld, and the program run",
		Pkgs: []string{"gcc", "binutils", "dash"}, Needs: []Need{needGCC, {Prog: "ar", Pkg: "binutils"}},
		Inputs: func(c *caseDirs, dir string) error {
			return writeFiles(dir, map[string]string{
				"a.c":    "int a(int x) { return x + 1; }\n",
				"b.c":    "int b(int x) { return x * 2; }\n",
				"main.c": "#include <stdio.h>\nint a(int), b(int);\nint main(void) { printf(\"%d\\n\", a(b(20))); return 0; }\n",
			})
		},
		Argv: func(c *caseDirs) []string {
			return []string{"sh", "-c", "gcc -c a.c b.c && ar rcs libab.a a.o b.o && gcc -o prog main.c -L. -lab && ./prog > out.txt"}
		},
		Env: []string{"SOURCE_DATE_EPOCH=1577836800", "ZERO_AR_DATE=1"},
	},
	{
		Name: "rsync-inplace",
		What: "`rsync -a --inplace --no-whole-file src/ mirror/` over a mirror that is there already, with two files changed: rsync's delta transfer reads the old file and rewrites it in place",
		Pkgs: []string{"rsync", "dash"}, Needs: []Need{{Prog: "rsync", Pkg: "rsync"}},
		Inputs: func(c *caseDirs, dir string) error {
			if err := makeTree(filepath.Join(dir, "src"), 34); err != nil {
				return err
			}
			if err := makeTree(filepath.Join(dir, "mirror"), 34); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, "src", "docs", "guide.txt"), text(35, 41000), 0o644); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, "src", "README.txt"), text(36, 2500), 0o644)
		},
		Argv: func(c *caseDirs) []string {
			return []string{"rsync", "-a", "--inplace", "--no-whole-file", "src/", "mirror/"}
		},
		Note:  "the mirror's files have the sources' times, so rsync compares the two changed files by size; depending on how its processes interleave, the receiver opens each of the mirror's 5 directories once more or not (openat relative to its parent, O_PATH, then fcntl F_SETFD) and closes it, as in the rsync case: (a) lets open, close and dup differ by 5",
		Slack: map[string]int64{"open": 5, "close": 5, "dup": 5},
	},
	{
		Name: "flock-pipe",
		What: "`sh -c 'flock lock.file sh -c \"cat big.bin | dd of=copy.bin bs=64k iflag=fullblock status=none\"'`: flock(1) holds a lock file while a shell pipes a file through cat into dd",
		Pkgs: []string{"util-linux", "coreutils", "dash"}, Needs: []Need{{Prog: "flock", Pkg: "util-linux"}, {Prog: "dd", Pkg: "coreutils"}},
		Inputs: func(c *caseDirs, dir string) error {
			return os.WriteFile(filepath.Join(dir, "big.bin"), noise(37, 700_000), 0o644)
		},
		Argv: func(c *caseDirs) []string {
			return []string{"sh", "-c", `flock lock.file sh -c "cat big.bin | dd of=copy.bin bs=64k iflag=fullblock status=none"`}
		},
	},
	{
		Name: "rsync-link-dest",
		What: "`rsync -a --link-dest=../snap1 src/ snap2/`: a snapshot whose unchanged files are hard links into the previous one (linkat), one changed file copied",
		Pkgs: []string{"rsync"}, Needs: []Need{{Prog: "rsync", Pkg: "rsync"}},
		Inputs: func(c *caseDirs, dir string) error {
			if err := makeTree(filepath.Join(dir, "src"), 38); err != nil {
				return err
			}
			if err := makeTree(filepath.Join(dir, "snap1"), 38); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, "src", "README.txt"), text(39, 2600), 0o644)
		},
		Argv:  func(c *caseDirs) []string { return []string{"rsync", "-a", "--link-dest=../snap1", "src/", "snap2/"} },
		Note:  "depending on how its processes interleave, the receiver opens each of the 5 directories once more or not, as in the rsync case: (a) lets open, close and dup differ by 5",
		Slack: map[string]int64{"open": 5, "close": 5, "dup": 5},
	},
	{
		Name: "fallocate-holes",
		What: "`sh -c 'fallocate -l 4M f && fallocate -p -o 1M -l 512K f && fallocate -z -o 2M -l 256K f && fallocate -d f && truncate -s 3M f'`: preallocation, a hole punched, a range zeroed, holes dug where the file holds zeros (SEEK_DATA, SEEK_HOLE), then a truncation",
		Pkgs: []string{"util-linux", "coreutils", "dash"}, Needs: []Need{{Prog: "fallocate", Pkg: "util-linux"}},
		Inputs: func(c *caseDirs, dir string) error { return nil },
		Argv: func(c *caseDirs) []string {
			return []string{"sh", "-c", "fallocate -l 4M f && fallocate -p -o 1M -l 512K f && fallocate -z -o 2M -l 256K f && fallocate -d f && truncate -s 3M f"}
		},
	},
	{
		Name: "git-stash",
		What: "`git init`, `add`, `commit`, a change, `git stash`, `git stash pop`, then `git worktree add ../wt`: stash writes and reads index and work tree; the worktree gets its own .git file and checkout",
		Pkgs: []string{"git", "dash"}, Needs: []Need{{Prog: "git", Pkg: "git"}},
		Inputs: func(c *caseDirs, dir string) error {
			if err := makeTree(filepath.Join(dir, "repo", "src"), 40); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, "repo", "README"), text(41, 1500), 0o644)
		},
		Argv: func(c *caseDirs) []string {
			return []string{"sh", "-c", "cd repo && git init -q -b main && git add -A && git commit -q -m one && echo more >> README && sleep 1 && " +
				"git stash -q && git stash pop -q && git worktree add -q ../wt"}
		},
		Env:  gitEnv,
		Note: "git reads a file again whose change time is not older than the index's (racy git): the case sleeps a second after changing a file, before git stash writes the index",
	},
	{
		Name: "python3-archive",
		What: "system python3: shutil.make_archive to a zip and a gzipped tar of a tree, shutil.unpack_archive of each into its own directory, filecmp.dircmp of the copies",
		Pkgs: []string{"python3"}, Needs: []Need{needPython},
		Prepare: func(c *caseDirs) error {
			return os.WriteFile(filepath.Join(c.Prog, "archive.py"), []byte(pyArchive), 0o644)
		},
		Inputs: func(c *caseDirs, dir string) error { return makeTree(filepath.Join(dir, "src"), 42) },
		Argv:   func(c *caseDirs) []string { return []string{python, "-I", filepath.Join(c.Prog, "archive.py")} },
		Env:    []string{"SOURCE_DATE_EPOCH=1577836800"},
	},
	{
		Name: "sqlite3-attach",
		What: "`sqlite3 main.db SQL`: two databases attached to one connection, a transaction across both (a super-journal file names both journals), then a copy of a table from one to the other",
		Pkgs: []string{"sqlite3"}, Needs: []Need{{Prog: "sqlite3", Pkg: "sqlite3"}},
		Inputs: func(c *caseDirs, dir string) error { return nil },
		Argv: func(c *caseDirs) []string {
			sql := "ATTACH 'other.db' AS o;\nCREATE TABLE a(x);\nCREATE TABLE o.b(y);\nBEGIN;\n"
			for i := 0; i < 50; i++ {
				sql += fmt.Sprintf("INSERT INTO a VALUES(%d);\nINSERT INTO o.b VALUES(%d);\n", i, i*2)
			}
			sql += "COMMIT;\nCREATE TABLE o.c AS SELECT * FROM a;\nSELECT count(*) FROM o.c;\n"
			return []string{"sqlite3", "main.db", sql}
		},
		Note: "the super-journal's name (main.db-mjXXXXXXXX) differs from run to run",
	},
	{
		Name: "tar-sparse",
		What: "`sh -c 'truncate -s 16M disk.img && dd … seek=… conv=notrunc,sparse && tar --sparse -cf img.tar disk.img && mkdir out && tar -xf img.tar -C out'`: a sparse image archived by tar's sparse mode (SEEK_DATA, SEEK_HOLE) and extracted with its holes",
		Pkgs: []string{"tar", "coreutils", "dash"}, Needs: []Need{{Prog: "tar", Pkg: "tar"}, {Prog: "dd", Pkg: "coreutils"}},
		Inputs: func(c *caseDirs, dir string) error {
			return os.WriteFile(filepath.Join(dir, "block.bin"), noise(43, 300_000), 0o644)
		},
		Argv: func(c *caseDirs) []string {
			return []string{"sh", "-c", "truncate -s 16M disk.img && dd if=block.bin of=disk.img bs=64k seek=40 conv=notrunc,sparse status=none && " +
				"tar --sparse -cf img.tar disk.img && mkdir out && tar -xf img.tar -C out"}
		},
	},
	{
		Name: "gzip-recursive",
		What: "`sh -c 'gzip -rk src && bzip2 -k src/docs/guide.txt && zstd -q -T2 --rm src/code/sub/more.txt'`: gzip compresses every file of a tree keeping the originals, bzip2 one, and zstd with two threads one more, removing it",
		Pkgs: []string{"gzip", "bzip2", "zstd", "dash"}, Needs: []Need{{Prog: "gzip", Pkg: "gzip"}, {Prog: "bzip2", Pkg: "bzip2"}, {Prog: "zstd", Pkg: "zstd"}},
		Inputs: func(c *caseDirs, dir string) error { return makeTree(filepath.Join(dir, "src"), 44) },
		Argv: func(c *caseDirs) []string {
			return []string{"sh", "-c", "gzip -rk src && bzip2 -k src/docs/guide.txt && zstd -q -T2 --rm src/code/sub/more.txt"}
		},
	},
	{
		Name: "install-D",
		What: "`sh -c 'install -D -m 644 src/docs/guide.txt dest/share/doc/guide.txt && install -d dest/bin && install -m 755 src/code/x.c dest/bin/x && cp -p --preserve=all src/README.txt dest/'`: coreutils install makes the directories and copies with modes, cp keeps the attributes",
		Pkgs: []string{"coreutils", "dash"}, Needs: []Need{{Prog: "install", Pkg: "coreutils"}},
		Inputs: func(c *caseDirs, dir string) error { return makeTree(filepath.Join(dir, "src"), 45) },
		Argv: func(c *caseDirs) []string {
			return []string{"sh", "-c", "install -D -m 644 src/docs/guide.txt dest/share/doc/guide.txt && install -d dest/bin && " +
				"install -m 755 src/code/x.c dest/bin/x && cp -p --preserve=all src/README.txt dest/"}
		},
	},
	{
		Name: "sed-many",
		What: "`sh -c 'sed -i.orig -e s/a/A/g src/*.txt src/*/*.txt && find src -name \"*.orig\" | sort | xargs cat > all.orig'`: sed edits several files in place keeping backups, then xargs passes the backups to cat",
		Pkgs: []string{"sed", "findutils", "coreutils", "dash"}, Needs: []Need{{Prog: "sed", Pkg: "sed"}, {Prog: "xargs", Pkg: "findutils"}},
		Inputs: func(c *caseDirs, dir string) error { return makeTree(filepath.Join(dir, "src"), 46) },
		Argv: func(c *caseDirs) []string {
			return []string{"sh", "-c", "sed -i.orig -e s/a/A/g src/*.txt src/*/*.txt && find src -name '*.orig' | sort | xargs cat > all.orig"}
		},
		Note: "sed -i writes each file through a temporary name (sedXXXXXX) that differs from run to run",
	},
	{
		Name: "shred",
		What: "`shred -u -n 2 secret.bin`: two passes of random data and a pass of zeros written and synced over a file, which is then renamed to ever shorter names and removed",
		Pkgs: []string{"coreutils"}, Needs: []Need{{Prog: "shred", Pkg: "coreutils"}},
		Inputs: func(c *caseDirs, dir string) error {
			return os.WriteFile(filepath.Join(dir, "secret.bin"), noise(47, 100_000), 0o644)
		},
		Argv: func(c *caseDirs) []string { return []string{"shred", "-u", "-n", "2", "-z", "secret.bin"} },
	},
	{
		Name: "sqlite3-backup",
		What: "`sh -c 'sqlite3 db.sqlite \".backup copy.sqlite\" && sqlite3 restored.sqlite \".restore copy.sqlite\"'`: sqlite's online backup copies a database page by page, and restores it into a new one",
		Pkgs: []string{"sqlite3", "dash"}, Needs: []Need{{Prog: "sqlite3", Pkg: "sqlite3"}},
		Prepare: func(c *caseDirs) error {
			var sql strings.Builder
			sql.WriteString("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);\nBEGIN;\n")
			for i := 0; i < 3000; i++ {
				fmt.Fprintf(&sql, "INSERT INTO t(v) VALUES('value-%05d-with-some-padding');\n", i)
			}
			sql.WriteString("COMMIT;\n")
			if err := os.WriteFile(filepath.Join(c.Prog, "make.sql"), []byte(sql.String()), 0o644); err != nil {
				return err
			}
			return runQuiet(c.Prog, "sqlite3", filepath.Join(c.Prog, "db.sqlite"), ".read make.sql")
		},
		Inputs: func(c *caseDirs, dir string) error {
			return copyFile(filepath.Join(c.Prog, "db.sqlite"), filepath.Join(dir, "db.sqlite"))
		},
		Argv: func(c *caseDirs) []string {
			return []string{"sh", "-c", `sqlite3 db.sqlite ".backup copy.sqlite" && sqlite3 restored.sqlite ".restore copy.sqlite"`}
		},
	},
	{
		Name: "tar-pipe",
		What: "`sh -c 'mkdir out && tar -cf - src | tar -xf - -C out'`: one tar writes an archive into a pipe, the other reads it and makes the tree",
		Pkgs: []string{"tar", "dash"}, Needs: []Need{{Prog: "tar", Pkg: "tar"}},
		Inputs: func(c *caseDirs, dir string) error { return makeTree(filepath.Join(dir, "src"), 48) },
		Argv: func(c *caseDirs) []string {
			return []string{"sh", "-c", "mkdir out && tar -cf - src | tar -xf - -C out"}
		},
	},
	{
		Name: "python3-formats",
		What: "system python3: gzip.open written and read back, a zip archive opened again in append mode, pickle and json dumped and loaded, csv written, and a tempfile.TemporaryDirectory in DIR removed at its end",
		Pkgs: []string{"python3"}, Needs: []Need{needPython},
		Prepare: func(c *caseDirs) error {
			return os.WriteFile(filepath.Join(c.Prog, "formats.py"), []byte(pyFormats), 0o644)
		},
		Inputs: func(c *caseDirs, dir string) error { return nil },
		Argv:   func(c *caseDirs) []string { return []string{python, "-I", filepath.Join(c.Prog, "formats.py")} },
		Env:    []string{"SOURCE_DATE_EPOCH=1577836800"},
		Note:   "the temporary directory's name differs from run to run",
	},
	{
		Name: "ln-swap",
		What: "`sh -c 'ln -s v1 current && mkdir v1 v2 && echo a > v1/f && echo b > v2/f && ln -s v2 next && mv -T next current && cat current/f > seen.txt && tee -a log1.txt log2.txt < seen.txt > /dev/null'`: a release switch, a symbolic link replaced atomically by a rename over it, read through, and tee appending to two files",
		Pkgs: []string{"coreutils", "dash"}, Needs: []Need{{Prog: "ln", Pkg: "coreutils"}, {Prog: "tee", Pkg: "coreutils"}},
		Inputs: func(c *caseDirs, dir string) error {
			return writeFiles(dir, map[string]string{"log1.txt": "first\n", "log2.txt": "second\n"})
		},
		Argv: func(c *caseDirs) []string {
			return []string{"sh", "-c", "ln -s v1 current && mkdir v1 v2 && echo a > v1/f && echo b > v2/f && ln -s v2 next && " +
				"mv -T next current && cat current/f > seen.txt && tee -a log1.txt log2.txt < seen.txt > /dev/null"}
		},
	},
	{
		Name: "python3-multiprocessing",
		What: "system python3: a multiprocessing.Pool of 2 forked workers, each writing its own files and appending to a shared log opened with O_APPEND, the parent reading their results back",
		Pkgs: []string{"python3"}, Needs: []Need{needPython},
		Prepare: func(c *caseDirs) error {
			return os.WriteFile(filepath.Join(c.Prog, "pool.py"), []byte(pyPool), 0o644)
		},
		Inputs: func(c *caseDirs, dir string) error { return nil },
		Argv:   func(c *caseDirs) []string { return []string{python, "-I", filepath.Join(c.Prog, "pool.py")} },
		Note:   "which worker takes which task, and the order of the shared log's lines, differ from run to run; their number and sizes do not",
	},
	{
		Name: "sqlite3-journal-modes",
		What: "`sqlite3 db.sqlite SQL`: 20 transactions in each of the rollback journal's other modes — TRUNCATE (the journal cut to 0), PERSIST (its header zeroed) and MEMORY (none on disk) — then back to DELETE",
		Pkgs: []string{"sqlite3"}, Needs: []Need{{Prog: "sqlite3", Pkg: "sqlite3"}},
		Inputs: func(c *caseDirs, dir string) error { return nil },
		Argv: func(c *caseDirs) []string {
			var sql strings.Builder
			sql.WriteString("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);\n")
			for _, m := range []string{"TRUNCATE", "PERSIST", "MEMORY", "DELETE"} {
				fmt.Fprintf(&sql, "PRAGMA journal_mode=%s;\n", m)
				for i := 0; i < 20; i++ {
					fmt.Fprintf(&sql, "INSERT INTO t(v) VALUES('%s-%02d');\n", m, i)
				}
			}
			return []string{"sqlite3", "db.sqlite", sql.String()}
		},
	},
	{
		Name: "make-deps",
		What: "`sh -c 'make -s && sleep 1 && touch util.h && make -s'`: gcc -MMD writes dependency files that make includes; a touched header rebuilds what depends on it",
		Pkgs: []string{"make", "gcc", "binutils", "coreutils", "dash"}, Needs: []Need{{Prog: "make", Pkg: "make"}, needGCC},
		Inputs: func(c *caseDirs, dir string) error {
			files := map[string]string{}
			for k, v := range cProject {
				files[k] = v
			}
			files["Makefile"] = "CC = gcc\nCFLAGS = -O1 -MMD\nOBJS = main.o util.o stats.o\napp: $(OBJS)\n\t$(CC) -o $@ $(OBJS)\n-include $(OBJS:.o=.d)\n"
			return writeFiles(dir, files)
		},
		Argv: func(c *caseDirs) []string {
			return []string{"sh", "-c", "make -s && sleep 1 && touch util.h && make -s"}
		},
	},
	{
		Name: "cp-backup",
		What: "`sh -c 'cp --backup=numbered new.txt old.txt && cp --backup=numbered new.txt old.txt && mv -b other.txt old.txt'`: numbered backups (old.txt.~1~, ~2~) made by renames, and mv's simple backup",
		Pkgs: []string{"coreutils", "dash"}, Needs: []Need{{Prog: "cp", Pkg: "coreutils"}},
		Inputs: func(c *caseDirs, dir string) error {
			return writeFiles(dir, map[string]string{"old.txt": string(text(49, 3000)), "new.txt": string(text(50, 5000)), "other.txt": string(text(51, 700))})
		},
		Argv: func(c *caseDirs) []string {
			return []string{"sh", "-c", "cp --backup=numbered new.txt old.txt && cp --backup=numbered new.txt old.txt && mv -b other.txt old.txt"}
		},
	},
	{
		Name: "tar-remove-files",
		What: "`tar --remove-files -cf a.tar src`: tar archives a tree and removes each file and then each directory as it goes",
		Pkgs: []string{"tar"}, Needs: []Need{{Prog: "tar", Pkg: "tar"}},
		Inputs: func(c *caseDirs, dir string) error { return makeTree(filepath.Join(dir, "src"), 52) },
		Argv:   func(c *caseDirs) []string { return []string{"tar", "--remove-files", "-cf", "a.tar", "src"} },
	},
	{
		Name: "sort-compress",
		What: "`sort --compress-program=gzip -S 1M -T . -o sorted.txt big.txt`: sort spills its runs to temporary files through gzip children (pipes), and merges them back through gzip -d",
		Pkgs: []string{"coreutils", "gzip"}, Needs: []Need{{Prog: "sort", Pkg: "coreutils"}, {Prog: "gzip", Pkg: "gzip"}},
		Inputs: func(c *caseDirs, dir string) error {
			return os.WriteFile(filepath.Join(dir, "big.txt"), lines(53, 80_000), 0o644)
		},
		Argv: func(c *caseDirs) []string {
			return []string{"sort", "--compress-program=gzip", "-S", "1M", "-T", ".", "-o", "sorted.txt", "big.txt"}
		},
		Note: "the temporary files' names (sortXXXXXX) differ from run to run",
	},
	{
		Name: "split-filter",
		What: "`split -n l/3 --filter='gzip > $FILE.gz' big.txt part_`: split hands each third of a file to a shell that compresses it into its own file",
		Pkgs: []string{"coreutils", "gzip", "dash"}, Needs: []Need{{Prog: "split", Pkg: "coreutils"}, {Prog: "gzip", Pkg: "gzip"}},
		Inputs: func(c *caseDirs, dir string) error {
			return os.WriteFile(filepath.Join(dir, "big.txt"), lines(54, 30_000), 0o644)
		},
		Argv: func(c *caseDirs) []string {
			return []string{"split", "-n", "l/3", "--filter=gzip > $FILE.gz", "big.txt", "part_"}
		},
	},
	{
		Name: "sqlite3-import",
		What: "`sqlite3 db.sqlite '.import --csv rows.csv t' 'SELECT count(*) FROM t'`: sqlite's shell reads a CSV file through stdio and inserts its rows",
		Pkgs: []string{"sqlite3"}, Needs: []Need{{Prog: "sqlite3", Pkg: "sqlite3"}},
		Inputs: func(c *caseDirs, dir string) error {
			var b strings.Builder
			b.WriteString("id,name,value\n")
			for i := 0; i < 3000; i++ {
				fmt.Fprintf(&b, "%d,name-%04d,%d.25\n", i, i, i*3)
			}
			return os.WriteFile(filepath.Join(dir, "rows.csv"), []byte(b.String()), 0o644)
		},
		Argv: func(c *caseDirs) []string {
			return []string{"sqlite3", "db.sqlite", ".import --csv rows.csv t", "SELECT count(*) FROM t"}
		},
	},
	{
		Name: "python3-truncate-open",
		What: "system python3: a file truncated through one descriptor while another, open on it, reads past the new end (short reads, then none), extended by a write past its end (a hole) and read through the hole",
		Pkgs: []string{"python3"}, Needs: []Need{needPython},
		Prepare: func(c *caseDirs) error {
			return os.WriteFile(filepath.Join(c.Prog, "trunc.py"), []byte(pyTrunc), 0o644)
		},
		Inputs: func(c *caseDirs, dir string) error {
			return os.WriteFile(filepath.Join(dir, "f.bin"), noise(55, 64<<10), 0o644)
		},
		Argv: func(c *caseDirs) []string { return []string{python, "-I", filepath.Join(c.Prog, "trunc.py")} },
	},
	{
		Name: "python3-mremap",
		What: "system python3: a file mapped shared, written through the mapping, grown with ftruncate and the mapping resized (mmap.resize: mremap, which may move it), flushed and closed",
		Pkgs: []string{"python3"}, Needs: []Need{needPython},
		Prepare: func(c *caseDirs) error {
			return os.WriteFile(filepath.Join(c.Prog, "mremap.py"), []byte(pyMremap), 0o644)
		},
		Inputs: func(c *caseDirs, dir string) error { return nil },
		Argv:   func(c *caseDirs) []string { return []string{python, "-I", filepath.Join(c.Prog, "mremap.py")} },
	},
	{
		Name: "find-exec-mv",
		What: "`find src -name '*.txt' -exec mv {} {}.bak \\;`: one mv process per file, each renaming it beside itself",
		Pkgs: []string{"findutils", "coreutils"}, Needs: []Need{{Prog: "find", Pkg: "findutils"}},
		Inputs: func(c *caseDirs, dir string) error { return makeTree(filepath.Join(dir, "src"), 56) },
		Argv: func(c *caseDirs) []string {
			return []string{"find", "src", "-name", "*.txt", "-exec", "mv", "{}", "{}.bak", ";"}
		},
	},
	{
		Name: "unzip-overwrite",
		What: "`unzip -o -q a.zip`: unzip extracts over files that are there already, with other content and sizes",
		Pkgs: []string{"zip", "unzip"}, Needs: []Need{{Prog: "zip", Pkg: "zip"}, {Prog: "unzip", Pkg: "unzip"}},
		Prepare: func(c *caseDirs) error {
			src := filepath.Join(c.Prog, "tree")
			if err := makeTree(filepath.Join(src, "src"), 57); err != nil {
				return err
			}
			if err := fixTimes(src); err != nil {
				return err
			}
			return runQuiet(src, "zip", "-qrX", filepath.Join(c.Prog, "a.zip"), "src")
		},
		Inputs: func(c *caseDirs, dir string) error {
			if err := makeTree(filepath.Join(dir, "src"), 58); err != nil {
				return err
			}
			return copyFile(filepath.Join(c.Prog, "a.zip"), filepath.Join(dir, "a.zip"))
		},
		Argv: func(c *caseDirs) []string { return []string{"unzip", "-o", "-q", "a.zip"} },
	},
	{
		Name: "rsync-append",
		What: "`rsync -a --append src/ dst/` into a copy whose files are cut short: rsync appends the missing tails (opened without truncation, writes at their ends)",
		Pkgs: []string{"rsync"}, Needs: []Need{{Prog: "rsync", Pkg: "rsync"}},
		Inputs: func(c *caseDirs, dir string) error {
			if err := makeTree(filepath.Join(dir, "src"), 59); err != nil {
				return err
			}
			return writeFiles(filepath.Join(dir, "dst"), map[string]string{
				"docs/guide.txt": string(text(59+10, 40000)[:10000]),
				"README.txt":     string(text(59, 2000)[:500]),
			})
		},
		Argv:  func(c *caseDirs) []string { return []string{"rsync", "-a", "--append", "src/", "dst/"} },
		Note:  "depending on how its processes interleave, the receiver opens each of the 5 directories once more or not, as in the rsync case: (a) lets open, close and dup differ by 5",
		Slack: map[string]int64{"open": 5, "close": 5, "dup": 5},
	},
	{
		Name: "sh-redirect",
		What: "`sh -c 'exec 3>a.txt; (exec 3>b.txt; echo child >&3); echo parent >&3; cat a.txt b.txt > c.txt'`: dash redirections in a forked subshell, then cat",
		Pkgs: []string{"dash", "coreutils"}, Needs: []Need{{Prog: "sh", Pkg: "dash"}, {Prog: "cat", Pkg: "coreutils"}},
		Inputs: func(c *caseDirs, dir string) error { return nil },
		Argv: func(c *caseDirs) []string {
			return []string{"sh", "-c", "exec 3>a.txt; (exec 3>b.txt; echo child >&3); echo parent >&3; cat a.txt b.txt > c.txt"}
		},
	},
	{
		Name: "threads-append",
		What: "a C program (compiled by the harness, gcc -pthread) opens log.txt with O_APPEND, dup()s the descriptor, and two threads write 100 lines each, one through each descriptor",
		Pkgs: []string{"gcc"}, Needs: []Need{needGCC},
		Prepare: func(c *caseDirs) error {
			src := filepath.Join(c.Prog, "tappend.c")
			if err := os.WriteFile(src, []byte(cThreads), 0o644); err != nil {
				return err
			}
			return runQuiet(c.Prog, "gcc", "-O2", "-pthread", "-o", "tappend", "tappend.c")
		},
		Inputs: func(c *caseDirs, dir string) error {
			return os.WriteFile(filepath.Join(dir, "log.txt"), []byte("first line, there before\n"), 0o644)
		},
		Argv: func(c *caseDirs) []string { return []string{filepath.Join(c.Prog, "tappend"), "log.txt"} },
		Note: "the threads' writes interleave differently in each run; their number and sizes do not change",
	},
	{
		Name:  "h5py-mpi",
		What:  "`mpirun -np 2 python3 h5write.py`: h5py with its MPI driver (driver='mpio') creates an HDF5 file and both ranks write a dataset collectively",
		Pkgs:  []string{"python3-h5py-mpi", "python3-mpi4py", "libhdf5-openmpi-103-1", "openmpi-bin"},
		Needs: []Need{needPython, needMPI, needMPICC, {Pkg: "python3-h5py-mpi python3-mpi4py", Desc: "h5py's MPI build (h5py._debian_h5py_mpi) and mpi4py", Check: checkH5pyMPI}},
		Ranks: 2,
		Prepare: func(c *caseDirs) error {
			return os.WriteFile(filepath.Join(c.Prog, "h5write.py"), []byte(pyH5), 0o644)
		},
		Inputs: func(c *caseDirs, dir string) error { return nil },
		Argv:   func(c *caseDirs) []string { return []string{python, "-I", filepath.Join(c.Prog, "h5write.py")} },
	},
	{
		Name:  "ncmpigen",
		What:  "`mpirun -np 2 ncmpigen -v 2 -o out.nc demo.cdl`: PnetCDF writes a netCDF file from a CDL description through MPI-IO",
		Pkgs:  []string{"pnetcdf-bin", "openmpi-bin"},
		Needs: []Need{{Prog: "ncmpigen", Pkg: "pnetcdf-bin"}, needMPI, needMPICC},
		Ranks: 2,
		Inputs: func(c *caseDirs, dir string) error {
			return os.WriteFile(filepath.Join(dir, "demo.cdl"), []byte(cdl), 0o644)
		},
		Argv: func(c *caseDirs) []string { return []string{"ncmpigen", "-v", "2", "-o", "out.nc", "demo.cdl"} },
	},
	{
		Name:  "mpi4py-io",
		What:  "`mpirun -np 2 python3 mpiio.py`: mpi4py's MPI-IO on Open MPI (ompio) — a file view of strided blocks written collectively, read back, appended in rank order through the shared file pointer (MPI_File_write_ordered), preallocated, sized, synced, closed, and a scratch file opened with MPI_MODE_DELETE_ON_CLOSE",
		Pkgs:  []string{"python3-mpi4py", "python3-numpy", "openmpi-bin"},
		Needs: []Need{needPython, needMPI, needMPICC, {Pkg: "python3-mpi4py python3-numpy", Desc: "mpi4py and numpy", Check: checkMPI4py}},
		Ranks: 2,
		Prepare: func(c *caseDirs) error {
			return os.WriteFile(filepath.Join(c.Prog, "mpiio.py"), []byte(pyMPIIO), 0o644)
		},
		Inputs: func(c *caseDirs, dir string) error { return nil },
		Argv:   func(c *caseDirs) []string { return []string{python, "-I", filepath.Join(c.Prog, "mpiio.py")} },
	},
	{
		Name:  "ncmpidiff",
		What:  "`mpirun -np 2 ncmpidiff a.nc b.nc`: PnetCDF's ncmpidiff compares two netCDF files (made by ncmpigen beforehand), both ranks reading their variables through MPI-IO",
		Pkgs:  []string{"pnetcdf-bin", "openmpi-bin"},
		Needs: []Need{{Prog: "ncmpidiff", Pkg: "pnetcdf-bin"}, {Prog: "ncmpigen", Pkg: "pnetcdf-bin"}, needMPI, needMPICC},
		Ranks: 2,
		Prepare: func(c *caseDirs) error {
			if err := os.WriteFile(filepath.Join(c.Prog, "demo.cdl"), []byte(cdl), 0o644); err != nil {
				return err
			}
			if err := runQuiet(c.Prog, "ncmpigen", "-v", "2", "-o", "a.nc", "demo.cdl"); err != nil {
				return err
			}
			return runQuiet(c.Prog, "ncmpigen", "-v", "2", "-o", "b.nc", "demo.cdl")
		},
		Inputs: func(c *caseDirs, dir string) error {
			for _, f := range []string{"a.nc", "b.nc"} {
				if err := copyFile(filepath.Join(c.Prog, f), filepath.Join(dir, f)); err != nil {
					return err
				}
			}
			return nil
		},
		Argv: func(c *caseDirs) []string { return []string{"ncmpidiff", "a.nc", "b.nc"} },
	},
	{
		Name:  "h5py-groups",
		What:  "`mpirun -np 2 python3 h5groups.py`: h5py's MPI driver — groups and attributes, a chunked dataset extended (resize) and written collectively and independently, the file reopened read-only and read by both ranks",
		Pkgs:  []string{"python3-h5py-mpi", "python3-mpi4py", "libhdf5-openmpi-103-1", "openmpi-bin"},
		Needs: []Need{needPython, needMPI, needMPICC, {Pkg: "python3-h5py-mpi python3-mpi4py", Desc: "h5py's MPI build (h5py._debian_h5py_mpi) and mpi4py", Check: checkH5pyMPI}},
		Ranks: 2,
		Prepare: func(c *caseDirs) error {
			return os.WriteFile(filepath.Join(c.Prog, "h5groups.py"), []byte(pyH5Groups), 0o644)
		},
		Inputs: func(c *caseDirs, dir string) error { return nil },
		Argv:   func(c *caseDirs) []string { return []string{python, "-I", filepath.Join(c.Prog, "h5groups.py")} },
	},
	{
		Name:  "mpi4py-nonblocking",
		What:  "`mpirun -np 2 python3 mpinb.py`: mpi4py's non-blocking MPI-IO (MPI_File_iwrite_at, then MPI_Waitall), the file's size set, the individual file pointer sought and read, and reads through the shared file pointer (MPI_File_read_shared)",
		Pkgs:  []string{"python3-mpi4py", "python3-numpy", "openmpi-bin"},
		Needs: []Need{needPython, needMPI, needMPICC, {Pkg: "python3-mpi4py python3-numpy", Desc: "mpi4py and numpy", Check: checkMPI4py}},
		Ranks: 2,
		Prepare: func(c *caseDirs) error {
			return os.WriteFile(filepath.Join(c.Prog, "mpinb.py"), []byte(pyMPINonBlocking), 0o644)
		},
		Inputs: func(c *caseDirs, dir string) error { return nil },
		Argv:   func(c *caseDirs) []string { return []string{python, "-I", filepath.Join(c.Prog, "mpinb.py")} },
		Note:   "which rank reads which block through the shared file pointer depends on which comes first",
	},
	{
		Name: "fio",
		What: "`fio job.fio`: one job writes 4 MiB in 64 KiB blocks with the sync engine (fsync on close), a second reads them back at random with psync",
		Pkgs: []string{"fio"}, Needs: []Need{{Prog: "fio", Pkg: "fio"}},
		Prepare: func(c *caseDirs) error {
			return os.WriteFile(filepath.Join(c.Prog, "job.fio"), []byte(fioJob), 0o644)
		},
		Inputs: func(c *caseDirs, dir string) error { return nil },
		Argv: func(c *caseDirs) []string {
			return []string{"fio", "--output=" + filepath.Join(c.Tmp, "fio.out"), filepath.Join(c.Prog, "job.fio")}
		},
		Note: "the random offsets come from fio's fixed seed (randrepeat=1): the same in every run",
	},
}

// checkVenv: Debian splits the venv module's ensurepip into python3-venv;
// with --without-pip the module itself is enough, but check it runs.
func checkVenv() error {
	out, err := exec.Command(python, "-I", "-m", "venv", "--help").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, lastLine(string(out)))
	}
	return nil
}

// checkMPI4py: mpi4py and numpy import.
func checkMPI4py() error {
	out, err := exec.Command(python, "-c", "import mpi4py, numpy").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, lastLine(string(out)))
	}
	return nil
}

// checkH5pyMPI: Debian's h5py picks its MPI build under mpirun (it looks
// at OMPI_COMM_WORLD_SIZE); the module is h5py._debian_h5py_mpi.
func checkH5pyMPI() error {
	out, err := exec.Command(python, "-c", "import h5py._debian_h5py_mpi, mpi4py").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, lastLine(string(out)))
	}
	return nil
}

const pyFileOps = `import os
# New files, written in several calls.
with open("a.txt", "w") as f:
    for i in range(50):
        f.write("line %d of a.txt\n" % i)
        f.flush()
with open("b.bin", "wb", buffering=0) as f:
    f.write(b"x" * 100000)
# A directory with a file, renamed, and the file read back.
os.mkdir("d")
with open("d/f", "wb", buffering=0) as f:
    f.write(b"payload " * 512)
os.rename("d", "e")
with open("e/f", "rb", buffering=0) as f:
    while f.read(1000):
        pass
# Appending to a file that was there before.
with open("log.txt", "a") as f:
    f.write("appended by python\n")
# Positioned writes, sync, truncation.
fd = os.open("c.dat", os.O_RDWR | os.O_CREAT, 0o644)
os.pwrite(fd, b"z" * 8192, 0)
os.pwrite(fd, b"y" * 4096, 16384)
os.fsync(fd)
os.ftruncate(fd, 12288)
os.lseek(fd, 0, os.SEEK_SET)
os.read(fd, 4096)
os.close(fd)
os.stat("c.dat")
sorted(os.listdir("."))
os.remove("old.txt")
`

const pyMmapOps = `import mmap, os, shutil
# A file grown with posix_fallocate and written through a shared mapping.
fd = os.open("mapped.dat", os.O_RDWR | os.O_CREAT, 0o644)
os.posix_fallocate(fd, 0, 65536)
m = mmap.mmap(fd, 65536, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
for i in range(0, 65536, 4096):
    m[i:i + 8] = b"page%04d" % (i // 4096)
m.flush()
m.close()
os.posix_fadvise(fd, 0, 65536, os.POSIX_FADV_DONTNEED)
os.close(fd)
# Copies by sendfile and by copy_file_range.
src = os.open("mapped.dat", os.O_RDONLY)
dst = os.open("sent.dat", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.sendfile(dst, src, 0, 65536)
os.close(dst)
dst = os.open("ranged.dat", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
n = 0
while n < 65536:
    k = os.copy_file_range(src, dst, 65536 - n, n, n)
    if k == 0:
        break
    n += k
os.close(dst)
os.close(src)
# Links, and a file replaced by one written beside it.
os.link("sent.dat", "hard.dat")
os.symlink("ranged.dat", "soft.dat")
with open("soft.dat", "rb") as f:
    f.read()
with open("config.tmp", "w") as f:
    f.write("new config\n")
os.replace("config.tmp", "sent.dat")
# A directory renamed while a file in it is open, then written.
os.mkdir("run")
f = open("run/log.txt", "w")
os.rename("run", "run.old")
f.write("written after the rename\n")
f.close()
# A tree copied with its symbolic link, listed, a file cut by name.
os.symlink("README.txt", "tree/link.txt")
shutil.copytree("tree", "tree2", symlinks=True)
sorted(e.name for e in os.scandir("tree2"))
os.truncate("tree2/README.txt", 100)
`

const pyTreeOps = `import os, shutil, tempfile
fd, name = tempfile.mkstemp(dir=".", suffix=".tmp")
os.write(fd, b"scratch " * 100)
os.close(fd)
os.replace(name, "kept.txt")
os.makedirs("deep/a/b/c", exist_ok=True)
for d in ("deep", "deep/a", "deep/a/b", "deep/a/b/c"):
    with open(os.path.join(d, "f.txt"), "w") as f:
        f.write(d + "\n")
n = 0
for root, dirs, files in os.walk("src"):
    n += len(files)
shutil.move("deep/a", "moved")
shutil.rmtree("deep")
shutil.rmtree("src")
with open("count.txt", "w") as f:
    f.write("%d\n" % n)
`

const pyTmpOps = `import fcntl, os, sys
# An unnamed file, written, then named: linkat through /proc/self/fd.
fd = os.open(".", os.O_TMPFILE | os.O_RDWR, 0o644)
os.write(fd, b"born without a name\\n" * 100)
# (a dir_fd makes Python call linkat with AT_SYMLINK_FOLLOW, not link)
dfd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
os.link("/proc/self/fd/%d" % fd, "named.txt", dst_dir_fd=dfd, follow_symlinks=True)
os.close(dfd)
os.close(fd)
# Vectored, positioned reads and writes.
fd = os.open("vec.dat", os.O_RDWR | os.O_CREAT, 0o644)
os.pwritev(fd, [b"a" * 4096, b"b" * 4096], 8192)
bufs = [bytearray(1000), bytearray(3000)]
os.preadv(fd, bufs, 8192)
# A sparse file's data and holes.
os.pwrite(fd, b"c" * 4096, 1 << 20)
try:
    os.lseek(fd, 0, os.SEEK_DATA)
    os.lseek(fd, 8192, os.SEEK_HOLE)
except OSError:
    pass
# An advisory lock, then the file as standard output.
fcntl.flock(fd, fcntl.LOCK_EX)
fcntl.flock(fd, fcntl.LOCK_UN)
os.close(fd)
out = os.open("out.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
sys.stdout.flush()
os.dup2(out, 1)
os.close(out)
os.write(1, b"through descriptor 1\\n")
`

const pyMPIIO = `from mpi4py import MPI
import numpy as np
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
amode = MPI.MODE_CREATE | MPI.MODE_RDWR
fh = MPI.File.Open(comm, "data.bin", amode)
# Each rank's blocks of 1024 doubles, interleaved: a strided view.
n, blocks = 1024, 4
ftype = MPI.DOUBLE.Create_vector(blocks, n, n * size)
ftype.Commit()
fh.Set_view(rank * n * 8, MPI.DOUBLE, ftype)
buf = np.arange(n * blocks, dtype="f8") + rank * 1e6
fh.Write_at_all(0, buf)
back = np.empty_like(buf)
fh.Read_at_all(0, back)
assert (back == buf).all()
fh.Set_view(0, MPI.BYTE, MPI.BYTE)
fh.Sync()
fh.Close()
ftype.Free()
# Appended in rank order through the shared file pointer.
fh = MPI.File.Open(comm, "log.bin", amode | MPI.MODE_APPEND)
fh.Write_ordered(np.full(100 + rank, rank, dtype="u1"))
fh.Close()
# Preallocated and sized; a scratch file removed at its close.
fh = MPI.File.Open(comm, "big.bin", amode)
fh.Preallocate(1 << 20)
size_now = fh.Get_size()
fh.Close()
fh = MPI.File.Open(comm, "scratch.bin", amode | MPI.MODE_DELETE_ON_CLOSE)
fh.Write_at(rank * 4096, np.zeros(4096, dtype="u1"))
fh.Close()
`

const pyArchive = `import filecmp, shutil
z = shutil.make_archive("tree", "zip", root_dir=".", base_dir="src")
t = shutil.make_archive("tree", "gztar", root_dir=".", base_dir="src")
shutil.unpack_archive(z, "from_zip")
shutil.unpack_archive(t, "from_tar")
d = filecmp.dircmp("from_zip/src", "from_tar/src")
assert not d.diff_files and not d.left_only and not d.right_only
`

const pyFormats = `import csv, gzip, json, os, pickle, tempfile, zipfile
with gzip.open("data.gz", "wt") as f:
    for i in range(2000):
        f.write("line %d\\n" % i)
with gzip.open("data.gz", "rt") as f:
    n = sum(1 for _ in f)
with zipfile.ZipFile("a.zip", "w") as z:
    z.writestr("one.txt", "one\\n" * 100)
with zipfile.ZipFile("a.zip", "a") as z:
    z.writestr("two.txt", "two\\n" * 100)
with open("obj.pkl", "wb") as f:
    pickle.dump({"n": n, "list": list(range(100))}, f)
with open("obj.pkl", "rb") as f:
    obj = pickle.load(f)
with open("obj.json", "w") as f:
    json.dump(obj, f)
with open("rows.csv", "w", newline="") as f:
    w = csv.writer(f)
    for i in range(100):
        w.writerow([i, i * i, "x" * (i % 7)])
with tempfile.TemporaryDirectory(dir=".") as d:
    with open(os.path.join(d, "scratch"), "wb") as f:
        f.write(b"s" * 10000)
`

const pyH5Groups = `from mpi4py import MPI
import h5py
import numpy as np
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
n = 4096
with h5py.File("groups.h5", "w", driver="mpio", comm=comm) as f:
    g = f.create_group("run/step0")
    g.attrs["ranks"] = size
    d = g.create_dataset("x", (size * n,), maxshape=(None,), chunks=(n,), dtype="f8")
    with d.collective:
        d[rank * n:(rank + 1) * n] = np.arange(n, dtype="f8") + rank
    d.resize((2 * size * n,))
    d[(size + rank) * n:(size + rank + 1) * n] = rank
    f.create_dataset("run/meta", data=np.arange(16))
comm.Barrier()
with h5py.File("groups.h5", "r", driver="mpio", comm=comm) as f:
    x = f["run/step0/x"][rank * n:(rank + 1) * n]
    assert x[0] == rank
`

const pyMPINonBlocking = `from mpi4py import MPI
import numpy as np
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
fh = MPI.File.Open(comm, "nb.bin", MPI.MODE_CREATE | MPI.MODE_RDWR)
fh.Set_size(size * 8 * 4096)
reqs = [fh.Iwrite_at((rank * 8 + i) * 4096, np.full(4096, rank * 8 + i, dtype="u1")) for i in range(8)]
MPI.Request.Waitall(reqs)
fh.Sync()
comm.Barrier()
fh.Seek(rank * 8 * 4096)
buf = np.empty(4096, dtype="u1")
fh.Read(buf)
assert buf[0] == rank * 8
fh.Seek_shared(0)
fh.Read_shared(buf)
fh.Close()
`

const pyPool = `import multiprocessing as mp
import os

def work(i):
    with open("part-%d.txt" % i, "w") as f:
        f.write(("task %d\\n" % i) * (100 + i))
    fd = os.open("shared.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(fd, b"done %02d\\n" % i)
    os.close(fd)
    return os.path.getsize("part-%d.txt" % i)

if __name__ == "__main__":
    mp.set_start_method("fork")
    with mp.Pool(2) as p:
        sizes = p.map(work, range(6))
    with open("sizes.txt", "w") as f:
        f.write(" ".join(map(str, sizes)) + "\\n")
    for i in range(6):
        with open("part-%d.txt" % i) as f:
            f.read()
`

const pyTrunc = `import os
a = os.open("f.bin", os.O_RDWR)
b = os.open("f.bin", os.O_RDONLY)
os.read(b, 10000)
os.ftruncate(a, 16384)
while os.read(b, 4096):
    pass
os.pwrite(a, b"end", 100000)
os.lseek(b, 20000, os.SEEK_SET)
while os.read(b, 30000):
    pass
os.close(a)
os.close(b)
`

const pyMremap = `import mmap, os
fd = os.open("grow.dat", os.O_RDWR | os.O_CREAT, 0o644)
os.ftruncate(fd, 8192)
m = mmap.mmap(fd, 8192, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
m[0:5] = b"first"
os.ftruncate(fd, 1 << 20)
m.resize(1 << 20)
m[(1 << 20) - 4:] = b"last"
m.flush()
m.close()
os.close(fd)
`

const pyH5 = `from mpi4py import MPI
import h5py
import numpy as np
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
n = 32768
with h5py.File("out.h5", "w", driver="mpio", comm=comm) as f:
    d = f.create_dataset("x", (size * n,), dtype="f8")
    with d.collective:
        d[rank * n:(rank + 1) * n] = np.arange(n, dtype="f8") + rank
    f.attrs["ranks"] = size
`

const cdl = `netcdf demo {
dimensions:
	x = 64 ;
	y = 32 ;
	t = UNLIMITED ;
variables:
	double temp(x, y) ;
		temp:units = "K" ;
	int step(t) ;
	float grid(y) ;
data:
 step = 1, 2, 3, 4 ;
 grid = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
  16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31 ;
}
`

const fioJob = `[global]
directory=.
filename=fio.dat
size=4m
bs=64k
randrepeat=1
[write-sync]
ioengine=sync
rw=write
fsync_on_close=1
[read-psync]
stonewall
ioengine=psync
rw=randread
`

const cThreads = `#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct arg { int fd; const char *who; };

static void *writer(void *p) {
	struct arg *a = p;
	char line[64];
	for (int i = 0; i < 100; i++) {
		int n = snprintf(line, sizeof line, "%s line %03d\n", a->who, i);
		if (write(a->fd, line, n) != n) return (void *)1;
	}
	return NULL;
}

int main(int argc, char **argv) {
	int fd = open(argc > 1 ? argv[1] : "log.txt", O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd < 0) { perror("open"); return 1; }
	int fd2 = dup(fd);
	if (fd2 < 0) { perror("dup"); return 1; }
	struct arg a = {fd, "thread-a"}, b = {fd2, "thread-b"};
	pthread_t ta, tb;
	pthread_create(&ta, NULL, writer, &a);
	pthread_create(&tb, NULL, writer, &b);
	void *ra, *rb;
	pthread_join(ta, &ra);
	pthread_join(tb, &rb);
	if (close(fd2) || close(fd)) { perror("close"); return 1; }
	return ra || rb;
}
`

var cProject = map[string]string{
	"Makefile": `CC = gcc
CFLAGS = -O2 -Wall

app: main.o util.o stats.o
	$(CC) -o app main.o util.o stats.o

%.o: %.c util.h
	$(CC) $(CFLAGS) -c $<
`,
	"util.h": `#ifndef UTIL_H
#define UTIL_H
int add(int a, int b);
double mean(const int *v, int n);
#endif
`,
	"util.c": `#include "util.h"
int add(int a, int b) { return a + b; }
`,
	"stats.c": `#include "util.h"
double mean(const int *v, int n) {
	int s = 0;
	for (int i = 0; i < n; i++) s = add(s, v[i]);
	return n ? (double)s / n : 0;
}
`,
	"main.c": `#include <stdio.h>
#include "util.h"
int main(void) {
	int v[] = {1, 2, 3, 4};
	printf("%d %.2f\n", add(2, 3), mean(v, 4));
	return 0;
}
`,
}

// makeTree writes a tree of 11 files in 6 directories under dir: text of
// several sizes, incompressible data, an empty file, a deep file.
func makeTree(dir string, seed uint64) error {
	return writeFiles(dir, map[string]string{
		"README.txt":        string(text(seed, 2000)),
		"docs/guide.txt":    string(text(seed+10, 40000)),
		"docs/notes.txt":    string(text(seed+11, 7000)),
		"data/blob.bin":     string(noise(seed+12, 300<<10)),
		"data/small.bin":    string(noise(seed+13, 100)),
		"data/empty.txt":    "",
		"code/x.c":          "int x(void) { return 42; }\n",
		"code/y.h":          "#define Y 7\n",
		"code/sub/deep.txt": string(text(seed+14, 12000)),
		"code/sub/z.txt":    "z\n",
		"code/sub/more.txt": string(text(seed+15, 70000)),
	})
}

func writeFiles(dir string, files map[string]string) error {
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			return err
		}
	}
	return os.MkdirAll(dir, 0o755)
}

var words = strings.Fields(`alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima
mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu
file block stripe rank offset buffer flush metadata journal extent inode directory`)

// text is about n bytes of words in lines, the same for the same seed.
func text(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 0x636f72707573))
	var b bytes.Buffer
	for b.Len() < n {
		for w := 0; w < 8+r.IntN(6); w++ {
			if w > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[r.IntN(len(words))])
		}
		b.WriteByte('\n')
	}
	return b.Bytes()[:n]
}

// lines is n lines of random keys and words, for sort and gzip.
func lines(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 0x6c696e6573))
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "%08x %s %s %d\n", r.Uint32(), words[r.IntN(len(words))], words[r.IntN(len(words))], r.IntN(1_000_000))
	}
	return b.Bytes()
}

// noise is n incompressible bytes.
func noise(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 0x6e6f697365))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}
