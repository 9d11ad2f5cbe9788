package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// The default layout is the README's manual start: node N on
// 9092+100(N-1), its CONTROLLER listener one above, admin on 9644+100(N-1).
func TestPlanDevLayout(t *testing.T) {
	l, err := planDevLayout(3, 9092, 9644, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := l.voters(), "1@127.0.0.1:9093,2@127.0.0.1:9193,3@127.0.0.1:9293"; got != want {
		t.Errorf("voters %s, want %s", got, want)
	}
	if got, want := l.bootstrap(), "127.0.0.1:9092,127.0.0.1:9192,127.0.0.1:9292"; got != want {
		t.Errorf("bootstrap %s, want %s", got, want)
	}
	if l.Nodes[2].Admin != 9844 {
		t.Errorf("node 3's admin port %d", l.Nodes[2].Admin)
	}
	next := 40000
	l, err = planDevLayout(2, 0, 0, func() (int, error) { next++; return next, nil })
	if err != nil || l.Nodes[1] != (devPorts{ID: 2, Client: 40004, Controller: 40005, Admin: 40006}) {
		t.Errorf("free ports: %+v %v", l, err)
	}
	// The OS may hand out a port it handed out before (its probe listener
	// is closed): every listener still gets its own.
	seen := map[int]bool{}
	next = 0
	l, err = planDevLayout(3, 0, 0, func() (int, error) { next++; return 50000 + next/2, nil })
	if err != nil || len(l.Nodes) != 3 {
		t.Fatalf("free ports given twice: %+v %v", l, err)
	}
	for _, n := range l.Nodes {
		for _, p := range []int{n.Client, n.Controller, n.Admin} {
			if seen[p] {
				t.Fatalf("port %d given to two listeners: %+v", p, l)
			}
			seen[p] = true
		}
	}
	if _, err := planDevLayout(3, 65500, 9644, nil); err == nil {
		t.Error("a layout past port 65535 was accepted")
	}
}

// A second run reuses the first run's layout, and refuses flags that would
// change the cluster's shape.
func TestDevLayoutKept(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dev")
	load := func(args ...string) (devLayout, bool, error) {
		cmd := devCmd()
		if err := cmd.ParseFlags(append([]string{"--dir", dir}, args...)); err != nil {
			t.Fatal(err)
		}
		var f devFlags
		f.nodes, _ = cmd.Flags().GetInt("nodes")
		f.dir, _ = cmd.Flags().GetString("dir")
		f.portBase, _ = cmd.Flags().GetInt("port-base")
		f.adminBase, _ = cmd.Flags().GetInt("admin-port-base")
		return loadDevLayout(cmd, &f)
	}
	first, reused, err := load("--port-base", "0", "--admin-port-base", "0")
	if err != nil || reused || len(first.Nodes) != 3 {
		t.Fatalf("first run: %+v %v %v", first, reused, err)
	}
	again, reused, err := load()
	if err != nil || !reused || again.voters() != first.voters() {
		t.Fatalf("second run: %+v %v %v", again, reused, err)
	}
	if _, _, err := load("--nodes", "5"); err == nil || !strings.Contains(err.Error(), "holds a 3-node cluster") {
		t.Errorf("--nodes 5 on a 3-node cluster: %v", err)
	}
	if _, _, err := load("--port-base", "9092"); err == nil || !strings.Contains(err.Error(), "keeps its ports") {
		t.Errorf("--port-base on an existing cluster: %v", err)
	}
}
