package admin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strconv"
	"time"
)

// webFS holds the console's templates, stylesheet, script and icon; the
// console needs nothing from the network.
//
//go:embed web
var webFS embed.FS

// Console bounds: every page renders in bounded time and size.
const (
	// maxRows caps every table; the page says when rows were left out.
	maxRows = 1000
	// maxBoardDetails caps the partitions whose cleaner status the
	// compaction board reads (one Source.Cleaner call each).
	maxBoardDetails = 500
	// scanTimeout bounds one message-browser scan on the server side, on
	// top of the client going away.
	scanTimeout = 15 * time.Second
)

// contentSecurityPolicy forbids inline scripts and styles and every other
// origin: keys, values and names are shown on the pages, and even a template
// bug cannot make one of them run.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// console serves the web console's pages from a Source.
type console struct {
	a     *Admin
	src   Source
	pages map[string]*template.Template
	// static maps a file under web/static to its content and a short hash
	// of it, which the pages put in the URL so browsers may cache it.
	static map[string]staticFile
}

type staticFile struct {
	body        []byte
	contentType string
	version     string
}

// RegisterConsole adds the read-only web console to a's routes, reading
// everything from s:
//
//	GET /                                        overview
//	GET /ui/topics                               topics
//	GET /ui/topics/{topic}                       one topic
//	GET /ui/topics/{topic}/{partition}           one partition and its offsets bar
//	GET /ui/topics/{topic}/{partition}/messages  message browser
//	GET /ui/compaction                           compaction board
//	GET /ui/transactions                         transactions holding LSOs back, ongoing ones, automatic abort
//	GET /ui/groups                               consumer groups
//	GET /ui/groups/{group}                       one group
//	GET /ui/static/{file}                        the stylesheet, script and icon
//
// It panics if the embedded templates do not parse or a route is taken, as
// Handle does.
func RegisterConsole(a *Admin, s Source) {
	c := &console{a: a, src: s}
	c.loadStatic()
	c.parseTemplates()
	a.Handle("GET /{$}", c.handle(c.overviewPage))
	a.Handle("GET /ui/{$}", http.RedirectHandler("/", http.StatusFound))
	a.Handle("GET /ui/topics", c.handle(c.topicsPage))
	a.Handle("GET /ui/topics/{topic}", c.handle(c.topicPage))
	a.Handle("GET /ui/topics/{topic}/{partition}", c.handle(c.partitionPage))
	a.Handle("GET /ui/topics/{topic}/{partition}/messages", a.recordBrowser(http.HandlerFunc(c.serveMessages)))
	a.Handle("GET /ui/compaction", c.handle(c.compactionPage))
	a.Handle("GET /ui/transactions", c.handle(c.transactionsPage))
	a.Handle("GET /ui/groups", c.handle(c.groupsPage))
	a.Handle("GET /ui/groups/{group}", c.handle(c.groupPage))
	a.Handle("GET /ui/static/{file}", http.HandlerFunc(c.serveStatic))
	a.Handle("GET /ui/", c.handle(func(*http.Request) (*page, error) {
		return nil, fmt.Errorf("no console page here: %w", ErrNotFound)
	}))
}

func (c *console) loadStatic() {
	c.static = make(map[string]staticFile)
	types := map[string]string{
		"console.css": "text/css; charset=utf-8",
		"console.js":  "text/javascript; charset=utf-8",
		"favicon.svg": "image/svg+xml",
	}
	for name, ct := range types {
		b, err := fs.ReadFile(webFS, "web/static/"+name)
		if err != nil {
			panic(fmt.Sprintf("admin: console asset %s: %v", name, err))
		}
		sum := sha256.Sum256(b)
		c.static[name] = staticFile{body: b, contentType: ct, version: hex.EncodeToString(sum[:6])}
	}
}

