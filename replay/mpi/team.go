//go:build mpi

package mpi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/replay/posix"
	"github.com/iotrace/iotrace/replay/session"
	"github.com/iotrace/iotrace/trace/units"
)

// markerName is the file the lead leaves in the target, so that the other
// processes can check they see the same directory.
const markerName = ".ioreplay-mpi"

// TeamOptions configure a Team.
type TeamOptions struct {
	// MPIIO replays file calls through MPI-IO (the MPI-IO backend);
	// otherwise through POSIX.
	MPIIO bool
	// Hints are MPI_Info hints (key, value) for every file MPI-IO opens.
	Hints [][2]string
	// Log receives what a process says on its own: its error when it
	// stops the job.
	Log *slog.Logger
	// Failed, if set, is told what a process whose ranks failed did,
	// before it stops the job.
	Failed func(*replay.Result)
}

// Team is the processes of an MPI job replaying one trace (a
// session.Team): process 0 leads; the trace ranks are spread block-wise
// over the processes (Proc.Share); their communication goes through MPI
// (World), their files through POSIX or MPI-IO (Backend).
type Team struct {
	proc  *Proc
	opts  TeamOptions
	job   *Job
	world *World
	stats WorldStats
}

var _ session.Team = (*Team)(nil)

// NewTeam connects to the MPI job (Connect) and returns this process's
// place in it. Unless GOMAXPROCS says otherwise, the process uses its
// share of the node's processors (Proc.Processors), so that the runtime's
// helpers do not take the cores of the job's other processes. Close ends
// MPI.
func NewTeam(opts TeamOptions) (*Team, error) {
	proc, err := Connect()
	if err != nil {
		return nil, err
	}
	if os.Getenv("GOMAXPROCS") == "" {
		if n := proc.Processors(); n < runtime.GOMAXPROCS(0) {
			runtime.GOMAXPROCS(n)
		}
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Team{proc: proc, opts: opts}, nil
}

// Close ends MPI (Finalize).
func (t *Team) Close() error { return Finalize() }

// Rank is this process's rank in the job.
func (t *Team) Rank() int { return t.proc.Rank }

// Lead implements session.Team: process 0.
func (t *Team) Lead() bool { return t.proc.Rank == 0 }

// Agree implements session.Team.
func (t *Team) Agree(err error) error { return t.proc.Agree(err) }

// Broadcast implements session.Team.
func (t *Team) Broadcast(s string) string { return t.proc.BcastString(s, 0) }

// Join implements session.Team.
func (t *Team) Join(o *replay.Options) {
	o.Share = t.proc.Share
	o.World = func([]uint32, map[uint32][]uint32) replay.World { return t.world }
}

// Share implements session.Team.
func (t *Team) Share(ranks []uint32) []uint32 { return t.proc.Share(ranks) }

// Parted implements session.Team: each process records its ranks.
func (t *Team) Parted() bool { return true }

// Plan implements session.Team: every process checks it has the same
// plan, makes the job's communicators, and checks the byte counts of the
// collectives.
func (t *Team) Plan(rp *replay.Replay) error {
	job, err := NewJob(t.proc, rp.Plan(), JobOptions{FileSlots: t.opts.MPIIO})
	if err := t.proc.Agree(err); err != nil {
		return err
	}
	t.job = job
	return job.CheckCounts(rp.Trace())
}

// Backend implements session.Team: the POSIX backend, or MPI-IO over it.
func (t *Team) Backend(px *posix.Backend) (replay.Backend, error) {
	if !t.opts.MPIIO {
		return px, nil
	}
	return NewBackend(t.job, px, t.opts.Hints)
}

// SameTarget implements session.Team: the lead leaves a marker in the
// target; every process looks for it.
func (t *Team) SameTarget(target string) error {
	marker := filepath.Join(target, markerName)
	var err error
	if t.Lead() {
		err = os.WriteFile(marker, []byte(fmt.Sprint(os.Getpid())), 0o644)
	}
	if err := t.proc.Agree(err); err != nil {
		return err
	}
	if _, serr := os.Stat(marker); serr != nil {
		host, _ := os.Hostname()
		err = fmt.Errorf("the target %s on %s is not the directory process 0 prepared: give --target a directory every process shares", target, host)
	}
	if err := t.proc.Agree(err); err != nil {
		return err
	}
	t.proc.Barrier()
	if t.Lead() {
		os.Remove(marker)
	}
	return nil
}

// Start implements session.Team: the communication layer over MPI.
func (t *Team) Start() {
	t.world = NewWorld(t.job, WorldOptions{FilesSynchronise: t.opts.MPIIO})
}

// Barrier implements session.Team.
func (t *Team) Barrier() { t.proc.Barrier() }

// Finish implements session.Team: a process whose ranks failed stops the
// whole job (the others may wait for its ranks' messages); otherwise the
// processes wait for each other's ranks and send what their worlds did
// to the lead. How their ranks went is in their parts of the trace.
func (t *Team) Finish(res *replay.Result, runErr error) error {
	if runErr != nil {
		t.opts.Log.Error(fmt.Sprintf("process %d: %v", t.proc.Rank, runErr))
		if res != nil && t.opts.Failed != nil {
			t.opts.Failed(res)
		}
		Abort(1)
	}
	stats, werr := t.world.Wait()
	if err := t.proc.Agree(werr); err != nil {
		return err
	}
	all := t.proc.Gather(stats.marshal())
	for q, b := range all {
		var ws WorldStats
		if _, err := ws.unmarshal(b); err != nil {
			return fmt.Errorf("process %d sent damaged counts: %w", q, err)
		}
		t.stats.add(ws)
	}
	return nil
}

// Parts implements session.Team: the lead receives every process's part.
func (t *Team) Parts(part string) ([]string, error) {
	var parts []string
	err := t.proc.GatherFile(part, func(q int) (io.WriteCloser, error) {
		pf, err := os.CreateTemp("", fmt.Sprintf("ioreplay-part%d-*.iot", q))
		if err == nil {
			parts = append(parts, pf.Name())
		}
		return pf, err
	})
	if !t.Lead() {
		return nil, err
	}
	if err != nil {
		removeAll(parts)
		return nil, fmt.Errorf("collecting the replay's trace: %w", err)
	}
	return parts, nil
}

func removeAll(files []string) {
	for _, f := range files {
		os.Remove(f)
	}
}

// Describe implements session.Team: which process runs which ranks.
func (t *Team) Describe(ranks []uint32) string {
	var b strings.Builder
	fmt.Fprintf(&b, "processes: %d (%s)\n", t.proc.Size, t.shares(ranks))
	for q := 0; q < t.proc.Size; q++ {
		lo, hi := len(ranks)*q/t.proc.Size, len(ranks)*(q+1)/t.proc.Size
		fmt.Fprintf(&b, "  process %d: ranks", q)
		for _, r := range ranks[lo:hi] {
			fmt.Fprintf(&b, " %d", r)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Summary implements session.Team: the processes, and what went between
// them.
func (t *Team) Summary(ranks []uint32) string {
	backend := "posix"
	if t.opts.MPIIO {
		backend = "mpiio"
	}
	s := fmt.Sprintf("mpi: %d processes, %d ranks (%s); between processes %d messages (%s), %d collectives, backend %s",
		t.proc.Size, len(ranks), t.shares(ranks), t.stats.Messages, units.Bytes(t.stats.Bytes), t.stats.Collectives, backend)
	if t.stats.Unreceived > 0 {
		s += fmt.Sprintf("\nmpi: %d messages were sent but never received", t.stats.Unreceived)
	}
	return s
}

// shares says how many ranks each process runs.
func (t *Team) shares(ranks []uint32) string {
	lo, hi := len(ranks), 0
	for q := 0; q < t.proc.Size; q++ {
		n := len(ranks)*(q+1)/t.proc.Size - len(ranks)*q/t.proc.Size
		lo, hi = min(lo, n), max(hi, n)
	}
	if lo == hi {
		return fmt.Sprintf("%d per process", lo)
	}
	return fmt.Sprintf("%d–%d per process", lo, hi)
}

// marshal encodes the counts for Gather.
func (s WorldStats) marshal() []byte {
	b := binary.AppendVarint(nil, s.Messages)
	b = binary.AppendVarint(b, s.Bytes)
	b = binary.AppendVarint(b, s.Collectives)
	return binary.AppendVarint(b, s.Unreceived)
}

// unmarshal decodes what marshal wrote at the start of b and returns the
// rest.
func (s *WorldStats) unmarshal(b []byte) ([]byte, error) {
	for _, v := range []*int64{&s.Messages, &s.Bytes, &s.Collectives, &s.Unreceived} {
		x, n := binary.Varint(b)
		if n <= 0 {
			return nil, errors.New("bad counts")
		}
		*v, b = x, b[n:]
	}
	return b, nil
}

func (s *WorldStats) add(o WorldStats) {
	s.Messages += o.Messages
	s.Bytes += o.Bytes
	s.Collectives += o.Collectives
	s.Unreceived += o.Unreceived
}
