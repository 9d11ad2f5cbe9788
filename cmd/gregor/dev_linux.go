package main

import "syscall"

// devChildAttrs puts a dev node in its own process group (a terminal's
// Ctrl-C reaches gregor dev alone, which stops the nodes itself) and has
// the kernel send it SIGTERM should gregor dev die first.
func devChildAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
