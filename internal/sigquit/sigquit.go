// Package sigquit ends a command at SIGQUIT with one line, not the Go
// runtime's dump of every goroutine's stack, except while a recorder
// passes the signal on to the program it runs (Hold).
package sigquit

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

var holds atomic.Int32

// Hold says that a recorder passes SIGQUIT on to its program (and ends
// with it) until the returned function is called.
func Hold() (release func()) {
	holds.Add(1)
	var once atomic.Bool
	return func() {
		if once.CompareAndSwap(false, true) {
			holds.Add(-1)
		}
	}
}

// Quietly makes SIGQUIT end the process with status 131 (128+3, as the
// signal's own action gives a shell) after one line on w, unless a Hold
// is in force.
func Quietly(name string, w io.Writer) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGQUIT)
	go func() {
		for range c {
			if holds.Load() > 0 {
				continue
			}
			fmt.Fprintf(w, "%s: quit (SIGQUIT)\n", name)
			os.Exit(128 + int(syscall.SIGQUIT))
		}
	}()
}
