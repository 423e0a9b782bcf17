package trace

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestOpNames(t *testing.T) {
	for _, op := range Ops() {
		info := op.Info()
		if !op.Known() || info.Name == "" || info.Family == "" {
			t.Fatalf("op %d: %+v", op, info)
		}
		if got, ok := ParseOp(op.String()); !ok || got != op {
			t.Errorf("ParseOp(%q) = %d, %v; want %d", op.String(), got, ok, op)
		}
		if info.Class == ClassMPIIO || info.Class == ClassComm {
			for _, name := range []string{strings.ToLower(info.Name), strings.ToUpper(info.Name)} {
				if got, ok := ParseOp(name); !ok || got != op {
					t.Errorf("ParseOp(%q) = %d, %v; want %d", name, got, ok, op)
				}
			}
		}
		if op.Class() != info.Class || op.Dir() != info.Dir {
			t.Errorf("op %s: Class/Dir disagree with Info", op)
		}
		data := info.Family == "read" || info.Family == "write" || info.Family == "copy" ||
			strings.HasPrefix(info.Name, "MPI_File_") && strings.Contains(info.Name, "read") ||
			strings.HasPrefix(info.Name, "MPI_File_") && strings.Contains(info.Name, "write")
		if (info.Dir != DirNone) != data {
			t.Errorf("op %s: direction %d", op, info.Dir)
		}
	}
	// Unknown ops keep their number.
	for _, n := range []uint16{0, 99, 999, 1023, 1024, 65535} {
		op := Op(n)
		if op.Known() {
			continue
		}
		name := op.String()
		if name != "op#"+strconv.Itoa(int(n)) || op.Info().Family != "unknown" || op.Class() != ClassUnknown || op.Dir() != DirNone {
			t.Errorf("unknown op %d: %q %+v", n, name, op.Info())
		}
		if got, ok := ParseOp(name); !ok || got != op {
			t.Errorf("ParseOp(%q) = %d, %v", name, got, ok)
		}
	}
	for _, bad := range []string{"", "wrte", "op#", "op#65536", "op#-1", "op#01", "op# 1", "MPI_Nothing"} {
		if op, ok := ParseOp(bad); ok {
			t.Errorf("ParseOp(%q) = %d, want an error", bad, op)
		}
	}
	for alias, want := range map[string]Op{"pread64": OpPread, "newfstatat": OpFstatat, "lseek64": OpLseek} {
		if got, _ := ParseOp(alias); got != want {
			t.Errorf("ParseOp(%q) = %s, want %s", alias, got, want)
		}
	}
}

// TestOpTableDoc: the op table of docs/FORMAT.md lists every op with its
// number, class and family, as this package has them.
func TestOpTableDoc(t *testing.T) {
	doc, err := os.ReadFile("../docs/FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	sec := string(doc)
	i := strings.Index(sec, "Op numbers (stable")
	if i < 0 {
		t.Fatal("FORMAT.md has no op table")
	}
	sec = sec[i:]
	sec = sec[:strings.Index(sec, "\n\n## ")]
	classes := map[string]Class{"POSIX": ClassPOSIX, "POSIX metadata": ClassMeta, "MPI-IO": ClassMPIIO,
		"MPI communication": ClassComm, "markers": ClassMarker, "process": ClassProcess}
	entry := regexp.MustCompile(`^(\d+) (\S+)`)
	seen := map[Op]bool{}
	for _, line := range strings.Split(sec, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 5 || !strings.Contains(cells[1], "–") {
			continue
		}
		class, ok := classes[strings.TrimSpace(cells[2])]
		if !ok {
			t.Fatalf("unknown class in %q", line)
		}
		lo, _ := strconv.Atoi(strings.Split(strings.TrimSpace(cells[1]), "–")[0])
		hi, _ := strconv.Atoi(strings.Split(strings.TrimSpace(cells[1]), "–")[1])
		for _, group := range strings.Split(cells[3], ";") {
			group = strings.TrimSpace(group)
			family := ""
			if j := strings.LastIndex(group, " ("); j >= 0 && strings.HasSuffix(group, ")") {
				family = group[j+2 : len(group)-1]
				group = group[:j]
			}
			for _, e := range strings.Split(group, ",") {
				m := entry.FindStringSubmatch(strings.TrimSpace(e))
				if m == nil {
					t.Fatalf("cannot read %q in %q", e, line)
				}
				n, _ := strconv.Atoi(m[1])
				op, ok := ParseOp(m[2])
				info := op.Info()
				switch {
				case !ok || int(op) != n:
					t.Errorf("FORMAT.md: %d %s, but ParseOp gives %d (%v)", n, m[2], op, ok)
				case n < lo || n > hi:
					t.Errorf("FORMAT.md: %d %s outside its range %d–%d", n, m[2], lo, hi)
				case info.Class != class:
					t.Errorf("FORMAT.md: %s is %s, the table says %s", m[2], info.Class, cells[2])
				case family != "" && family != "each its own family" && info.Family != family:
					t.Errorf("FORMAT.md: %s is in family %s, the table says %s", m[2], info.Family, family)
				case (family == "" || family == "each its own family") && info.Family != info.Name:
					t.Errorf("FORMAT.md: %s is in family %s, the table says its own", m[2], info.Family)
				}
				seen[op] = true
			}
		}
	}
	for _, op := range Ops() {
		if !seen[op] {
			t.Errorf("op %d %s is not in FORMAT.md", op, op)
		}
	}
}

// TestOpsSortedAndOwn: Ops lists every op of the table once, in numeric
// order, in a slice the caller may change without changing the next
// call's.
func TestOpsSortedAndOwn(t *testing.T) {
	a := Ops()
	if len(a) != len(opTable) {
		t.Fatalf("Ops gives %d ops, the table has %d", len(a), len(opTable))
	}
	for i, op := range a {
		if _, ok := opTable[op]; !ok || i > 0 && a[i-1] >= op {
			t.Fatalf("Ops()[%d] = %d: not a known op in numeric order (%v)", i, op, a)
		}
	}
	want := a[0]
	a[0] = OpUnknown
	if b := Ops(); b[0] != want {
		t.Errorf("changing one call's slice changed the next's: %d, want %d", b[0], want)
	}
}
