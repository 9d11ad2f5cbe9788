package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"syscall"
)

// Op is a kind of filesystem operation, as seen by an Injector.
type Op uint8

const (
	OpCreate   Op = iota // FS.Create
	OpOpen               // FS.Open, FS.OpenReadWrite, FS.Lock
	OpWrite              // File.Write, File.WriteAt
	OpRead               // File.Read, File.ReadAt
	OpSync               // File.Sync
	OpRename             // FS.Rename
	OpRemove             // FS.Remove, FS.RemoveAll
	OpSyncDir            // FS.SyncDir
	OpTruncate           // File.Truncate
	OpMkdir              // FS.MkdirAll
	OpList               // FS.List
	OpStat               // FS.Stat, FS.DiskUsage, File.Size
	numOps
)

var opNames = [numOps]string{
	OpCreate:   "create",
	OpOpen:     "open",
	OpWrite:    "write",
	OpRead:     "read",
	OpSync:     "sync",
	OpRename:   "rename",
	OpRemove:   "remove",
	OpSyncDir:  "syncdir",
	OpTruncate: "truncate",
	OpMkdir:    "mkdir",
	OpList:     "list",
	OpStat:     "stat",
}

func (op Op) String() string {
	if op < numOps {
		return opNames[op]
	}
	return fmt.Sprintf("Op(%d)", uint8(op))
}

// Injector decides whether an operation fails. MaybeError is called before
// op runs on path; a non-nil error is returned to the caller (wrapped with
// the path) instead of running it. It may be called from many goroutines.
type Injector interface {
	MaybeError(op Op, path string) error
}

// InjectorFunc adapts a function to Injector.
type InjectorFunc func(op Op, path string) error

func (f InjectorFunc) MaybeError(op Op, path string) error { return f(op, path) }

// opSet is a bit set of Ops; the empty set matches every Op.
type opSet uint32

func newOpSet(ops []Op) opSet {
	var s opSet
	for _, op := range ops {
		s |= 1 << op
	}
	return s
}

func (s opSet) matches(op Op) bool { return s == 0 || s&(1<<op) != 0 }

// CountingInjector fails nothing and counts the operations it matches, so a
// test can learn how many steps a workload takes.
type CountingInjector struct {
	ops opSet
	n   atomic.Int64
}

// NewCountingInjector counts operations of the given kinds, or of every kind
// if none are given.
func NewCountingInjector(ops ...Op) *CountingInjector {
	return &CountingInjector{ops: newOpSet(ops)}
}

func (c *CountingInjector) MaybeError(op Op, _ string) error {
	if c.ops.matches(op) {
		c.n.Add(1)
	}
	return nil
}

// Count is the number of matching operations seen so far.
func (c *CountingInjector) Count() int64 { return c.n.Load() }

// ErrWritebackLost is an injected fsync failure with Linux's consequence:
// the pages the kernel could not write are marked clean, so a later
// successful Sync does not write them (on a MemFS the file's durable
// contents keep zeros there; see MemFS). It is ErrInjected and EIO.
var ErrWritebackLost = fmt.Errorf("%w: fsync: %w (unwritten pages dropped)", ErrInjected, syscall.EIO)

// IndexInjector fails matching operations by their index (0 for the first
// matching operation) with ErrInjected, or the error set by WithErr.
type IndexInjector struct {
	ops   opSet
	index int64
	from  bool
	err   error
	n     atomic.Int64
}

// OnIndex fails only the n-th (counting from 0) operation of the given kinds,
// or of any kind if none are given.
func OnIndex(n int64, ops ...Op) *IndexInjector {
	return &IndexInjector{ops: newOpSet(ops), index: n}
}

// FromIndex fails the n-th (counting from 0) operation of the given kinds,
// or of any kind if none are given, and every matching operation after it:
// the disk is gone from step n on, as in a crash.
func FromIndex(n int64, ops ...Op) *IndexInjector {
	return &IndexInjector{ops: newOpSet(ops), index: n, from: true}
}

// WithErr makes the injector fail with err instead of ErrInjected, e.g.
// ErrWritebackLost, or syscall.ENOSPC for a write. It returns i.
func (i *IndexInjector) WithErr(err error) *IndexInjector {
	i.err = err
	return i
}

func (i *IndexInjector) MaybeError(op Op, _ string) error {
	if !i.ops.matches(op) {
		return nil
	}
	k := i.n.Add(1) - 1
	if k == i.index || (i.from && k > i.index) {
		if i.err != nil {
			return i.err
		}
		return ErrInjected
	}
	return nil
}

// Count is the number of matching operations seen so far, failed or not.
func (i *IndexInjector) Count() int64 { return i.n.Load() }

// Fired reports whether the injector has failed an operation.
func (i *IndexInjector) Fired() bool { return i.index >= 0 && i.n.Load() > i.index }

