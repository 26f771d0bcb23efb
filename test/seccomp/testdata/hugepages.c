/* hugepages asks for huge pages each way a job can without a hugetlbfs
 * mount, and for ordinary pages as the control. It prints one line per
 * attempt: "<name> ok" or "<name> errno N". */
#include <errno.h>
#include <stdio.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>

#ifndef MAP_HUGETLB
#define MAP_HUGETLB 0x40000
#endif
#ifndef SHM_HUGETLB
#define SHM_HUGETLB 04000
#endif

#define SIZE (2 << 20)

static void report(const char *name, int ok) {
	if (ok)
		printf("%s ok\n", name);
	else
		printf("%s errno %d\n", name, errno);
}

int main(void) {
	void *p = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	report("mmap-hugetlb", p != MAP_FAILED);
	p = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	report("mmap-plain", p != MAP_FAILED);
	int id = shmget(IPC_PRIVATE, SIZE, IPC_CREAT | SHM_HUGETLB | 0600);
	report("shmget-hugetlb", id >= 0);
	if (id >= 0)
		shmctl(id, IPC_RMID, NULL);
	id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
	report("shmget-plain", id >= 0);
	if (id >= 0)
		shmctl(id, IPC_RMID, NULL);
	return 0;
}
