// Package consoletest drives a real headless Chromium against Gregor's web
// console, for the console's own tests and the end-to-end ones: it loads
// pages, fails the test on any console error, uncaught exception or failed
// resource, reads the offsets bar's markers back from the rendered page, and
// keeps screenshots as test artifacts.
//
// It uses Debian's chromium (/usr/bin/chromium, or "chromium" on PATH). When
// there is none, tests skip, unless the CI environment variable is set: CI
// installs the browser, so there a missing one fails the test.
//
// Screenshots go to $GREGOR_TEST_ARTIFACTS, or else to
// $TMPDIR/gregor-test-artifacts.
//
// A Browser belongs to one test goroutine.
package consoletest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Browser is one headless Chromium with one tab.
type Browser struct {
	t   testing.TB
	ctx context.Context

	mu       sync.Mutex
	problems []string
}

// chromiumPath finds Debian's chromium.
func chromiumPath() string {
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	return ""
}

// Start launches the browser for t, bounded by timeout; it is closed when
// the test ends. Without a browser the test is skipped, or failed under CI.
func Start(t testing.TB, timeout time.Duration) *Browser {
	t.Helper()
	exe := chromiumPath()
	if exe == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is not installed (CI must install Debian's chromium package)")
		}
		t.Skip("chromium is not installed; the browser test needs Debian's chromium package")
	}
	ctx, cancelTimeout := context.WithTimeout(context.Background(), timeout)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.Flag("lang", "en-US"),
		chromedp.WindowSize(1400, 900),
		chromedp.UserDataDir(t.TempDir()),
	)
	b := &Browser{t: t}
	tabCtx, cancelTab := chromedp.NewContext(allocCtx, chromedp.WithListener(b.listen))
	b.ctx = tabCtx
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc() // waits for the browser process to exit
		cancelTimeout()
	})
	if err := chromedp.Do(tabCtx); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	return b
}

// listen runs in the tab's event loop: it only records.
func (b *Browser) listen(ev any) {
	var p string
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		p = "exception: " + d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			p += " " + d.Exception.Description
		}
		p += fmt.Sprintf(" (%s:%d)", d.URL, d.LineNumber+1)
	case *runtime.EventConsoleAPICalled:
		if ev.Type != runtime.ConsoleAPICalledTypeError && ev.Type != runtime.ConsoleAPICalledTypeAssert {
			return
		}
		var args []string
		for _, a := range ev.Args {
			if a.Description != "" {
				args = append(args, a.Description)
			} else {
				args = append(args, string(a.Value))
			}
		}
		p = "console." + string(ev.Type) + ": " + strings.Join(args, " ")
	case *cdplog.EventEntryAdded:
		if ev.Entry.Level != cdplog.EntryLevelError {
			return
		}
		p = fmt.Sprintf("log %s: %s (%s)", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
	default:
		return
	}
	b.mu.Lock()
	b.problems = append(b.problems, p)
	b.mu.Unlock()
}

// Visit loads url, waits for the load event and fails the test unless the
// document answered wantStatus and the page logged no error (other than the
// document's own error status, when that is what wantStatus asks for).
func (b *Browser) Visit(url string, wantStatus int64) {
	b.t.Helper()
	resp, err := chromedp.Run(b.ctx, chromedp.NavigateResponse(url))
	if err != nil {
		b.t.Fatalf("loading %s: %v", url, err)
	}
	if resp == nil || resp.Status != wantStatus {
		status := int64(-1)
		if resp != nil {
			status = resp.Status
		}
		b.t.Errorf("loading %s: status %d, want %d", url, status, wantStatus)
	}
	// A round trip through the page makes sure every event the load caused
	// has reached the listener.
	if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`document.readyState === "complete"`)); err != nil {
		b.t.Fatalf("after loading %s: %v", url, err)
	}
	if wantStatus >= 400 {
		// The browser logs the document's own error status; that one was
		// asked for.
		b.mu.Lock()
		b.problems = slices.DeleteFunc(b.problems, func(p string) bool {
			return strings.HasPrefix(p, "log network: ") && strings.HasSuffix(p, "("+url+")") &&
				strings.Contains(p, fmt.Sprintf("status of %d ", wantStatus))
		})
		b.mu.Unlock()
	}
	b.CheckNoProblems(url)
}

// CheckNoProblems fails the test for every console error, exception or
// failed load seen since the last check.
func (b *Browser) CheckNoProblems(what string) {
	b.t.Helper()
	b.mu.Lock()
	ps := b.problems
	b.problems = nil
	b.mu.Unlock()
	for _, p := range ps {
		b.t.Errorf("%s: %s", what, p)
	}
}

