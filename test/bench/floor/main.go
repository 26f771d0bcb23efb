// Command floor does nothing. The bench runs it beside plain runc: its CPU
// is the least any extra Go process costs on this machine, so it bounds how
// close to runc a runtime that execs runc from a Go process can come.
package main

func main() {}
