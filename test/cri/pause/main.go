// Command pause is the pod sandbox process of the CRI tests: the CRI plugin
// needs a sandbox image and none can be pulled here, so the tests pack this
// static binary as one. Like Kubernetes' pause it sleeps until SIGTERM or
// SIGINT and, as PID 1 of a pod that shares its PID namespace, reaps
// orphans.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
