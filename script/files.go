package script

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Files expands names into script files: a directory stands for the .iop
// files under it.
func Files(names []string) ([]string, error) {
	var out []string
	for _, a := range names {
		fi, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			out = append(out, a)
			continue
		}
		err = filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(p, ".iop") {
				out = append(out, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Reformat returns src in its canonical form (Format); with check, the
// script must also pass the checks made before it is expanded (Check).
// Problems come as an ErrorList.
func Reformat(name string, src []byte, check bool) ([]byte, error) {
	f, err := Parse(name, src)
	if err == nil && check {
		_, err = Check(f)
	}
	if err != nil {
		return nil, err
	}
	return Format(f), nil
}
