/* The leader thread ends with exit(2) while a second thread runs on:
 * the process's leader is then a zombie, which runc takes for a
 * stopped container, and the thread is the container's work. */
#include <pthread.h>
#include <unistd.h>
#include <sys/syscall.h>

static void *work(void *arg) {
	(void)arg;
	for (;;)
		sleep(1);
	return 0;
}

int main(void) {
	pthread_t t;
	if (pthread_create(&t, 0, work, 0) != 0)
		return 1;
	syscall(SYS_exit, 0);
	return 0;
}
