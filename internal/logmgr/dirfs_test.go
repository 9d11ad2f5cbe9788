package logmgr

import (
	"path/filepath"
	"testing"

	"github.com/gregor-broker/gregor/internal/vfs"
)

// The log dir's wrapper leaves reads alone, so fetches can send segment
// bytes from the OS file behind it (sendfile); an injecting FS's files,
// whose reads it must see, cannot be looked through.
func TestSegmentFilesAreSendable(t *testing.T) {
	dir := t.TempDir()
	m := &Manager{}
	fs := dirFS{FS: vfs.OS(), m: m}
	f, err := fs.Create(filepath.Join(dir, "x.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	osf, ok := vfs.OSFile(f)
	if !ok || osf == nil {
		t.Fatalf("OSFile of a log dir file: ok=%v", ok)
	}
	if _, err := osf.Stat(); err != nil {
		t.Fatal(err)
	}
	wrapped := dirFile{File: f}
	if got, ok := vfs.OSFile(wrapped); !ok || got != osf {
		t.Fatalf("OSFile through dirFile: %v %v", got, ok)
	}
	inj := vfs.NewInjecting(vfs.OS(), vfs.InjectorFunc(func(vfs.Op, string) error { return nil }))
	g, err := inj.Create(filepath.Join(dir, "y.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if _, ok := vfs.OSFile(g); ok {
		t.Fatal("OSFile looked through an injecting FS's file")
	}
}
