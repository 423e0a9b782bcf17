//go:build mpi

package mpi

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

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
	// PeerTimeout is how long a process may not answer before the
	// others stop the replay (a node lost, a link cut, a process
	// frozen); 0 is DefaultPeerTimeout.
	PeerTimeout time.Duration
	// Grace is how long the processes of a replay stopped so wait for
	// the launcher to end the job before they abort it; 0 is
	// DefaultGrace.
	Grace time.Duration
}

// DefaultPeerTimeout is the default of TeamOptions.PeerTimeout.
const DefaultPeerTimeout = time.Minute

// DefaultGrace is the default of TeamOptions.Grace: longer than Open
// MPI's default notice of a lost node (its out-of-band keepalive: 300 s
// idle, then 9 probes 20 s apart), so that mpirun ends the job first
// (docs/MPI.md, "When a node is lost").
const DefaultGrace = 10 * time.Minute

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

	// hosts holds, on the lead, every process's host; elsewhere the
	// lead's alone.
	hosts []string
	watch *watch
	// The failure of the job, once a process stopped answering, and the
	// run it cancels.
	mu      sync.Mutex
	failure error
	cancel  context.CancelCauseFunc
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
	if opts.PeerTimeout <= 0 {
		opts.PeerTimeout = DefaultPeerTimeout
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	t := &Team{proc: proc, opts: opts}
	// Names for the messages: the lead knows every process's host, the
	// others the lead's.
	names := proc.Gather([]byte(proc.Host))
	for _, n := range names {
		t.hosts = append(t.hosts, string(n))
	}
	if !t.Lead() {
		t.hosts = []string{proc.BcastString("", 0)}
	} else {
		proc.BcastString(proc.Host, 0)
	}
	if t.watch, err = newWatch(proc, opts.PeerTimeout, t.describe, t.lost); err != nil {
		return nil, err
	}
	return t, nil
}

// Close stops watching the other processes and ends MPI (Finalize).
func (t *Team) Close() error {
	t.watch.close()
	return Finalize()
}

// Rank is this process's rank in the job.
func (t *Team) Rank() int { return t.proc.Rank }

// Lead implements session.Team: process 0.
func (t *Team) Lead() bool { return t.proc.Rank == 0 }

// Process implements session.Team: the rank in MPI_COMM_WORLD.
func (t *Team) Process() int { return t.proc.Rank }

// Prepares implements session.Team: process 0, or with node-local
// targets the first process of each node.
func (t *Team) Prepares(nodeLocal bool) bool {
	if nodeLocal {
		return t.proc.Rank == t.proc.NodeFirst
	}
	return t.Lead()
}

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
	t.mu.Lock()
	t.job = job
	t.mu.Unlock()
	return job.CheckCounts(rp.Trace())
}

// Backend implements session.Team: the POSIX backend, or MPI-IO over it.
func (t *Team) Backend(px *posix.Backend) (replay.Backend, error) {
	if !t.opts.MPIIO {
		return px, nil
	}
	return NewBackend(t.job, px, t.opts.Hints)
}

// SameTarget implements session.Team: each preparer leaves a marker
// naming itself in the target; every process looks for its preparer's,
// and with node-local targets each preparer checks it sees no other's.
func (t *Team) SameTarget(target string, nodeLocal bool) error {
	marker := func(p int) string { return filepath.Join(target, fmt.Sprintf("%s-%d", markerName, p)) }
	mine := 0 // the preparer
	if nodeLocal {
		mine = t.proc.NodeFirst
	}
	prepares := t.Prepares(nodeLocal)
	var err error
	if prepares {
		err = os.WriteFile(marker(mine), []byte(t.proc.Host), 0o644)
	}
	if err := t.proc.Agree(err); err != nil {
		return err
	}
	if _, serr := os.Stat(marker(mine)); serr != nil {
		if nodeLocal {
			err = fmt.Errorf("the target %s on host %s is not the directory the node's first process (process %d) sees: with --node-local, the processes of a node must share it", target, t.proc.Host, mine)
		} else {
			err = fmt.Errorf("the target %s on host %s is not the directory process 0 prepared: give --target a directory every process shares, or --node-local for storage of each node's own", target, t.proc.Host)
		}
	} else if nodeLocal && prepares {
		err = t.sharedTarget(target, mine)
	}
	if err := t.proc.Agree(err); err != nil {
		if prepares {
			os.Remove(marker(mine))
		}
		return err
	}
	t.proc.Barrier()
	if prepares {
		os.Remove(marker(mine))
	}
	return nil
}

// sharedTarget returns an error if another node's first process left its
// marker in target: the node-local target is one directory of several
// nodes.
func (t *Team) sharedTarget(target string, mine int) error {
	ents, err := os.ReadDir(target)
	if err != nil {
		return err
	}
	for _, e := range ents {
		n, ok := strings.CutPrefix(e.Name(), markerName+"-")
		if !ok || n == fmt.Sprint(mine) {
			continue
		}
		other, _ := os.ReadFile(filepath.Join(target, e.Name()))
		return fmt.Errorf("--node-local: the target %s of host %s is the directory of host %s too (process %s): node-local storage is of one node; drop --node-local for a shared directory", target, t.proc.Host, other, n)
	}
	return nil
}

