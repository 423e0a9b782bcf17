// Package preload records a program's I/O and MPI calls with a small C
// library loaded into it (LD_PRELOAD): the shim (shim/) intercepts the
// POSIX and stdio file calls of libc and, through the MPI profiling
// interface, the MPI-IO and communication calls, and writes one compact
// record per call (a dozen bytes or so) into a spool file per process,
// mapped shared, in blocks each thread fills alone: the program's own
// threads do all the recording, and a record is in the file the moment it
// is complete. This package builds the shim, reads spools (even those of
// a process that crashed) and encodes them into a trace.
//
// The shim is C source embedded in iotrace and compiled on first use
// with the system's C compiler into a cache directory (Build): the POSIX
// part needs only libc; the MPI part needs mpi.h, and is built when an MPI
// compiler wrapper (mpicc) or IOTRACE_MPI_CFLAGS says where it is.
package preload

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

//go:embed shim/shim.h shim/shim.c shim/mpi.c shim/mpilib.h shim/mpiclock.h shim/clocklib.c shim/spawn.c
var sources embed.FS

// Libs are the built shim libraries. The MPI part is in the POSIX part's
// library where it could be built: one library to load per process image
// (a second cost 40-100 µs of every exec on the test machine, MPI
// program or not).
type Libs struct {
	POSIX string // libiotrace.so: always
	MPI   string // the library with the MPI part (POSIX's): "" when it could not be built
	// Clock is libiotrace-clock.so, the clock library alone (ptrace
	// recording of MPI programs): "" when MPI is.
	Clock string
	// MPIErr says why MPI is empty.
	MPIErr error
	// Spawn is iotrace-spawn, the program ImageCost starts processes
	// with: always.
	Spawn string
}

// Preload is the value for LD_PRELOAD: the shim's libraries, then those
// of old (the caller's LD_PRELOAD).
func (l Libs) Preload(old string) string {
	parts := []string{l.POSIX}
	if l.MPI != "" && l.MPI != l.POSIX {
		parts = append(parts, l.MPI)
	}
	if old != "" {
		parts = append(parts, old)
	}
	return strings.Join(parts, ":")
}

// CacheDir is where built shims are kept: $IOTRACE_CACHE, else the user's
// cache directory (~/.cache/iotrace/preload).
func CacheDir() (string, error) {
	if d := os.Getenv("IOTRACE_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the preload shim (set IOTRACE_CACHE): %w", err)
	}
	return filepath.Join(d, "iotrace", "preload"), nil
}

