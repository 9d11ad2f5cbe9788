package api

import (
	"context"
	"errors"
	"path/filepath"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/server"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// DescribeLogDirs, versions 1-4 (Kafka 4.2; v0 was removed in Kafka 4.0).
//
// Answers every log dir of this broker (its absolute path) with the
// partitions it holds: each one's size (the bytes of its segments), its
// offset lag (max(high watermark - log end offset, 0), always 0 on the
// leader) and IsFuture false (Gregor never moves a replica between dirs).
// A null topic list asks for every partition; otherwise only the listed
// partitions that exist are described, and a dir keeps no entry for a topic
// none of whose listed partitions it holds. v4 adds the total and usable
// bytes of the dir's volume (statfs; -1 off Linux).
//
// A dir that is offline (a write or fsync in it failed) is answered with
// KAFKA_STORAGE_ERROR and nothing else, as Kafka answers an offline dir; so
// is one whose volume cannot be read. A full dir (below
// gregor.log.dir.min.free.bytes, refusing produce) is described as usual:
// its usable bytes say how full.
func init() { register(kmsg.DescribeLogDirs.Int16(), 1, 4, handleDescribeLogDirs) }

func handleDescribeLogDirs(_ context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if !h.authz(r).cluster(auth.OpDescribe) {
		// Kafka answers no dirs, and from v3 says why.
		if req.Version >= 3 {
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		}
		return resp, nil
	}
	var want map[topicpart.TopicPartition]bool
	if req.Topics != nil {
		want = map[topicpart.TopicPartition]bool{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				want[topicpart.TopicPartition{Topic: t.Topic, Partition: p}] = true
			}
		}
	}
	byDir := map[string][]topicpart.TopicPartition{}
	for tp := range h.d.Logs.All() {
		if want == nil || want[tp] {
			dir := h.d.Logs.DirOf(tp)
			byDir[dir] = append(byDir[dir], tp)
		}
	}
	seen := map[string]bool{}
	for _, dir := range h.d.Logs.Dirs() {
		if seen[dir] {
			continue
		}
		seen[dir] = true
		resp.Dirs = append(resp.Dirs, h.describeLogDir(dir, byDir[dir]))
	}
	return resp, nil
}

func (h *Handler) describeLogDir(dir string, tps []topicpart.TopicPartition) kmsg.DescribeLogDirsResponseDir {
	d := kmsg.NewDescribeLogDirsResponseDir()
	d.Dir = dir
	if abs, err := filepath.Abs(dir); err == nil {
		d.Dir = abs
	}
	if ld := h.d.Logs.LogDir(dir); ld != nil && ld.Failure().Err() != nil {
		d.ErrorCode = kerr.KafkaStorageError.Code
		return d
	}
	u, err := h.d.Logs.FS().DiskUsage(d.Dir)
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		d.TotalBytes, d.UsableBytes = -1, -1 // the protocol's "not provided"
	case err != nil:
		h.d.Logger.Warn("cannot read the volume of a log dir", "dir", d.Dir, "err", err)
		d.ErrorCode = kerr.KafkaStorageError.Code
		return d
	default:
		d.TotalBytes, d.UsableBytes = u.Total, u.Usable
	}
	slices.SortFunc(tps, topicpart.Compare)
	for _, tp := range tps {
		l := h.d.Logs.Get(tp)
		if l == nil {
			continue // deleted since All
		}
		if n := len(d.Topics); n == 0 || d.Topics[n-1].Topic != tp.Topic {
			t := kmsg.NewDescribeLogDirsResponseDirTopic()
			t.Topic = tp.Topic
			d.Topics = append(d.Topics, t)
		}
		p := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		p.Partition = tp.Partition
		p.Size = l.Size()
		p.OffsetLag = max(l.HighWatermark()-l.LogEndOffset(), 0)
		t := &d.Topics[len(d.Topics)-1]
		t.Partitions = append(t.Partitions, p)
	}
	return d
}