// NewInjecting returns inner with every operation first offered to inj.
func NewInjecting(inner FS, inj Injector) FS {
	return &injectingFS{inner: inner, inj: inj}
}

type injectingFS struct {
	inner FS
	inj   Injector
}

func (fs *injectingFS) check(op Op, name string) error {
	if err := fs.inj.MaybeError(op, name); err != nil {
		return &os.PathError{Op: op.String(), Path: name, Err: err}
	}
	return nil
}

func (fs *injectingFS) wrap(f File, name string, err error) (File, error) {
	if err != nil {
		return nil, err
	}
	return &injectingFile{f: f, name: name, fs: fs}, nil
}

func (fs *injectingFS) Create(name string) (File, error) {
	if err := fs.check(OpCreate, name); err != nil {
		return nil, err
	}
	f, err := fs.inner.Create(name)
	return fs.wrap(f, name, err)
}

func (fs *injectingFS) OpenReadWrite(name string) (File, error) {
	if err := fs.check(OpOpen, name); err != nil {
		return nil, err
	}
	f, err := fs.inner.OpenReadWrite(name)
	return fs.wrap(f, name, err)
}

func (fs *injectingFS) Open(name string) (File, error) {
	if err := fs.check(OpOpen, name); err != nil {
		return nil, err
	}
	f, err := fs.inner.Open(name)
	return fs.wrap(f, name, err)
}

func (fs *injectingFS) Remove(name string) error {
	if err := fs.check(OpRemove, name); err != nil {
		return err
	}
	return fs.inner.Remove(name)
}

func (fs *injectingFS) RemoveAll(name string) error {
	if err := fs.check(OpRemove, name); err != nil {
		return err
	}
	return fs.inner.RemoveAll(name)
}

// Rename offers oldname to the injector.
func (fs *injectingFS) Rename(oldname, newname string) error {
	if err := fs.inj.MaybeError(OpRename, oldname); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	return fs.inner.Rename(oldname, newname)
}

func (fs *injectingFS) MkdirAll(dir string, perm os.FileMode) error {
	if err := fs.check(OpMkdir, dir); err != nil {
		return err
	}
	return fs.inner.MkdirAll(dir, perm)
}

func (fs *injectingFS) List(dir string) ([]string, error) {
	if err := fs.check(OpList, dir); err != nil {
		return nil, err
	}
	return fs.inner.List(dir)
}

func (fs *injectingFS) Stat(name string) (os.FileInfo, error) {
	if err := fs.check(OpStat, name); err != nil {
		return nil, err
	}
	return fs.inner.Stat(name)
}

func (fs *injectingFS) SyncDir(dir string) error {
	if err := fs.check(OpSyncDir, dir); err != nil {
		return err
	}
	return fs.inner.SyncDir(dir)
}

// DiskUsage is offered to the injector as OpStat.
// Lock is offered as OpOpen: it opens (and may create) the file.
func (fs *injectingFS) Lock(name string) (io.Closer, error) {
	if err := fs.check(OpOpen, name); err != nil {
		return nil, err
	}
	return fs.inner.Lock(name)
}

func (fs *injectingFS) DiskUsage(path string) (Usage, error) {
	if err := fs.check(OpStat, path); err != nil {
		return Usage{}, err
	}
	return fs.inner.DiskUsage(path)
}

type injectingFile struct {
	f    File
	name string
	fs   *injectingFS
}

func (f *injectingFile) Read(p []byte) (int, error) {
	if err := f.fs.check(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.f.Read(p)
}

func (f *injectingFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fs.check(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.f.ReadAt(p, off)
}

func (f *injectingFile) Write(p []byte) (int, error) {
	if err := f.fs.check(OpWrite, f.name); err != nil {
		return 0, err
	}
	return f.f.Write(p)
}

func (f *injectingFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.check(OpWrite, f.name); err != nil {
		return 0, err
	}
	return f.f.WriteAt(p, off)
}

func (f *injectingFile) Close() error { return f.f.Close() }

// writebackLoser is a File that can model a failed fsync's lost pages.
type writebackLoser interface{ loseWriteback() }

func (f *injectingFile) Sync() error {
	if err := f.fs.check(OpSync, f.name); err != nil {
		if l, ok := f.f.(writebackLoser); ok && errors.Is(err, ErrWritebackLost) {
			l.loseWriteback()
		}
		return err
	}
	return f.f.Sync()
}

func (f *injectingFile) Truncate(size int64) error {
	if err := f.fs.check(OpTruncate, f.name); err != nil {
		return err
	}
	return f.f.Truncate(size)
}

func (f *injectingFile) Size() (int64, error) {
	if err := f.fs.check(OpStat, f.name); err != nil {
		return 0, err
	}
	return f.f.Size()
}
