package script

import (
	"fmt"
	"sort"
	"strings"
)

// Error is a problem in a script, at a position: its text is
// "file:line:col: message".
type Error struct {
	File string
	Pos  Pos
	Msg  string
}

func (e *Error) Error() string {
	if !e.Pos.IsValid() {
		return e.File + ": " + e.Msg
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Pos.Line, e.Pos.Col, e.Msg)
}

// Location is where the problem is, "file:line:col" (or "file"): callers
// that add context to errors leave errors that have a Location alone, as
// they already point at the spot.
func (e *Error) Location() string {
	if !e.Pos.IsValid() {
		return e.File
	}
	return fmt.Sprintf("%s:%d:%d", e.File, e.Pos.Line, e.Pos.Col)
}

// ErrorList is every problem a pass found, in the order of the script.
type ErrorList []*Error

// Error returns the first problem, and how many more there are.
func (l ErrorList) Error() string {
	switch len(l) {
	case 0:
		return "no errors"
	case 1:
		return l[0].Error()
	}
	return fmt.Sprintf("%s (and %d more errors)", l[0].Error(), len(l)-1)
}

// Location is the location of the first problem.
func (l ErrorList) Location() string {
	if len(l) == 0 {
		return ""
	}
	return l[0].Location()
}

// Lines returns one line per problem.
func (l ErrorList) Lines() string {
	var b strings.Builder
	for _, e := range l {
		b.WriteString(e.Error())
		b.WriteByte('\n')
	}
	return b.String()
}

func (l ErrorList) sorted() ErrorList {
	sort.SliceStable(l, func(i, j int) bool { return l[i].Pos.Off < l[j].Pos.Off })
	return l
}

// err returns l as an error, nil when it is empty.
func (l ErrorList) err() error {
	if len(l) == 0 {
		return nil
	}
	return l.sorted()
}
