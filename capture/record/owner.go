package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/iotrace/iotrace/launcher"
	"github.com/iotrace/iotrace/trace"
)

// OwnerFile is the name of the file, in a spool directory, that says
// which iotrace record made it (docs/FORMAT.md, "Preload spool").
const OwnerFile = "owner.json"

// Owner is what a spool directory's owner file holds: the recorder that
// made it, so that --from-spool can tell a killed recorder from a live
// one, and what it was recording.
type Owner struct {
	PID     int      `json:"pid"`     // iotrace's pid
	Start   uint64   `json:"start"`   // its start, clock ticks since boot (/proc/PID/stat field 22)
	Started string   `json:"started"` // the same as a time, RFC 3339, for people
	Command []string `json:"command"` // the program record ran
	Out     string   `json:"out"`     // -o, absolute
	// The rank of the recording: its number, whether it was known (from
	// the launcher or --rank) and the run's size (0: unknown), so that
	// the recovered file lands where the record would have put it.
	Rank      uint32 `json:"rank"`
	RankKnown bool   `json:"rank_known"`
	Size      int    `json:"size"`
}

// rank is the owner's rank.
func (o Owner) rank() launcher.Rank {
	return launcher.Rank{Rank: o.Rank, Known: o.RankKnown, Size: o.Size, Source: "the spool's owner file"}
}

// maxOwner bounds the owner file read: a real one is well under 64 KiB.
const maxOwner = 1 << 20

// ParseOwner reads an owner file's contents: one error line for
// anything that is not one.
func ParseOwner(b []byte) (Owner, error) {
	var o Owner
	if len(b) > maxOwner {
		return o, fmt.Errorf("%d bytes, more than an owner file holds", len(b))
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&o); err != nil {
		return Owner{}, fmt.Errorf("not an owner file: %s", oneLine(err.Error()))
	}
	if d.More() {
		return Owner{}, errors.New("not an owner file: data after the object")
	}
	switch {
	case o.PID <= 0:
		return Owner{}, fmt.Errorf("not an owner file: pid %d", o.PID)
	case o.Start == 0:
		return Owner{}, errors.New("not an owner file: no start time")
	case o.Out == "":
		return Owner{}, errors.New("not an owner file: no output name")
	case o.Size < 0 || o.Size > trace.MaxRanks || o.Size > 0 && int64(o.Rank) >= int64(o.Size):
		return Owner{}, fmt.Errorf("not an owner file: rank %d of %d", o.Rank, o.Size)
	}
	return o, nil
}

// oneLine keeps the first line of s.
func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// readOwner reads dir's owner file; fs.ErrNotExist (wrapped) when there is
// none (a spool directory of a recorder before owner files, or made by
// hand).
func readOwner(dir string) (Owner, error) {
	name := filepath.Join(dir, OwnerFile)
	f, err := os.Open(name)
	if err != nil {
		return Owner{}, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxOwner+1))
	if err != nil {
		return Owner{}, fmt.Errorf("%s: %w", name, err)
	}
	o, err := ParseOwner(b)
	if err != nil {
		return Owner{}, fmt.Errorf("%s: %w", name, err)
	}
	return o, nil
}

// writeOwner writes the owner file of this recorder into dir.
func writeOwner(dir string, argv []string, out string, rk launcher.Rank) error {
	start, err := procStart(os.Getpid())
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(Owner{PID: os.Getpid(), Start: start, Started: time.Now().UTC().Format(time.RFC3339),
		Command: argv, Out: abs, Rank: rk.Rank, RankKnown: rk.Known, Size: rk.Size}, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, OwnerFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing the spool's owner file: %w", err)
	}
	return os.Rename(tmp, filepath.Join(dir, OwnerFile))
}

// alive says whether the recorder the owner file names still runs (the
// same process: its start time too; a zombie has ended).
func (o Owner) alive() bool {
	st, err := procStart(o.PID)
	return err == nil && st == o.Start
}

// procStart returns a running process's start time in clock ticks since
// boot (/proc/PID/stat field 22); an error when it is gone or a zombie.
func procStart(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command", pid)
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3, the state
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	if f[0] == "Z" || f[0] == "X" {
		return 0, fmt.Errorf("process %d has ended", pid)
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// SpoolLink is the name of the link record --preload makes beside its
// output to a temporary spool directory while the program runs: OUT.spool,
// or OUT.rank-NNNNN.spool for a rank of a parallel run (whose OUT is a
// directory of rank files).
func SpoolLink(out string, rk launcher.Rank) string {
	out = strings.TrimRight(out, "/")
	if rk.Parallel() {
		return fmt.Sprintf("%s.rank-%05d.spool", out, rk.Rank)
	}
	return out + ".spool"
}

// ResolveSpool returns the spool directory arg names (the directory, or
// a link to it such as OUT.spool) and its owner file, when it has one
// (ok false when not).
func ResolveSpool(arg string) (dir string, own Owner, ok bool, err error) {
	dir, err = filepath.EvalSymlinks(arg)
	if err != nil {
		if l, lerr := os.Readlink(arg); lerr == nil {
			return "", Owner{}, false, fmt.Errorf("%s: the spool directory it links to, %s, is gone", arg, l)
		}
		return "", Owner{}, false, err
	}
	st, err := os.Stat(dir)
	if err != nil {
		return "", Owner{}, false, err
	}
	if !st.IsDir() {
		return "", Owner{}, false, fmt.Errorf("%s: not a spool directory", arg)
	}
	own, err = readOwner(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return dir, Owner{}, false, nil
	case err != nil:
		return "", Owner{}, false, err
	}
	return dir, own, true, nil
}

// commandLine is argv as one line, an argument quoted when it holds a
// space, a quote or a character that is not printable (an owner file is
// outside input: what it says stays on one line).
func commandLine(argv []string) string {
	s := make([]string, len(argv))
	for i, a := range argv {
		s[i] = a
		if a == "" || strings.ContainsAny(a, " \t'\"\\") || printable(a) != a {
			s[i] = strconv.Quote(a)
		}
	}
	return strings.Join(s, " ")
}

// printable is s with its characters that do not print (a newline, a
// control character, invalid UTF-8) written as Go escapes, so that it
// prints on one line.
func printable(s string) string {
	if utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) < 0 {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}
