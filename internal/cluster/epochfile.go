package cluster

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gregor-broker/gregor/internal/vfs"
)

// EpochFile is the file, in the metadata log dir, that carries a broker's
// epoch from one run to the next: BrokerRegistration's PreviousBrokerEpoch
// (Kafka keeps it in its clean-shutdown file). Presenting it tells the
// controller the broker still holds everything it acknowledged under that
// epoch, so it keeps its place in the eligible leader replicas (KIP-966);
// without it, the controller treats the restart as unclean and takes the
// broker out of the ELR, and a partition whose only eligible replica it was
// needs an unclean (last-known-leader) election to come back.
//
// It is written in two cases:
//
//   - after a clean shutdown, once every log is flushed and closed (Kafka's
//     rule; reason clean-shutdown). The next start reads it and removes it
//     before registering, so a crash after that start is not taken for a
//     clean one;
//   - when gregor.ack.fsync=true, right after each registration (reason
//     ack-fsync), and kept across starts. With fsync acknowledgements a
//     replica vouches only for what is on disk: a leader counts its flushed
//     offset into the high watermark, a follower fsyncs before it fetches
//     again, and recovery keeps every fsynced batch. A SIGKILL or a power
//     loss therefore loses nothing the broker vouched for, which is exactly
//     what a clean shutdown certifies, so the epoch may be presented after
//     a crash too. (A disk that lies about fsync breaks this, as it breaks
//     every acknowledgement.) The file records the setting of the run that
//     wrote it, so a restart with gregor.ack.fsync=false still trusts an
//     epoch a fsync run left, and a fsync=false run never leaves one but at
//     a clean shutdown.
const EpochFile = "gregor-broker-epoch"

// Reasons an EpochFile was written.
const (
	EpochCleanShutdown = "clean-shutdown"
	EpochAckFsync      = "ack-fsync"
)

// WriteEpoch records epoch in dir's EpochFile, durably.
func WriteEpoch(fs vfs.FS, dir string, epoch int64, reason string) error {
	body := fmt.Sprintf("version=1\nbroker.epoch=%d\nreason=%s\n", epoch, reason)
	return vfs.WriteFileAtomic(fs, filepath.Join(dir, EpochFile), []byte(body))
}

// ReadEpoch returns the epoch dir's EpochFile carries, or -1 when there is
// none (or it cannot be read: the restart is then unclean, the safe
// answer). A clean-shutdown file is removed, durably, before ReadEpoch
// returns it.
func ReadEpoch(fs vfs.FS, dir string) (int64, string, error) {
	path := filepath.Join(dir, EpochFile)
	data, err := vfs.ReadFile(fs, path)
	if vfs.IsNotExist(err) {
		return -1, "", nil
	}
	if err != nil {
		return -1, "", err
	}
	kv := map[string]string{}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if k, v, ok := strings.Cut(string(line), "="); ok {
			kv[k] = v
		}
	}
	epoch, perr := strconv.ParseInt(kv["broker.epoch"], 10, 64)
	reason := kv["reason"]
	if perr != nil || kv["version"] != "1" || (reason != EpochCleanShutdown && reason != EpochAckFsync) {
		return -1, "", fmt.Errorf("%s: unreadable (%q)", path, data)
	}
	if reason == EpochCleanShutdown {
		if err := fs.Remove(path); err != nil {
			return -1, "", err
		}
		if err := fs.SyncDir(dir); err != nil {
			return -1, "", err
		}
	}
	return epoch, reason, nil
}