// Start implements session.Team: the communication layer over MPI, and
// the context of the run, which the team cancels when a process of the
// job stops answering.
func (t *Team) Start(ctx context.Context) context.Context {
	ctx, cancel := context.WithCancelCause(ctx)
	w := NewWorld(t.job, WorldOptions{FilesSynchronise: t.opts.MPIIO})
	t.mu.Lock()
	t.world, t.cancel = w, cancel
	failure := t.failure
	t.mu.Unlock()
	if failure != nil {
		cancel(failure)
		w.Stop(failure)
	}
	return ctx
}

// Barrier implements session.Team.
func (t *Team) Barrier() { t.proc.Barrier() }

// Finish implements session.Team: a process whose ranks failed stops the
// whole job (the others may wait for its ranks' messages); otherwise the
// processes wait for each other's ranks and send what their worlds did
// to the lead. How their ranks went is in their parts of the trace.
func (t *Team) Finish(res *replay.Result, part string, runErr error) error {
	var stats WorldStats
	var werr error
	if runErr == nil && t.failed() == nil {
		stats, werr = t.world.Wait()
	}
	if t.failed() != nil {
		t.stopped(res, part)
	}
	if runErr != nil {
		t.opts.Log.Error(fmt.Sprintf("process %d: %v", t.proc.Rank, runErr))
		if res != nil && t.opts.Failed != nil {
			t.opts.Failed(res)
		}
		t.opts.Log.Error(fmt.Sprintf("process %d: its part of the replay's trace is kept in %s on host %s", t.proc.Rank, part, t.proc.Host))
		Abort(1)
	}
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

// failed returns the failure of the job: a process stopped answering.
func (t *Team) failed() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failure
}

// lost is the watch's news that a process stopped answering (told: the
// lead said so). It stops this process's ranks and its world; the
// process then waits for the launcher to end the job (endLost). The lead
// says what it lost. The others say nothing: a process that lost the
// lead is likely cut off from the launcher, whose daemon on its node,
// with words to pass on to a lost node, would wait for TCP to give up
// rather than its keepalive; why it stopped is in its part of the
// trace.
func (t *Team) lost(err error, told bool) {
	t.mu.Lock()
	if t.failure != nil {
		t.mu.Unlock()
		return
	}
	t.failure = err
	cancel, w := t.cancel, t.world
	t.mu.Unlock()
	if t.Lead() {
		t.opts.Log.Error(err.Error() + ": stopping the replay")
	}
	if cancel != nil {
		cancel(err)
	}
	if w != nil {
		w.Stop(err)
	}
	go t.endLost()
}

// endLost ends a process of a job that lost a process: when the launcher
// signals it (mpirun and srun end the job once they notice the lost
// node), or after the grace, when it aborts the job itself. It does not
// end the process at once: a process that exits makes mpirun send to the
// lost node's daemon, and mpirun then waits for TCP to give up on it
// (15 minutes) rather than its own keepalive.
func (t *Team) endLost() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	select {
	case <-sig:
		os.Exit(1)
	case <-time.After(t.opts.Grace):
		t.opts.Log.Error(fmt.Sprintf("process %d: the launcher did not end the job within %v: aborting it", t.proc.Rank, t.opts.Grace))
		Abort(1)
	}
}

// stopped ends the run of a process whose job lost a process: the lead
// says where the parts of the replay's trace are, and what its ranks
// did; then the process waits for endLost.
func (t *Team) stopped(res *replay.Result, part string) {
	if t.Lead() {
		if part != "" {
			t.opts.Log.Error(fmt.Sprintf("each process keeps its part of the replay's trace in %s on its host (iotrace merge gathers them; iotrace stats reads them)", filepath.Dir(part)))
		}
		if res != nil && t.opts.Failed != nil {
			t.opts.Failed(res)
		}
		t.opts.Log.Error(fmt.Sprintf("waiting for the launcher to end the job (at most %v, then MPI_Abort)", t.opts.Grace))
	}
	select {}
}

// describe names processes for a message: by host, with their trace
// ranks once the job knows them.
func (t *Team) describe(procs []int) string {
	t.mu.Lock()
	j := t.job
	t.mu.Unlock()
	host := func(q int) string {
		if t.Lead() && q < len(t.hosts) {
			return t.hosts[q]
		}
		if q == 0 && len(t.hosts) > 0 {
			return t.hosts[0]
		}
		return "?"
	}
	var parts []string
	for len(procs) > 0 {
		h := host(procs[0])
		var same, rest []int
		for _, q := range procs {
			if host(q) == h {
				same = append(same, q)
			} else {
				rest = append(rest, q)
			}
		}
		procs = rest
		s := fmt.Sprintf("%s %s on host %s", plural(len(same), "process", "processes"), ranges(same), h)
		if j != nil {
			var rs []int
			for _, q := range same {
				for _, r := range j.ProcessRanks(q) {
					rs = append(rs, int(r))
				}
			}
			if len(rs) > 0 {
				s += fmt.Sprintf(" (trace %s %s)", plural(len(rs), "rank", "ranks"), ranges(rs))
			}
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " and ")
}

// ranges writes sorted numbers compactly: "2–3, 7".
func ranges(v []int) string {
	v = slices.Clone(v)
	slices.Sort(v)
	var parts []string
	for i := 0; i < len(v); {
		k := i
		for k+1 < len(v) && v[k+1] == v[k]+1 {
			k++
		}
		if k > i {
			parts = append(parts, fmt.Sprintf("%d–%d", v[i], v[k]))
		} else {
			parts = append(parts, fmt.Sprint(v[i]))
		}
		i = k + 1
	}
	return strings.Join(parts, ", ")
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
