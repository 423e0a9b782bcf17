// Package helptext holds the long help of the iotrace and ioreplay
// commands, one text file per command (iotrace-stats.txt, ioreplay.txt),
// so that the commands' code stays wiring. A file is the long help, then,
// after a line "Examples:", the examples as the help prints them.
package helptext

import (
	"embed"
	"strings"
)

//go:embed *.txt
var files embed.FS

// Of returns the long help and the examples of the command name
// ("iotrace-stats"); it panics when there is no such file, which is a
// mistake of the build, not of a user.
func Of(name string) (long, examples string) {
	b, err := files.ReadFile(name + ".txt")
	if err != nil {
		panic("helptext: no help for " + name)
	}
	text := strings.TrimRight(string(b), "\n")
	for {
		i := strings.Index(text, "{{")
		j := strings.Index(text, "}}")
		if i < 0 || j < i {
			break
		}
		part, err := files.ReadFile("_" + text[i+2:j] + ".txt")
		if err != nil {
			panic("helptext: " + name + ": no part " + text[i+2:j])
		}
		text = text[:i] + strings.TrimRight(string(part), "\n") + text[j+2:]
	}
	if i := strings.LastIndex(text, "\nExamples:\n"); i >= 0 {
		return text[:i], strings.TrimRight(text[i+len("\nExamples:\n"):], "\n")
	}
	return text, ""
}

// Names lists the commands that have a help file.
func Names() []string {
	ents, _ := files.ReadDir(".")
	var out []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "_") {
			out = append(out, strings.TrimSuffix(e.Name(), ".txt"))
		}
	}
	return out
}
