// Package browsertest helps tests of HTML pages: it runs headless
// Chromium, which loads a local page, returns the DOM as the browser built
// it and takes screenshots that tests keep as artifacts, and it picks
// elements and table rows out of a page.
//
// A test that needs Chromium calls Find: without a browser the test is
// skipped with a message, except under CI=true, where it fails (.ci/run
// installs the Debian package chromium). IOTRACE_CHROMIUM names the
// browser binary when it is not on PATH as chromium, chromium-browser,
// google-chrome or google-chrome-stable.
package browsertest

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Browser is a Chromium binary.
type Browser struct{ Path string }

// Find returns the browser, or skips t (fails it under CI=true).
func Find(t testing.TB) *Browser {
	t.Helper()
	names := []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}
	if p := os.Getenv("IOTRACE_CHROMIUM"); p != "" {
		names = []string{p}
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return &Browser{Path: p}
		}
	}
	msg := "headless Chromium is needed (apt-get install -y chromium, or set IOTRACE_CHROMIUM)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return nil
}

// run runs the browser headless on the page with extra flags, in a new
// profile directory, with no network beyond the page, and returns its
// standard output.
func (b *Browser) run(t testing.TB, page string, flags ...string) []byte {
	t.Helper()
	abs, err := filepath.Abs(page)
	if err != nil {
		t.Fatal(err)
	}
	profile := t.TempDir()
	args := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--disable-default-apps", "--user-data-dir=" + profile,
	}, flags...)
	args = append(args, "file://"+abs)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.Path, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), "HOME="+profile)
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", b.Path, strings.Join(args, " "), err, tail(stderr.String(), 4000))
	}
	return stdout.Bytes()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// DumpDOM loads page and returns its DOM, serialised after the page
// loaded (and its scripts, if it had any, ran).
func (b *Browser) DumpDOM(t testing.TB, page string) string {
	t.Helper()
	dom := b.run(t, page, "--dump-dom")
	if len(dom) == 0 {
		t.Fatalf("chromium dumped no DOM for %s", page)
	}
	return string(dom)
}

// Screenshot loads page in a window width × height pixels and writes a
// PNG of it to out; it returns the decoded image.
func (b *Browser) Screenshot(t testing.TB, page, out string, width, height int) image.Image {
	t.Helper()
	out, err := filepath.Abs(out)
	if err != nil {
		t.Fatal(err)
	}
	b.run(t, page, "--hide-scrollbars", "--window-size="+strconv.Itoa(width)+","+strconv.Itoa(height), "--screenshot="+out)
	f, err := os.Open(out)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", out, err)
	}
	t.Logf("screenshot: %s", out)
	return img
}

// ArtifactDir returns the directory for test artifacts: $IOTRACE_ARTIFACTS
// (created if need be, and kept), or else a new temporary directory, kept
// only when the test fails, to look at (Screenshot logs the path of each
// file it writes): a run that passes leaves nothing behind.
func ArtifactDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("IOTRACE_ARTIFACTS")
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	dir, err := os.MkdirTemp("", "iotrace-artifacts-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the test's artifacts are kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	return dir
}

// CountColor returns how many pixels of img have the colour #rrggbb,
// each channel within tol.
func CountColor(img image.Image, rgb uint32, tol int) int {
	want := [3]int{int(rgb >> 16 & 0xff), int(rgb >> 8 & 0xff), int(rgb & 0xff)}
	n := 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			got := [3]int{int(r >> 8), int(g >> 8), int(b >> 8)}
			ok := true
			for i := range got {
				if d := got[i] - want[i]; d > tol || d < -tol {
					ok = false
				}
			}
			if ok {
				n++
			}
		}
	}
	return n
}

// Element returns the element of page with the id, from its start tag to
// the first end tag of the same name (so it suits elements that hold no
// element of their own name: a table, an svg, a section).
func Element(t testing.TB, page, id string) string {
	t.Helper()
	i := strings.Index(page, `id="`+id+`"`)
	if i < 0 {
		t.Fatalf("no element with id %q", id)
	}
	start := strings.LastIndex(page[:i], "<")
	name := strings.Fields(page[start+1 : i])[0]
	end := strings.Index(page[i:], "</"+name+">")
	if end < 0 {
		t.Fatalf("element %q has no end tag", id)
	}
	return page[start : i+end+len(name)+3]
}

var (
	rowRE  = regexp.MustCompile(`(?s)<tr[^>]*>(.*?)</tr>`)
	cellRE = regexp.MustCompile(`(?s)<t[dh][^>]*>(.*?)</t[dh]>`)
)

// Rows returns the cells of the rows of a table (header rows included),
// as they stand in the page (escaped).
func Rows(table string) [][]string {
	var out [][]string
	for _, r := range rowRE.FindAllStringSubmatch(table, -1) {
		var cells []string
		for _, c := range cellRE.FindAllStringSubmatch(r[1], -1) {
			cells = append(cells, c[1])
		}
		out = append(out, cells)
	}
	return out
}
