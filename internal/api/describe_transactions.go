package api

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/server"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// DescribeTransactions, version 0 (Kafka 4.2, KIP-664): the state, timeout,
// start time, producer id and epoch and partitions of each transactional id
// this broker coordinates. An empty id is INVALID_REQUEST, an unknown one
// TRANSACTIONAL_ID_NOT_FOUND, one coordinated elsewhere NOT_COORDINATOR.
// With an authorizer, as KafkaApis: an id the principal may not DESCRIBE is
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, and the partitions of topics it
// may not DESCRIBE are left out of the answer.
func init() { register(kmsg.DescribeTransactions.Int16(), 0, 0, handleDescribeTransactions) }

func handleDescribeTransactions(ctx context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	z := h.authz(r)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = id
		st.ProducerID, st.ProducerEpoch, st.StartTimestamp = -1, -1, -1
		err := func() error {
			if !z.allowed(auth.OpDescribe, auth.ResourceTransactionalID, id) {
				return kerr.TransactionalIDAuthorizationFailed
			}
			if id == "" {
				return fmt.Errorf("%w: empty transactional id", kerr.InvalidRequest)
			}
			t, err := h.txns()
			if err != nil {
				return err
			}
			d, err := t.Describe(ctx, id)
			if err != nil {
				return err
			}
			st.State, st.TimeoutMillis, st.StartTimestamp = d.State.String(), d.TimeoutMs, d.StartMs
			st.ProducerID, st.ProducerEpoch = d.ProducerID, d.ProducerEpoch
			for _, g := range topicpart.ByTopic(d.Partitions) {
				if !z.allowed(auth.OpDescribe, auth.ResourceTopic, g.Topic) {
					continue
				}
				tt := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				tt.Topic, tt.Partitions = g.Topic, g.Partitions
				st.Topics = append(st.Topics, tt)
			}
			return nil
		}()
		st.ErrorCode = errCode(h.d.Logger, err)
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}
