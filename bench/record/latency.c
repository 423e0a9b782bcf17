// The program of bench/record/run.sh part 4: a file read as dd does with
// skip, an lseek then a 512-byte read, 4096 times; with an argument it
// first moves itself to that processor (its tracer kept on another).
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc > 2) {
		cpu_set_t s;
		CPU_ZERO(&s);
		CPU_SET(atoi(argv[2]), &s);
		if (sched_setaffinity(0, sizeof s, &s) != 0) return 2;
	}
	char b[512];
	int fd = open(argv[1], O_RDONLY);
	if (fd < 0) return 1;
	for (int r = 0; r < 2; r++)
		for (off_t off = 0; off < 1024 * 1024; off += 512) {
			lseek(fd, off, SEEK_SET);
			read(fd, b, 512);
		}
	close(fd);
	return 0;
}
