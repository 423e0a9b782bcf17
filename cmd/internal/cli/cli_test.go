package cli

import (
	"bytes"
	"testing"

	"github.com/spf13/cobra"
)

// TestFlagErrors checks that a bad flag is one line naming the program
// once, the subcommand if any, and where to read about the flags.
func TestFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-x"}, "prog: unknown shorthand flag: 'x' in -x (see 'prog --help')\n"},
		{[]string{"sub", "--bogus"}, "prog: sub: unknown flag: --bogus (see 'prog sub --help')\n"},
	} {
		root := &cobra.Command{Use: "prog", RunE: func(*cobra.Command, []string) error { return nil }}
		root.AddCommand(&cobra.Command{Use: "sub", RunE: func(*cobra.Command, []string) error { return nil }})
		var out, errb bytes.Buffer
		if code := RunIO(root, c.args, &out, &errb); code != 1 {
			t.Errorf("%q: exit %d, want 1", c.args, code)
		}
		if errb.String() != c.want {
			t.Errorf("%q: stderr %q, want %q", c.args, errb.String(), c.want)
		}
	}
}
