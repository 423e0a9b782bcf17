package preload

import (
	"path/filepath"
	"testing"
)

const plainProg = `
#include <fcntl.h>
#include <unistd.h>
int main(int argc, char **argv) {
	char buf[64] = {0};
	int fd = open(argv[1], O_CREAT | O_RDWR, 0644);
	if (fd < 0) return 1;
	for (int i = 0; i < 5000; i++) {
		lseek(fd, (i % 16) * 64, SEEK_SET);
		if (write(fd, buf, 64) != 64) return 1;
	}
	return close(fd);
}
`

// TestPlainTail: the wrapper of a plain record (an lseek's, a write's)
// reads no clock at its end: the next record's Over is the calibrated
// tail the spool's header gives (0: none), not a measurement, except
// after a record that took a new block, whose wrapper is measured.
func TestPlainTail(t *testing.T) {
	libs := buildShim(t)
	dir := t.TempDir()
	bin := compile(t, dir, "plain", plainProg, "-O2")
	spool, err := record(t, libs, dir, bin, filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(spool, "spool-*.sp"))
	if len(names) != 1 {
		t.Fatalf("spools %v, want one", names)
	}
	s, err := OpenSpool(names[0])
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Header.Cost.Samples == 0 {
		t.Skip("the shim could not calibrate")
	}
	var prev uint16
	after, other := 0, 0
	var odd []int64
	if _, err := s.Records(func(r *Record) error {
		if prev == cLseek || prev == cWrite {
			after++
			if r.Over != s.Header.Tail {
				other++
				if len(odd) < 10 {
					odd = append(odd, r.Over)
				}
			}
		}
		prev = r.Call
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// 10,000 records of about 10 bytes: some 30 blocks, each taken by
	// one record whose wrapper is measured (a page's first write, µs).
	if after < 9990 || other > int(s.Header.Blocks) {
		t.Errorf("%d records after an lseek or a write, %d with an Over other than the header's tail %d ns (%v...), %d blocks", after, other, s.Header.Tail, odd, s.Header.Blocks)
	}
	t.Logf("tail %d ns; %d of %d records after a plain one measured (%v...); %d blocks", s.Header.Tail, other, after, odd, s.Header.Blocks)
}
