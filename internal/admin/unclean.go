package admin

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// UncleanElectionView is a partition's unacknowledged unclean or
// last-known-leader election, from the replicated metadata (every node
// shows the same, and a restart keeps it): a leader elected from outside
// the ISR and ELR, so records the previous in-sync replicas acknowledged
// may be lost. It stays until an operator acknowledges it (UncleanAcker).
type UncleanElectionView struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Kind is "unclean" (unclean.leader.election.enable, or ElectLeaders
	// UNCLEAN) or "last-known-leader" (KIP-966: ISR and ELR empty, the last
	// leader came back).
	Kind        string    `json:"kind"`
	LeaderEpoch int32     `json:"leader_epoch"`
	Leader      int32     `json:"leader"`
	At          time.Time `json:"at"`
	// PreviousLeader (the last known one when the partition had none),
	// PreviousISR and PreviousELR are the partition's state before.
	PreviousLeader int32   `json:"previous_leader"`
	PreviousISR    []int32 `json:"previous_isr"`
	PreviousELR    []int32 `json:"previous_elr"`
	// Count is the partition's unclean elections since the last
	// acknowledgement (this one is the newest).
	Count int32 `json:"count"`
	// Recovering: the leader recovery state is still RECOVERING (KIP-704):
	// the new leader has not yet told the controller it recovered, which it
	// does with its first ISR change.
	Recovering bool `json:"recovering"`
	// EpochStartOffset is where LeaderEpoch begins in this node's log: the
	// elected replica's log end offset when it was elected. Records the
	// previous ISR acknowledged at or after it are gone; a consumer may see
	// those offsets again holding other records. -1: this node does not
	// know (it hosts no replica, or its log holds nothing of that epoch).
	// The previous leader's high watermark is not known to any survivor.
	EpochStartOffset int64 `json:"epoch_start_offset"`
	// TruncatedHere is this node's replica cutting its log to match the
	// new leader (nil: it did not, or holds no replica): the records it
	// dropped, and how many of them were below its high watermark, that
	// is acknowledged, as far as it knew (after a restart its high
	// watermark is the last checkpointed one: a lower bound).
	TruncatedHere *TruncationView `json:"truncated_here,omitempty"`
	// Explanation says what happened and what it means, for people.
	Explanation string `json:"explanation"`
	// Acknowledge is the command that clears the warning.
	Acknowledge string `json:"acknowledge"`
}

// TruncationView is a replica's cut of its log to match its leader.
type TruncationView struct {
	At          time.Time `json:"at"`
	LeaderEpoch int32     `json:"leader_epoch"`
	// FromLogEnd and FromHighWatermark were its log end offset and high
	// watermark before; ToOffset is its log end after.
	FromLogEnd        int64 `json:"from_log_end_offset"`
	FromHighWatermark int64 `json:"from_high_watermark"`
	ToOffset          int64 `json:"to_offset"`
	// Dropped is FromLogEnd − ToOffset; AcknowledgedDropped the part of it
	// below FromHighWatermark.
	Dropped             int64 `json:"dropped_records"`
	AcknowledgedDropped int64 `json:"acknowledged_dropped_records"`
}

// UncleanAcker is implemented by a Source that can acknowledge unclean
// elections (the broker's, through the active controller on its own
// node). RegisterAPI then adds
// POST /v1/partitions/{topic}/{partition}/unclean-election/ack
// [?leader_epoch=N].
type UncleanAcker interface {
	// AckUncleanElection clears the partition's recorded election of
	// leaderEpoch (-1: whichever is recorded) and returns it. Errors:
	// ErrNotFound (no such partition), ErrNoUncleanElection,
	// ErrUncleanEpoch, a *NotControllerError.
	AckUncleanElection(ctx context.Context, topic string, partition, leaderEpoch int32) (UncleanElectionView, error)
}

// Errors of UncleanAcker, answered 409 conflict.
var (
	ErrNoUncleanElection = errors.New("no unacknowledged unclean election is recorded for the partition")
	ErrUncleanEpoch      = errors.New("the recorded unclean election has another leader epoch")
)

// NotControllerError: this node is not the active controller; only it
// writes the acknowledgement. Answered 421 with code not_controller and
// the controller's id, so a client asks that node's admin listener.
type NotControllerError struct{ Controller int32 }

func (e *NotControllerError) Error() string {
	if e.Controller < 0 {
		return "this node is not the active controller, and no controller is known"
	}
	return "this node is not the active controller; node " + strconv.Itoa(int(e.Controller)) + " is"
}

// API error codes of the acknowledgement route.
const (
	APICodeConflict      = "conflict"
	APICodeNotController = "not_controller"
)

// AckAnswer is the acknowledgement route's answer.
type AckAnswer struct {
	Acknowledged UncleanElectionView `json:"acknowledged"`
}

func registerUncleanAck(a *Admin, api *jsonAPI, s UncleanAcker) {
	a.Handle("POST /v1/partitions/{topic}/{partition}/unclean-election/ack", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if crossSite(r) {
			// A page on another site must not make a browser write: the
			// API's one write is for tools (gregor, curl), which send no
			// Origin of another host.
			writeAPIJSON(w, http.StatusForbidden, APIError{Error: "cross-site requests may not acknowledge unclean elections", Code: "forbidden"})
			return
		}
		p, err := apiPartitionParam(r)
		if err != nil {
			api.writeError(w, r, err)
			return
		}
		epoch := int64(-1)
		if raw := r.URL.Query().Get("leader_epoch"); raw != "" {
			if epoch, err = strconv.ParseInt(raw, 10, 32); err != nil || epoch < 0 {
				api.writeError(w, r, badRequest("leader_epoch=%q: want a non-negative 32-bit integer", raw))
				return
			}
		}
		v, err := s.AckUncleanElection(r.Context(), r.PathValue("topic"), p, int32(epoch))
		var nc *NotControllerError
		switch {
		case errors.As(err, &nc):
			writeAPIJSON(w, http.StatusMisdirectedRequest, struct {
				APIError
				Controller int32 `json:"controller_id"`
			}{APIError{Error: err.Error(), Code: APICodeNotController}, nc.Controller})
		case errors.Is(err, ErrNoUncleanElection), errors.Is(err, ErrUncleanEpoch):
			writeAPIJSON(w, http.StatusConflict, APIError{Error: err.Error(), Code: APICodeConflict})
		case err != nil:
			api.writeError(w, r, err)
		default:
			writeAPIJSON(w, http.StatusOK, AckAnswer{Acknowledged: v})
		}
	}))
}

// crossSite reports a browser request sent by a page of another origin:
// Sec-Fetch-Site says so, or Origin names another host than Host.
func crossSite(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return true
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	u, err := url.Parse(origin)
	return err != nil || !strings.EqualFold(u.Host, r.Host)
}
