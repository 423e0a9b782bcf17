// Package logline prints the diagnostics the library reports through
// log/slog (a recorder's warnings, a replay's notes) as the lines a user
// reads on a terminal: one line per record, after the program's name.
package logline

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// New returns a logger whose records are lines a user reads on w:
// "PREFIX: message", "PREFIX: warning: message" at slog.LevelWarn (an
// error, at slog.LevelError, says what it is itself), and debug records
// only when verbose (-v). The library reports
// its diagnostics through such a logger.
func New(w io.Writer, prefix string, verbose bool) *slog.Logger {
	min := slog.LevelInfo
	if verbose {
		min = slog.LevelDebug
	}
	return NewLevel(w, prefix, min)
}

// NewLevel is New with the least level printed: slog.LevelWarn for a
// command's --quiet (warnings and errors only).
func NewLevel(w io.Writer, prefix string, min slog.Level) *slog.Logger {
	return slog.New(&lineHandler{w: w, prefix: prefix, min: min, mu: &sync.Mutex{}})
}

type lineHandler struct {
	w      io.Writer
	prefix string
	min    slog.Level
	attrs  []slog.Attr
	mu     *sync.Mutex
}

func (h *lineHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.min }

func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(h.prefix)
	b.WriteString(": ")
	if r.Level >= slog.LevelWarn && r.Level < slog.LevelError {
		b.WriteString("warning: ")
	}
	b.WriteString(r.Message)
	attr := func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	}
	for _, a := range h.attrs {
		attr(a)
	}
	r.Attrs(attr)
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

func (h *lineHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	return &c
}

func (h *lineHandler) WithGroup(string) slog.Handler { return h }

// IsTerminal reports whether w is a terminal, where a line may be
// rewritten in place (progress).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
