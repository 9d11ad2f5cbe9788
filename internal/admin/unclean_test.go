package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func fakeUnclean() UncleanElectionView {
	return UncleanElectionView{Topic: "orders", Partition: 0, Kind: "unclean", LeaderEpoch: 7, Leader: 1,
		At: fakeT0.Add(-time.Hour), PreviousLeader: 2, PreviousISR: []int32{2}, PreviousELR: []int32{}, Count: 2,
		Recovering: true, EpochStartOffset: 250, Explanation: "Possible data loss: broker 1 was elected <uncleanly>.",
		Acknowledge: "gregor partition ack-unclean orders/0 --leader-epoch 7",
		TruncatedHere: &TruncationView{At: fakeT0.Add(-time.Minute), LeaderEpoch: 7, FromLogEnd: 300, FromHighWatermark: 290,
			ToOffset: 250, Dropped: 50, AcknowledgedDropped: 40}}
}

// An unclean election shows as a bad health box and an alert on the
// overview, an alert on the partition page and a badge in the topic's
// partition table; without one, none of them.
func TestConsoleUncleanElection(t *testing.T) {
	src := newFakeSource()
	a := newConsoleAdmin(t, src)
	for _, path := range []string{"/", "/ui/topics/orders/0", "/ui/topics/orders"} {
		if _, body, _ := get(t, a.Handler(), path); strings.Contains(body, "unclean election") && path != "/" ||
			strings.Contains(body, `role="alert"`) {
			t.Errorf("%s shows an unclean election warning without one", path)
		}
	}
	u := fakeUnclean()
	src.cluster.UncleanElections = []UncleanElectionView{u}
	pv := src.partitions[tpKey("orders", 0)]
	pv.UncleanElection = &u
	src.partitions[tpKey("orders", 0)] = pv
	tv := src.topics["orders"]
	tv.PartitionDetail[0].UncleanElection = &u
	src.topics["orders"] = tv
	alert := []string{`role="alert" data-unclean="orders/0"`, "Possible data loss: unclean election of",
		"Possible data loss: broker 1 was elected &lt;uncleanly&gt;.", "broker 1 in leader epoch 7",
		"leader 2, ISR 2, ELR empty", "<code>250</code> (where epoch 7 begins)", "RECOVERING (KIP-704)",
		"2 since the last acknowledgement", "<code>gregor partition ack-unclean orders/0 --leader-epoch 7</code>",
		"cut its log from <code>300</code> to <code>250</code>: 50 record(s), 40 below its high watermark <code>290</code>"}
	_, body, _ := get(t, a.Handler(), "/")
	for _, w := range append(alert, `<div class="hbox bad" title="partitions whose leader was elected from outside the ISR, not acknowledged yet: acknowledged records may be lost"><span class="hname">unclean elections</span><span class="hval">1</span>`) {
		if !strings.Contains(body, w) {
			t.Errorf("overview lacks %q", w)
		}
	}
	_, body, _ = get(t, a.Handler(), "/ui/topics/orders/0")
	for _, w := range alert {
		if !strings.Contains(body, w) {
			t.Errorf("partition page lacks %q", w)
		}
	}
	if _, body, _ = get(t, a.Handler(), "/ui/topics/orders"); !strings.Contains(body, `<span class="badge delete bad" title="Possible data loss`) {
		t.Error("the topic's partition table has no unclean election badge")
	}
}

// ackSource answers acknowledgements as a broker that is not the
// controller, then as the controller.
type ackSource struct {
	*fakeSource
	controller bool
	calls      []string
}

func (s *ackSource) AckUncleanElection(_ context.Context, topic string, p, epoch int32) (UncleanElectionView, error) {
	s.calls = append(s.calls, fmt.Sprintf("%s/%d@%d", topic, p, epoch))
	u := fakeUnclean()
	switch {
	case !s.controller:
		return u, &NotControllerError{Controller: 3}
	case topic != "orders":
		return u, fmt.Errorf("topic %q: %w", topic, ErrNotFound)
	case epoch >= 0 && epoch != u.LeaderEpoch:
		return u, fmt.Errorf("%w: it is %d", ErrUncleanEpoch, u.LeaderEpoch)
	}
	return u, nil
}

func TestAPIAckUncleanElection(t *testing.T) {
	src := &ackSource{fakeSource: newFakeSource()}
	a, _ := newAPITestAdmin(t, src)
	post := func(target string) (int, map[string]any) {
		rec := httptest.NewRecorder()
		a.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, target, nil))
		var m map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v: %s", target, err, rec.Body)
		}
		return rec.Code, m
	}
	const path = "/v1/partitions/orders/0/unclean-election/ack"
	if code, m := post(path); code != http.StatusMisdirectedRequest || m["code"] != APICodeNotController || m["controller_id"] != 3.0 {
		t.Errorf("not the controller: %d %v", code, m)
	}
	src.controller = true
	if code, m := post(path + "?leader_epoch=6"); code != http.StatusConflict || m["code"] != APICodeConflict {
		t.Errorf("another epoch: %d %v", code, m)
	}
	if code, m := post(path + "?leader_epoch=x"); code != http.StatusBadRequest {
		t.Errorf("bad epoch: %d %v", code, m)
	}
	if code, m := post("/v1/partitions/nope/0/unclean-election/ack"); code != http.StatusNotFound {
		t.Errorf("unknown topic: %d %v", code, m)
	}
	code, m := post(path + "?leader_epoch=7")
	if ack, _ := m["acknowledged"].(map[string]any); code != http.StatusOK || ack["leader_epoch"] != 7.0 {
		t.Errorf("acknowledged: %d %v", code, m)
	}
	if want := "orders/0@-1 orders/0@6 nope/0@-1 orders/0@7"; strings.Join(src.calls, " ") != want {
		t.Errorf("calls %v, want %s", src.calls, want)
	}
	for _, h := range []map[string]string{{"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"}} {
		req := httptest.NewRequest(http.MethodPost, path, nil)
		for k, v := range h {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		a.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden {
			t.Errorf("a cross-site POST (%v): %d", h, rec.Code)
		}
	}
	if len(src.calls) != 4 {
		t.Errorf("cross-site POSTs reached the source: %v", src.calls)
	}
	if code, _, _ := get(t, a.Handler(), path); code != http.StatusMethodNotAllowed {
		t.Errorf("GET of the acknowledgement route: %d", code)
	}
}