// Eval evaluates js in the page and decodes its JSON value into out.
func (b *Browser) Eval(js string, out any) {
	b.t.Helper()
	raw, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]byte](js))
	if err != nil {
		b.t.Fatalf("evaluating %q: %v", js, err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		b.t.Fatalf("evaluating %q: decoding %s: %v", js, raw, err)
	}
}

// Marker is one marker of the offsets bar as the browser laid it out.
type Marker struct {
	Kind   string  `json:"kind"`
	Offset string  `json:"offset"` // decimal: offsets may exceed 2^53
	X      float64 `json:"x"`      // CSS pixels from the page's left edge
	Group  string  `json:"group,omitempty"`
}

// Markers reads every [data-marker] element of the page's offsets bar.
func (b *Browser) Markers() []Marker {
	b.t.Helper()
	var ms []Marker
	b.Eval(`Array.from(document.querySelectorAll("svg.offsets-bar [data-marker]")).map(el => {
		const r = el.getBoundingClientRect();
		return {kind: el.dataset.marker, offset: el.dataset.offset, x: r.left + r.width / 2 + window.scrollX,
			group: el.dataset.group || ""};
	})`, &ms)
	return ms
}

// CheckMarkerOrder fails the test unless the page's offsets bar draws log
// start ≤ LSO ≤ HW ≤ LEO from left to right, each marker once. It returns
// the four x positions.
func (b *Browser) CheckMarkerOrder() map[string]float64 {
	b.t.Helper()
	xs := map[string]float64{}
	for _, m := range b.Markers() {
		switch m.Kind {
		case "log-start", "lso", "hw", "leo":
			if _, dup := xs[m.Kind]; dup {
				b.t.Errorf("marker %s drawn twice", m.Kind)
			}
			xs[m.Kind] = m.X
		}
	}
	order := []string{"log-start", "lso", "hw", "leo"}
	for i, k := range order {
		if _, ok := xs[k]; !ok {
			b.t.Fatalf("the offsets bar has no %s marker", k)
		}
		if i > 0 && xs[order[i-1]] > xs[k]+0.01 {
			b.t.Errorf("offsets bar: %s at x=%.2f is right of %s at x=%.2f", order[i-1], xs[order[i-1]], k, xs[k])
		}
	}
	return xs
}

// ArtifactDir is where the tests keep screenshots: $GREGOR_TEST_ARTIFACTS,
// else $TMPDIR/gregor-test-artifacts.
func ArtifactDir() string {
	if d := os.Getenv("GREGOR_TEST_ARTIFACTS"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "gregor-test-artifacts")
}

// Screenshot writes a PNG of the whole page (not only the window) to
// ArtifactDir()/name and returns its path.
func (b *Browser) Screenshot(name string) string {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.Action[[]byte](func(ctx context.Context, t *chromedp.Target) ([]byte, error) {
		m, err := cdp.Call(ctx, t, page.GetLayoutMetrics, cdp.Empty{})
		if err != nil {
			return nil, err
		}
		w, h := 1400.0, 900.0
		if cs := m.CSSContentSize; cs != nil {
			w, h = max(cs.Width, 1), min(max(cs.Height, 1), 16000)
		}
		yes := true
		r, err := cdp.Call(ctx, t, page.CaptureScreenshot, page.CaptureScreenshotParams{
			Format: page.CaptureScreenshotFormatPng, CaptureBeyondViewport: &yes, FromSurface: &yes,
			Clip: &page.Viewport{Width: w, Height: h, Scale: 1},
		})
		return r.Data, err
	}))
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	dir := ArtifactDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatalf("artifact dir: %v", err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatalf("writing the screenshot: %v", err)
	}
	return path
}

// Click clicks the first element matching the CSS selector sel.
func (b *Browser) Click(sel string) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible)); err != nil {
		b.t.Fatalf("clicking %s: %v", sel, err)
	}
}

// Open starts loading url and returns without waiting for the page to load,
// for pages that take long (a slow message scan).
func (b *Browser) Open(url string) {
	b.t.Helper()
	err := chromedp.Do(b.ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		res, err := cdp.Call(ctx, t, page.Navigate, page.NavigateParams{URL: url})
		if err == nil && res.ErrorText != "" {
			err = fmt.Errorf("%s", res.ErrorText)
		}
		return err
	}))
	if err != nil {
		b.t.Fatalf("opening %s: %v", url, err)
	}
}

// WaitVisible waits until an element matching the CSS selector sel is
// visible, within the browser's deadline.
func (b *Browser) WaitVisible(sel string) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		b.t.Fatalf("waiting for %s: %v", sel, err)
	}
}

// Text returns the text of the first element matching the CSS selector sel.
func (b *Browser) Text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("reading %s: %v", sel, err)
	}
	return s
}
