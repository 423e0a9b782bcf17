package script

import (
	"slices"
	"testing"
)

// TestCommandsComplete: the commands' table, built at its first use, has
// the arguments every command of a kind takes (completeCommands), whoever
// asks first: a lookup, ArgKeys or the list of names.
func TestCommandsComplete(t *testing.T) {
	keys := ArgKeys()
	for _, k := range []string{"thread", "comm", "pos", "fd"} {
		if !slices.Contains(keys, k) {
			t.Errorf("ArgKeys lacks %q: %v", k, keys)
		}
	}
	if c := commands()["read"]; c == nil || c.arg("pos") == nil || c.arg("thread") == nil {
		t.Errorf("read takes no pos or thread argument: %+v", c)
	}
	if c := commands()["bcast"]; c == nil || c.arg("comm") == nil {
		t.Errorf("bcast takes no comm argument: %+v", c)
	}
	if !commands()["sync"].optOperand {
		t.Error("sync's operand is not optional")
	}
	if !Reserved("O_CREAT") || !Reserved("ENOENT") || !Reserved("barrier") || Reserved("myfile") {
		t.Error("Reserved does not know the constants and commands")
	}
}