// Build compiles the shim into the cache directory, once per version of
// its sources, its compiler and the MPI compiler wrapper's program (which
// is run only to build): $CC (default cc) for the POSIX part; for the
// MPI part the include directories of mpicc (or $MPICC), or
// $IOTRACE_MPI_CFLAGS. The processes of an MPI job may ask at once: one
// builds while the others wait (a lock file beside the build), or, where
// the file system cannot lock, each builds aside and the first to finish
// installs.
func Build() (Libs, error) {
	var libs Libs
	if runtime.GOOS != "linux" {
		return libs, errors.New("the preload shim needs Linux")
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	ccPath, err := exec.LookPath(cc)
	if err != nil {
		return libs, fmt.Errorf("the preload shim is C and needs a C compiler: %s not found (install gcc, or set CC)", cc)
	}
	src := map[string][]byte{}
	h := sha256.New()
	for _, n := range []string{"shim.h", "shim.c", "mpi.c", "mpilib.h", "mpiclock.h", "clocklib.c", "spawn.c"} {
		b, _ := sources.ReadFile("shim/" + n)
		src[n] = b
		h.Write(b)
	}
	// The MPI compiler is named by what would change what it says (its
	// program, by path, size and time, or the flags given instead), not
	// run: a build in the cache is then found without starting it, which
	// costs more than the rest of a record's start.
	// layout 2: the MPI part in libiotrace.so (one library per image);
	// layout 3: iotrace-spawn beside it.
	fmt.Fprintf(h, "%s|%s|%s|layout 3", ccPath, mpiIdentity(), runtime.GOARCH)
	key := hex.EncodeToString(h.Sum(nil))[:16]
	base, err := CacheDir()
	if err != nil {
		return libs, err
	}
	dir := filepath.Join(base, key)
	libs = Libs{POSIX: filepath.Join(dir, "libiotrace.so"), MPI: filepath.Join(dir, "libiotrace.so"),
		Clock: filepath.Join(dir, "libiotrace-clock.so"), Spawn: filepath.Join(dir, "iotrace-spawn")}
	if _, err := os.Stat(libs.POSIX); err == nil {
		return finish(libs), nil
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return libs, err
	}
	// One process builds, the others (the ranks of a job starting on a
	// node at once) wait for it: each build is seconds of CPU. Where the
	// file system cannot lock, each builds aside, and the first to finish
	// installs.
	if lock, err := os.OpenFile(dir+".lock", os.O_RDWR|os.O_CREATE, 0o644); err == nil {
		defer lock.Close()
		if unix.Flock(int(lock.Fd()), unix.LOCK_EX) == nil {
			defer unix.Flock(int(lock.Fd()), unix.LOCK_UN)
			if _, err := os.Stat(libs.POSIX); err == nil {
				return finish(libs), nil
			}
		}
	}
	mpiFlags, mpiErr := mpiCFlags()
	libs.MPIErr = mpiErr
	tmp, err := os.MkdirTemp(base, "build-")
	if err != nil {
		return libs, err
	}
	defer os.RemoveAll(tmp)
	for n, b := range src {
		if err := os.WriteFile(filepath.Join(tmp, n), b, 0o644); err != nil {
			return libs, err
		}
	}
	common := []string{"-shared", "-fPIC", "-O2", "-fvisibility=hidden", "-Wno-nonnull-compare"}
	run := func(args ...string) error {
		cmd := exec.Command(ccPath, args...)
		cmd.Dir = tmp
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s %s: %v\n%s", cc, strings.Join(args, " "), err, bytes.TrimSpace(out))
		}
		return nil
	}
	if mpiErr == nil {
		err := run(append(append(common, mpiFlags...), "-o", "libiotrace.so", "shim.c", "mpi.c", "-ldl", "-lpthread")...)
		if err == nil {
			err = run(append(append(common, mpiFlags...), "-o", "libiotrace-clock.so", "clocklib.c", "-ldl")...)
		}
		if err != nil {
			os.Remove(filepath.Join(tmp, "libiotrace-clock.so"))
			mpiErr = err
		}
	}
	if mpiErr != nil {
		// The POSIX part alone; say why MPI is missing (in the cache too,
		// so that the next run says it without building).
		if err := run(append(common, "-o", "libiotrace.so", "shim.c", "-ldl", "-lpthread")...); err != nil {
			return libs, fmt.Errorf("building the preload shim: %w", err)
		}
		os.WriteFile(filepath.Join(tmp, "mpi-error.txt"), []byte(mpiErr.Error()), 0o644)
	}
	if err := run("-O2", "-o", "iotrace-spawn", "spawn.c"); err != nil {
		return libs, fmt.Errorf("building the preload shim: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(libs.POSIX); serr != nil {
			return libs, fmt.Errorf("installing the preload shim in %s: %w", dir, err)
		}
		// Another process installed it first.
	}
	return finish(libs), nil
}

// finish notes a missing MPI part (the build left why).
func finish(l Libs) Libs {
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(l.POSIX), "mpi-error.txt")); err == nil {
		l.MPIErr = errors.New(strings.TrimSpace(string(b)))
		l.MPI, l.Clock = "", ""
	}
	return l
}

// mpiIdentity names what mpiCFlags would find mpi.h with: the flags of
// IOTRACE_MPI_CFLAGS, or the MPI compiler wrapper's program (path, size
// and modification time, after symbolic links), or that there is none.
func mpiIdentity() string {
	if f := os.Getenv("IOTRACE_MPI_CFLAGS"); f != "" {
		return "flags " + f
	}
	mpicc := os.Getenv("MPICC")
	if mpicc == "" {
		mpicc = "mpicc"
	}
	p, err := exec.LookPath(mpicc)
	if err != nil {
		return "no " + mpicc
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	st, err := os.Stat(p)
	if err != nil {
		return "no " + p
	}
	return fmt.Sprintf("%s %d %d", p, st.Size(), st.ModTime().UnixNano())
}

// mpiCFlags returns the compiler flags that find mpi.h.
func mpiCFlags() ([]string, error) {
	if f := os.Getenv("IOTRACE_MPI_CFLAGS"); f != "" {
		return strings.Fields(f), nil
	}
	mpicc := os.Getenv("MPICC")
	if mpicc == "" {
		mpicc = "mpicc"
	}
	if _, err := exec.LookPath(mpicc); err != nil {
		return nil, fmt.Errorf("MPI calls are not recorded: %s not found (install libopenmpi-dev, or set MPICC or IOTRACE_MPI_CFLAGS)", mpicc)
	}
	// Open MPI: --showme:incdirs; MPICH and Intel MPI: -show.
	if out, err := exec.Command(mpicc, "--showme:incdirs").Output(); err == nil {
		var flags []string
		for _, d := range strings.Fields(string(out)) {
			flags = append(flags, "-I"+d)
		}
		return flags, nil
	}
	out, err := exec.Command(mpicc, "-show").Output()
	if err != nil {
		return nil, fmt.Errorf("MPI calls are not recorded: %s tells no include directories: %v", mpicc, err)
	}
	var flags []string
	for _, f := range strings.Fields(string(out)) {
		if strings.HasPrefix(f, "-I") {
			flags = append(flags, f)
		}
	}
	return flags, nil
}
