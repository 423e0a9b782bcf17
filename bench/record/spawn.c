/*
 * spawn N FILE: starts N processes one after another as git's run_command,
 * make or a spawn helper does: fork, and in the child set up its standard
 * output (open /dev/null, dup2 it to 1) before it execs cat FILE; the
 * parent waits for each. The child's calls before its exec are on /dev/null,
 * which a recording leaves out (bench/record/run.sh, part 5).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: spawn N FILE\n");
		return 2;
	}
	int n = atoi(argv[1]);
	for (int i = 0; i < n; i++) {
		pid_t p = fork();
		if (p < 0) {
			perror("fork");
			return 1;
		}
		if (p == 0) {
			int fd = open("/dev/null", O_WRONLY);
			if (fd < 0 || dup2(fd, 1) < 0) _exit(126);
			close(fd);
			execl("/bin/cat", "cat", argv[2], (char *)NULL);
			_exit(127);
		}
		int st;
		if (waitpid(p, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "spawn: child %d failed\n", i);
			return 1;
		}
	}
	return 0;
}
