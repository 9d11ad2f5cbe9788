//go:build ignore

// gotest-summary reads `go test -json` on stdin and prints what plain
// `go test` prints (build errors, the output of failing tests, one line per
// package), then a count of the tests:
//
//	go test: 212 passed, 1 failed, 3 skipped (top-level tests in 18 packages; 1 package failed)
//
// The line starts with -label (default "go test"), so that two runs (plain
// and -race) can be told apart.
//
// It exits 1 when a package failed or did not build. Lines that are not
// JSON (e.g. "go: downloading ...") are printed as they are.
//
// Usage: go test -json ./... 2>&1 | go run scripts/gotest-summary.go [-label NAME]
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action      string
	Package     string
	ImportPath  string
	Test        string
	Output      string
	FailedBuild string
}

type counts struct{ pass, fail, skip int }

func main() {
	label := flag.String("label", "go test", "what the summary line starts with")
	flag.Parse()
	var (
		top, sub      counts
		pkgs          = map[string]string{} // package → ok | fail | skip
		buffered      = map[string][]string{}
		buildFailures = 0
		failedTests   []string
	)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(out, "%s\n", line)
			continue
		}
		topName, _, isSub := strings.Cut(e.Test, "/")
		key := e.Package + "\x00" + topName
		switch e.Action {
		case "build-output":
			fmt.Fprint(out, e.Output)
		case "build-fail":
			buildFailures++
		case "output":
			if e.Test == "" {
				if e.Output != "PASS\n" {
					fmt.Fprint(out, e.Output)
				}
				continue
			}
			buffered[key] = append(buffered[key], e.Output)
		case "pass", "fail", "skip":
			if e.Test == "" {
				pkgs[e.Package] = e.Action
				if e.Action == "fail" {
					// Tests that never finished (panic, timeout): show them.
					var left []string
					for k := range buffered {
						if strings.HasPrefix(k, e.Package+"\x00") {
							left = append(left, k)
						}
					}
					sort.Strings(left)
					for _, k := range left {
						fmt.Fprint(out, strings.Join(buffered[k], ""))
						delete(buffered, k)
					}
				}
				continue
			}
			c := &top
			if isSub {
				c = &sub
			}
			switch e.Action {
			case "pass":
				c.pass++
			case "fail":
				c.fail++
			case "skip":
				c.skip++
			}
			if isSub {
				continue
			}
			if e.Action == "fail" {
				failedTests = append(failedTests, e.Package+"."+e.Test)
				fmt.Fprint(out, strings.Join(buffered[key], ""))
			}
			delete(buffered, key)
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(out, "gotest-summary: reading input:", err)
		buildFailures++
	}
	failedPkgs := 0
	for _, st := range pkgs {
		if st == "fail" {
			failedPkgs++
		}
	}
	fmt.Fprintln(out)
	for _, name := range failedTests {
		fmt.Fprintln(out, "FAILED", name)
	}
	fmt.Fprintf(out, "%s: %d passed, %d failed, %d skipped (top-level tests in %d packages; subtests: %d passed, %d failed, %d skipped; %d packages failed, %d builds failed)\n", *label,
		top.pass, top.fail, top.skip, len(pkgs), sub.pass, sub.fail, sub.skip, failedPkgs, buildFailures)
	out.Flush()
	if failedPkgs > 0 || buildFailures > 0 || top.fail > 0 {
		os.Exit(1)
	}
}
