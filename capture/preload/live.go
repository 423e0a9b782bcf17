package preload

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Env returns the environment that makes the shim write its spools in
// directory dir. IOTRACE_COST, which the shim sets for the images a
// program execs (its calibration), starts empty: a record inside a
// recorded program calibrates for itself. So does IOTRACE_POOL (PoolEnv,
// after this where a pool runs): not the pool of an outer record.
func Env(dir string) []string {
	return []string{"IOTRACE_SPOOL=" + dir, "IOTRACE_COST=", "IOTRACE_POOL="}
}

// Recover makes the spools in dir ready to read once their processes
// have ended, after a record that ended normally or one that was killed
// (--from-spool): a spool without a header, of a process that ended as
// its shim started (it holds no record), is removed. Spools of processes
// still running are left as they are.
func Recover(dir string) error {
	names, err := filepath.Glob(filepath.Join(dir, "spool-*.sp"))
	if err != nil {
		return err
	}
	for _, n := range names {
		h, ok := readHeader(n)
		if ok {
			continue
		}
		if pid, start := producer(n, h, ok); pid > 0 && procAlive(pid, start) {
			continue
		}
		if err := os.Remove(n); err != nil {
			return err
		}
	}
	return nil
}

// readHeader reads the start of a spool's header; false when it has none
// (yet).
func readHeader(name string) ([]byte, bool) {
	f, err := os.Open(name)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	h := make([]byte, offCapacity+8)
	if _, err := f.ReadAt(h, 0); err != nil || string(h[:8]) != spoolMagic {
		return nil, false
	}
	return h, true
}

// LiveProducers returns the pids of the processes that write spools in
// dir and still run (not zombies; the same process the spool names, by
// its start time, not another that got its pid). gone caches the spools
// found ended, for the next call.
func LiveProducers(dir string, gone map[string]bool) []int {
	names, _ := filepath.Glob(filepath.Join(dir, "spool-*.sp"))
	var pids []int
	for _, n := range names {
		if gone[n] {
			continue
		}
		h, ok := readHeader(n)
		pid, start := producer(n, h, ok)
		if pid <= 0 || !procAlive(pid, start) {
			gone[n] = true
			continue
		}
		if !slices.Contains(pids, pid) {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids
}

// producer returns the pid and process start time of a spool's writer,
// from its header h (when ok), else the pid in its name.
func producer(name string, h []byte, ok bool) (int, uint64) {
	if ok {
		return int(binary.LittleEndian.Uint32(h[20:])), binary.LittleEndian.Uint64(h[offProcStart:])
	}
	var pid int
	var ns int64
	if _, err := fmt.Sscanf(filepath.Base(name), "spool-%d-%d.sp", &pid, &ns); err != nil {
		return 0, 0
	}
	return pid, 0
}

// procAlive says whether process pid runs (a zombie has ended), and, with
// start, whether it is the process that started then.
func procAlive(pid int, start uint64) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return false
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3, the state
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return false
	}
	if start != 0 {
		st, err := strconv.ParseUint(f[19], 10, 64) // field 22
		return err == nil && st == start
	}
	return true
}
