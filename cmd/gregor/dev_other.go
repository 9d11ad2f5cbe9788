//go:build !linux

package main

import "syscall"

// devChildAttrs: outside Linux the nodes share gregor dev's process group,
// so a terminal's Ctrl-C reaches them too (each shuts down cleanly on it).
func devChildAttrs() *syscall.SysProcAttr { return nil }