// pageFiles are the templates under web/, each defining "content" (and the
// message browser its two halves) on top of layout.html.
var pageFiles = []string{
	"overview.html", "topics.html", "topic.html", "partition.html",
	"compaction.html", "groups.html", "group.html", "messages.html", "error.html", "transactions.html",
}

func (c *console) parseTemplates() {
	base := template.New("layout.html").Funcs(c.funcs())
	base = template.Must(base.ParseFS(webFS, "web/layout.html", "web/offsetsbar.html", "web/unclean.html"))
	c.pages = make(map[string]*template.Template, len(pageFiles))
	for _, f := range pageFiles {
		t := template.Must(base.Clone())
		c.pages[f] = template.Must(t.ParseFS(webFS, "web/"+f))
	}
}

// page is what every console page hands the layout.
type page struct {
	// Template is the file under web/ that defines the page's content.
	Template string
	Title    string
	// Nav names the navigation entry to highlight.
	Nav    string
	Crumbs []crumb
	// JSON is the /v1 route with the same data, linked from the page.
	JSON string
	// Notes are shown above the content, e.g. "showing 1000 of 5000 rows".
	Notes []string
	Now   time.Time
	Body  any
}

type crumb struct {
	Name string
	Href string
}

// handle adapts a page builder to HTTP: it renders the page into a buffer
// first, so a failure yields a whole error page with the right status
// instead of half a page.
func (c *console) handle(build func(*http.Request) (*page, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := build(r)
		if err != nil {
			c.renderError(w, r, err)
			return
		}
		p.Now = c.a.now()
		var buf bytes.Buffer
		if err := c.pages[p.Template].ExecuteTemplate(&buf, "layout", p); err != nil {
			c.a.log.Warn("console: render", "page", p.Template, "err", err)
			c.renderError(w, r, fmt.Errorf("rendering %s: %w", p.Template, err))
			return
		}
		setPageHeaders(w)
		w.WriteHeader(http.StatusOK)
		w.Write(buf.Bytes())
	})
}

func setPageHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", contentSecurityPolicy)
}

// errorBody is the error page's content.
type errorBody struct {
	Status     int
	StatusText string
	Message    string
	Path       string
}

func (c *console) renderError(w http.ResponseWriter, r *http.Request, err error) {
	status, _, retryAfter := errorStatus(err)
	if retryAfter {
		w.Header().Set("Retry-After", "1")
	}
	if status == http.StatusInternalServerError && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		status = http.StatusServiceUnavailable
	}
	if status == http.StatusInternalServerError {
		c.a.log.Warn("console: page failed", "path", r.URL.Path, "err", err)
	}
	p := &page{
		Template: "error.html",
		Title:    http.StatusText(status),
		Now:      c.a.now(),
		Body:     errorBody{Status: status, StatusText: http.StatusText(status), Message: err.Error(), Path: r.URL.Path},
	}
	var buf bytes.Buffer
	if terr := c.pages["error.html"].ExecuteTemplate(&buf, "layout", p); terr != nil {
		http.Error(w, err.Error(), status)
		return
	}
	setPageHeaders(w)
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

func (c *console) serveStatic(w http.ResponseWriter, r *http.Request) {
	f, ok := c.static[r.PathValue("file")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", f.contentType)
	h.Set("X-Content-Type-Options", "nosniff")
	if r.URL.Query().Get("v") == f.version {
		h.Set("Cache-Control", "public, max-age=86400, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	h.Set("Content-Length", strconv.Itoa(len(f.body)))
	w.Write(f.body)
}

// staticURL is the versioned URL of a file under web/static.
func (c *console) staticURL(name string) string {
	return "/ui/static/" + name + "?v=" + c.static[name].version
}

// partitionParam parses the {partition} path segment.
func partitionParam(r *http.Request) (int32, error) {
	s := r.PathValue("partition")
	p, ok := parsePartition(s)
	if !ok {
		return 0, fmt.Errorf("partition %q is not a partition number: %w", s, ErrNotFound)
	}
	return p, nil
}
