// Command fetch downloads one URL with Go's HTTP client, which takes its
// proxy from HTTP_PROXY as a job's clients do, discards the body and
// prints the bytes and the seconds the transfer took. The egress bench
// runs the same static binary in the sandbox (through the broker) and on
// the host (directly), so the client is no difference between the two.
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: fetch URL")
		os.Exit(2)
	}
	start := time.Now()
	resp, err := http.Get(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "fetch:", err)
		os.Exit(1)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintln(os.Stderr, "fetch:", resp.Status)
		os.Exit(1)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fetch:", err)
		os.Exit(1)
	}
	fmt.Printf("%d %.6f\n", n, time.Since(start).Seconds())
}
