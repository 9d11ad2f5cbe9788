package api

import (
	"context"
	"fmt"
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/server"
	"github.com/gregor-broker/gregor/internal/txn"
)

// ListTransactions, versions 0-2 (Kafka 4.2): the transactions this broker
// coordinates, filtered by state (unknown state names are echoed in
// UnknownStateFilters and ignored, as Kafka ignores them: only unknown
// names filter nothing), producer id, v1's minimum running
// time (KIP-994) and v2's transactional id pattern (KIP-1152).
// COORDINATOR_LOAD_IN_PROGRESS while a partition loads. Deviation: the
// pattern is a Go (RE2) regular expression where Kafka takes a Java one;
// one RE2 cannot compile is INVALID_REGULAR_EXPRESSION. With an
// authorizer only the ids the principal may DESCRIBE are listed (KafkaApis).
func init() { register(kmsg.ListTransactions.Int16(), 0, 2, handleListTransactions) }

func handleListTransactions(ctx context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	f := txn.ListFilter{ProducerIDs: req.ProducerIDFilters, MinDurationMs: -1}
	for _, name := range req.StateFilters {
		if s, ok := txn.ParseState(name); ok {
			f.States = append(f.States, s)
		} else {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
		}
	}
	if req.Version >= 1 {
		f.MinDurationMs = req.DurationFilterMillis
	}
	if p := req.TransactionalIDPattern; req.Version >= 2 && p != nil && *p != "" {
		re, err := regexp.Compile(*p)
		if err != nil {
			resp.ErrorCode = errCode(h.d.Logger, fmt.Errorf("%w: %v", kerr.InvalidRegularExpression, err))
			return resp, nil
		}
		f.IDPattern = re
	}
	t, err := h.txns()
	if err == nil {
		var list []txn.Description
		if list, err = t.List(ctx, f); err == nil {
			z := h.authz(r)
			for _, d := range list {
				if !z.filter(auth.OpDescribe, auth.ResourceTransactionalID, d.TransactionalID) {
					continue
				}
				st := kmsg.NewListTransactionsResponseTransactionState()
				st.TransactionalID, st.ProducerID, st.TransactionState = d.TransactionalID, d.ProducerID, d.State.String()
				resp.TransactionStates = append(resp.TransactionStates, st)
			}
		}
	}
	resp.ErrorCode = errCode(h.d.Logger, err)
	return resp, nil
}
