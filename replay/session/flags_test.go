package session

import (
	"flag"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/replay"
	"github.com/iotrace/iotrace/replay/posix"
)

// TestFlags: the flags of a replay make its options, and a bad one is one
// error naming it.
func TestFlags(t *testing.T) {
	parse := func(args ...string) (Options, error) {
		var f Flags
		fs := flag.NewFlagSet("ioreplay", flag.ContinueOnError)
		f.AddFlags(fs)
		if err := fs.Parse(args); err != nil {
			return Options{}, err
		}
		return f.Options()
	}
	o, err := parse("--timing", "think", "--speed", "2", "--data", "fixed", "--map", "/a=b", "--map", "/c=d",
		"--op", "write,open", "--ops", "read", "--split", "64KiB", "--servers", "2", "--rank-subset", "0-1,3")
	if err != nil {
		t.Fatal(err)
	}
	if o.Replay.Timing != replay.Think || o.DefaultTiming || o.Replay.Speed != 2 || !o.Files.FixedData || len(o.Replay.Map) != 2 ||
		len(o.Replay.Transforms.Ops) != 2 || o.Replay.Transforms.Split.Size != 64<<10 || len(o.Replay.Transforms.Ranks) != 3 {
		t.Errorf("options %+v", o)
	}
	if o, _ := parse(); !o.DefaultTiming || o.Cache != posix.CacheCold {
		t.Errorf("no flags: default timing %v, cache %v; want the input's timing and a cold cache", o.DefaultTiming, o.Cache)
	}
	if o, _ := parse("--cache", "as-captured"); o.Cache != posix.CacheAsCaptured {
		t.Errorf("--cache as-captured: %v", o.Cache)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--data", "zeros"}, `--data "zeros"`},
		{[]string{"--speed", "0"}, "--speed 0"},
		{[]string{"--timing", "fast"}, `--timing "fast"`},
		{[]string{"--servers", "2"}, "--servers and --stripe need --split"},
		{[]string{"--align", "4x"}, "--align: "},
		{[]string{"--ops", "wirte"}, `--op: "wirte" is no call, family or class of calls: did you mean write?`},
		{[]string{"--rank-subset", "3-1"}, "--rank: "},
		{[]string{"--map", "x"}, `--map "x"`},
		{[]string{"--cache", "hot"}, `--cache "hot"`},
	} {
		if _, err := parse(c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error with %q", c.args, err, c.want)
		}
	}
}
