/* vforkpark keeps processes in a vfork wait: their vfork children never
   execute a program, so each parent sleeps in the kernel until killed, and
   no ptrace stop reaches it.
     vforkpark children N   forks N children, each of which vforks a child
                            that pauses for ever; the parent pauses
     vforkpark self         vforks a child that pauses for ever */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void park(void) {
	if (vfork() == 0)
		for (;;)
			pause();
	_exit(0);
}

int main(int argc, char **argv) {
	if (argc == 2 && strcmp(argv[1], "self") == 0)
		park();
	if (argc != 3 || strcmp(argv[1], "children") != 0)
		return 2;
	for (int i = atoi(argv[2]); i > 0; i--)
		if (fork() == 0)
			park();
	for (;;)
		pause();
}
