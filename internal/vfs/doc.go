// Package vfs is the filesystem seam under Gregor's storage. Everything that
// touches log dirs (segments, indexes, checkpoints) goes through an FS so that
// tests can swap the disk for memory, pull the plug at any step, and fail any
// call.
//
// # Implementations
//
//   - OS (also Default) is the real filesystem: a thin wrapper around *os.File.
//     File.Sync is fdatasync(2) on Linux and (*os.File).Sync elsewhere; SyncDir
//     opens the directory and fsyncs it.
//   - NewMem returns a MemFS, an in-memory filesystem that tracks what is
//     durable and can produce the state a machine would find after a power
//     failure (CrashClone, CrashCloneTorn).
//   - NewInjecting wraps any FS and asks an Injector before every operation
//     whether to fail it (OnIndex, FromIndex, CountingInjector, InjectorFunc).
//
// # Helpers over any FS
//
//   - WriteFileAtomic replaces a small file durably (write path.tmp, fsync,
//     rename, fsync the directory); WriteFileSynced is the same without the
//     directory fsync (the caller syncs the directory once for several
//     files); WriteFileUnsynced renames without any fsync and hands back the
//     open file, for contents a reader checks and a caller may make durable
//     later (fsync the file, then the directory). ReadFile reads one whole.
//   - WriteCheckpoint and ReadCheckpoint are Kafka's checkpoint text layout
//     (a version line, a count line, one space-separated entry per line),
//     used by every offset checkpoint and the leader-epoch checkpoint; a file
//     that does not parse is ErrCorruptCheckpoint.
//   - FS.DiskUsage is the volume's size and the bytes still usable there
//     (statfs with the fragment size, as Java's FileStore counts; clamped
//     to MaxInt64), the one figure DescribeLogDirs, the admin API and the
//     free-space checks share. A MemFS is one volume of SetCapacity bytes
//     (1 TiB unless set) of which its files' allocated bytes are used (a file
//     grown by Truncate has a hole, as on Linux filesystems). Once
//     SetCapacity is called the capacity is a limit: a write needing more
//     blocks than are free writes the part that fits and fails with ENOSPC.
//   - IsNoSpace tells a write refused for want of space (ENOSPC, EDQUOT),
//     which a caller may cut back and retry later, from every other failure.
//     A failed Sync or SyncDir is never "no space", whatever its errno: the
//     kernel may have dropped the pages it could not write.
//
// # Locks
//
// FS.Lock takes an exclusive advisory lock on a file (creating it), held
// until the returned Closer is closed. OS uses flock(2) on the file: the lock
// belongs to the open file description, so a second Lock of the same file
// fails with ErrLocked whether it comes from another process or from this
// one, and the kernel releases it when the process exits, however it exits.
// flock does not see the fcntl(2) record locks Java's FileChannel.tryLock
// takes, so it excludes other Gregor processes, not a Kafka broker. Where
// flock is not available, OS.Lock fails with errors.ErrUnsupported. MemFS
// keeps the lock on the file node (it follows a rename); locks are not
// durable state, so a crash clone starts with none.
//
// # File semantics (both implementations)
//
// A File has one position shared by Read and Write, as a file descriptor
// does. Create and OpenReadWrite position it at the end of the file (Create
// truncates, so that is offset 0); Open opens read-only at offset 0. ReadAt
// and WriteAt use absolute offsets and never move the position. Truncate that
// shrinks the file below the position moves the position to the new end.
// ReadAt that cannot fill its buffer returns io.EOF, as *os.File does; WriteAt
// past the end fills the gap with zeros. Errors are *os.PathError (or
// *os.LinkError for Rename) wrapping the errno the OS would return, so
// IsNotExist and errors.Is(err, os.ErrExist) work on either implementation.
// Rename onto an existing directory fails with EEXIST, as os.Rename does.
//
// # Durability model (MemFS)
//
// MemFS keeps, for every file, its live contents and its durable contents,
// and for every directory, its live entries and its durable entries. Only
// these events make anything durable:
//
//   - File.Sync on a file sets the file's durable contents to its live
//     contents (size included). Data belongs to the file (the inode), not to
//     a name: a file renamed before or after its Sync keeps its synced
//     contents under whichever name turns out to be durable.
//   - SyncDir(dir), or File.Sync on a handle opened on a directory, sets the
//     directory's durable entries to its live entries: every name in it
//     refers, durably, to the file or directory it refers to now, and names
//     removed or renamed away are durably gone. Nothing else about the
//     entries' contents is made durable.
//
// Everything else (Create, Write, WriteAt, Truncate, Rename, Remove,
// RemoveAll, MkdirAll) changes only live state. In particular a directory
// made by MkdirAll exists after a crash only if its parent was synced after
// it was made, and its own entries only as of its own last SyncDir. The root
// directory always exists.
//
// CrashClone returns a new MemFS holding exactly the durable state: starting
// at the root, it follows durable entries, and each file reached holds its
// durable contents. So after a crash:
//
//   - bytes written but not synced are gone;
//   - a file that was created and synced, but whose directory was never
//     synced afterwards, does not exist;
//   - a rename or remove not followed by SyncDir of the directory it changed
//     is undone (the old name comes back with the file's synced contents);
//   - a rename across directories is durable per directory: if only the
//     destination was synced, the file is reachable under both names (as two
//     hard links to one file); if only the source was synced, under neither.
//     A directory reachable under more than one durable name appears only
//     under the first met in a depth-first walk in name order.
//
// A Sync failed by the injecting FS with ErrWritebackLost does what Linux
// does after a writeback error: the pages it could not write are marked
// clean. The file's durable contents take its live size, but the bytes
// written since the last good Sync are lost (the old durable bytes stay,
// zeros past them), and no later Sync writes them unless they are written
// again. This is the "fsyncgate" trap: a retried fsync that succeeds proves
// nothing about the writes the failed one covered.
//
// CrashCloneTorn models a disk that persisted part of the unsynced tail: for
// each file whose only changes since its last Sync are appends at or past the
// synced size (no write below it, no truncation below it), the clone keeps
// the synced contents plus a random prefix, possibly empty, possibly all, of
// the bytes appended since. Any other file keeps its synced contents. Torn
// writes never produce garbage or zeros, only a shorter tail.
//
// Both clones are fully durable: every file's contents and every entry of the
// clone are durable in the clone, and the clone is independent of the
// original (writes to one are not seen by the other). Handles open on the
// original keep referring to the original.
//
// # Fault injection
//
// The FS returned by NewInjecting calls Injector.MaybeError(op, path) before
// each operation; when it returns an error the operation is not performed and
// the error comes back wrapped in *os.PathError (or *os.LinkError), so
// errors.Is(err, ErrInjected) holds for the injectors in this package
// (IndexInjector.WithErr picks another error: ErrWritebackLost for a Sync,
// syscall.ENOSPC for a write). Write
// and WriteAt are OpWrite, Read and ReadAt OpRead, File.Sync OpSync,
// File.Truncate OpTruncate, File.Size and FS.Stat OpStat, Open and
// OpenReadWrite and Lock OpOpen, Remove and RemoveAll OpRemove; Rename is offered
// with its old name. Close is never failed. Injectors count matching operations atomically, from 0.
//
// A crash-at-every-step test runs its workload once on a MemFS wrapped with a
// CountingInjector to learn the number of operations N, then for k in 0..N-1
// runs it again on a fresh MemFS with FromIndex(k) (every operation from the
// k-th on fails, as if the machine had stopped), takes CrashClone of the
// MemFS, recovers from the clone and checks the result.
//
// # Concurrency
//
// MemFS is safe for concurrent use: one mutex guards all of its state, and
// CrashClone takes an atomic snapshot. The OS implementation is as safe as
// *os.File: ReadAt and WriteAt may run concurrently; Read, Write and Truncate
// share the handle's position and need the caller to serialise them. The
// injectors are safe for concurrent use.
package vfs
