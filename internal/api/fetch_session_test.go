package api_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sessionFetch sends a fetch of partitions 0..n-1 of topic from offset 0 in
// session id at epoch (0, 0 asks for a new session).
func (f *logAPI) sessionFetch(topic string, n int, id, epoch int32) *kmsg.FetchResponse {
	f.t.Helper()
	req := f.fetchRequest(topic, make([]int64, n), 1<<20, 1<<20)
	req.SessionID, req.SessionEpoch = id, epoch
	if epoch > 0 {
		req.Topics = nil // incremental: nothing changed
	}
	return f.request(req).(*kmsg.FetchResponse)
}

// One client creating session after session (a misbehaving consumer, or
// many short-lived ones) cannot evict the sessions of consumers in use:
// KIP-227 lets a new session evict only a stale one, or one created more
// than two minutes ago with fewer partitions; a new session that cannot
// evict anything is not created and the fetch is answered sessionless.
func TestFetchSessionChurnDoesNotEvictSessionsInUse(t *testing.T) {
	const slots = 4
	f := newLogAPIWith(t, map[string]string{"max.incremental.fetch.session.cache.slots": "4"})
	f.createTopic("s", 3, nil)
	f.produceSized("s", 0, 1<<10)

	ids := make([]int32, slots)
	for i := range ids {
		resp := f.sessionFetch("s", 3, 0, 0)
		if resp.ErrorCode != 0 || resp.SessionID == 0 {
			t.Fatalf("consumer %d: no session (error %d, id %d)", i, resp.ErrorCode, resp.SessionID)
		}
		ids[i] = resp.SessionID
	}
	for i := range 50 {
		resp := f.sessionFetch("s", 1, 0, 0)
		if resp.ErrorCode != 0 {
			t.Fatalf("churning fetch %d: error %d", i, resp.ErrorCode)
		}
		if resp.SessionID != 0 {
			t.Fatalf("churning fetch %d got session %d in a full cache of sessions in use", i, resp.SessionID)
		}
	}
	for i, id := range ids {
		resp := f.sessionFetch("s", 3, id, 1)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			t.Fatalf("consumer %d's session %d after the churn: %v", i, id, err)
		}
	}
}
