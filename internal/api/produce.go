package api

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/replica"
	"github.com/gregor-broker/gregor/internal/server"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// Produce, versions 3-13 (Kafka 4.2; v0-v2 were removed in Kafka 4.0).
// acks 0, 1 and -1 (all): acks=1 is answered once the leader holds the
// batch (fsynced under gregor.ack.fsync), acks=all once the high watermark
// passes it, with NOT_ENOUGH_REPLICAS (nothing appended) when the ISR is
// below min.insync.replicas, NOT_ENOUGH_REPLICAS_AFTER_APPEND when it
// shrinks below while the produce waits, NOT_LEADER_OR_FOLLOWER when the
// leadership moves and REQUEST_TIMED_OUT after TimeoutMillis (package
// replica). Each partition's records must be exactly one v2
// batch. v13 names topics by id. Record-level errors (v8+) are returned for
// INVALID_RECORD and INVALID_TIMESTAMP, as Kafka does. The error message
// (v8+) is what Kafka would say; an UNKNOWN_SERVER_ERROR's details stay in
// the broker's log. With acks=0 no response is sent; if any partition
// failed, the connection is closed so the client notices, as Kafka does.
//
// Authorization (KafkaApis.handleProduceRequest): transactional records
// need WRITE on the transactional id (else the whole request is
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED), each topic WRITE on the topic
// (TOPIC_AUTHORIZATION_FAILED, decided before whether the topic exists).
//
// Transactional batches: a request with transactional records but no
// transactional id is refused whole with TRANSACTIONAL_ID_AUTHORIZATION_FAILED
// (KafkaApis). A transactional batch that would open a transaction on its
// partition is first checked with the transaction coordinator (KIP-890 part
// 1, transaction.partition.verification.enable; v12+, transactions v2, adds
// the partition to the transaction instead) and appended only with the
// verification's guard (log.VerificationGuard), as ReplicaManager does. The
// coordinator's answers reach the producer as Kafka translates them:
// PRODUCER_FENCED is INVALID_PRODUCER_EPOCH, TRANSACTION_ABORTABLE is
// INVALID_TXN_STATE before v11, coordinator errors (and, before v12,
// CONCURRENT_TRANSACTIONS) are NOT_ENOUGH_REPLICAS "Unable to verify the
// partition has been added to the transaction. Underlying error: …", which
// every client retries. A fenced producer gets INVALID_PRODUCER_EPOCH, never
// INVALID_TXN_STATE (KAFKA-19690).
func init() { register(kmsg.Produce.Int16(), 3, 13, handleProduce) }

func handleProduce(ctx context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	byID := req.Version >= 13
	acksOK := req.Acks == 0 || req.Acks == 1 || req.Acks == -1
	var failed error
	hints := h.newLeaderHints(r.Conn.Listener)
	fail := func(sp *kmsg.ProduceResponseTopicPartition, name string, err error) {
		failed = err
		ke := kafkaError(h.d.Logger, err)
		sp.ErrorCode = ke.Code
		if req.Version >= 10 && hints.wants(sp.ErrorCode) {
			sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = hints.leader(name, sp.Partition)
		}
		if req.Version >= 8 && err != ke {
			sp.ErrorMessage = kafkaMessage(err)
		}
		if re, ok := record.IsRecordError(err); ok && req.Version >= 8 {
			er := kmsg.NewProduceResponseTopicPartitionErrorRecord()
			er.RelativeOffset = int32(re.Index)
			er.ErrorMessage = strp(re.Msg)
			sp.ErrorRecords = append(sp.ErrorRecords, er)
		}
		h.d.Logger.Debug("produce rejected", "topic", name, "partition", sp.Partition,
			"client", clientID(r), "remote", r.Conn.Remote, "err", err)
	}
	// Phase 1: append every partition. Phase 2 (Finish): wait for all of
	// them to be durable at once, so a request spanning many partitions pays
	// for its fsyncs in parallel rather than one after another.
	var waits []waiting
	// Each partition's batch header is decoded here, once, and handed down
	// to the validation, the producer-state checks and the append.
	parsed := parseProduce(req)
	var txnErr error
	z := h.authz(r)
	var guards map[topicpart.TopicPartition]verified
	if hasTransactionalRecords(parsed) {
		switch {
		case req.TransactionID == nil:
			txnErr = fmt.Errorf("%w: transactional records in a produce request without a transactional id", kerr.TransactionalIDAuthorizationFailed)
		case !z.allowed(auth.OpWrite, auth.ResourceTransactionalID, *req.TransactionID):
			txnErr = kerr.TransactionalIDAuthorizationFailed
		default:
			guards = h.verifyProduce(ctx, req, parsed)
		}
	}
	k := 0 // the partition's index in parsed
	var nameBuf [4]string
	names := nameBuf[:0] // names[i] is resp.Topics[i]'s name
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	for ti, rt := range req.Topics {
		st := &resp.Topics[ti]
		*st = kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		st.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		name, terr := h.topicName(rt.Topic, rt.TopicID, byID)
		if terr == nil && txnErr == nil && !z.allowed(auth.OpWrite, auth.ResourceTopic, name) {
			terr = kerr.TopicAuthorizationFailed
		}
		names = append(names, name)
		for pi, rp := range rt.Partitions {
			batch := &parsed[k]
			k++
			sp := &st.Partitions[pi]
			*sp = kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			var err error
			var pend *replica.Pending
			switch {
			case txnErr != nil:
				err = txnErr
			case !acksOK:
				err = kerr.InvalidRequiredAcks
			case terr != nil:
				err = terr
			case isInternal(name):
				err = fmt.Errorf("%w: cannot append to internal topic %s", kerr.InvalidTopicException, name)
			default:
				pend, err = h.produceOne(req, name, rp.Partition, batch, sp, guards)
			}
			if err != nil {
				fail(sp, name, err)
				continue
			}
			waits = append(waits, waiting{ti, pi, name, pend})
		}
	}
	pend := &pendingProduce{ProduceResponse: resp, h: h, fail: fail, names: names, hints: hints,
		timeout: time.Duration(max(req.TimeoutMillis, 0)) * time.Millisecond}
	for _, w := range waits {
		if w.pend.Durable() {
			continue
		}
		pend.waits = append(pend.waits, w)
	}
	if req.Acks == 0 {
		pend.finish()
		if failed != nil {
			return nil, fmt.Errorf("acks=0 produce failed, closing the connection: %w", failed)
		}
		return nil, nil
	}
	if len(pend.waits) == 0 {
		pend.finish()
		return resp, nil
	}
	// The appends are done, in request order; the wait for their fsyncs
	// is the server's to schedule (server.Deferred), so the connection
	// reads and appends the next request meanwhile and one fsync covers
	// both.
	return pend, nil
}

// pendingProduce is a produce response waiting for its partitions to be
// durable (server.Deferred).
type pendingProduce struct {
	*kmsg.ProduceResponse
	h     *Handler
	fail  func(sp *kmsg.ProduceResponseTopicPartition, name string, err error)
	names []string
	hints *leaderHints
	waits []waiting
	// timeout bounds an acks=all wait for the high watermark (Kafka's
	// DelayedProduce), then REQUEST_TIMED_OUT.
	timeout time.Duration
}

// waiting is an appended partition of a produce request and where its
// answer goes.
type waiting struct {
	ti, pi int
	name   string
	pend   *replica.Pending
}

// Finish waits for every partition's fsync (all started when the batches
// were appended), and for acks=all for its high watermark, and answers the
// ones that failed with their error: KAFKA_STORAGE_ERROR (nothing after a
// failed fsync is acknowledged), NOT_LEADER_OR_FOLLOWER,
// NOT_ENOUGH_REPLICAS_AFTER_APPEND, REQUEST_TIMED_OUT.
func (p *pendingProduce) Finish(ctx context.Context) (kmsg.Response, error) {
	pends := make([]*replica.Pending, len(p.waits))
	for i, w := range p.waits {
		pends[i] = w.pend
	}
	wctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	for i, err := range p.h.d.Replicas.AwaitContext(wctx, pends) {
		if err != nil {
			w := p.waits[i]
			sp := &p.Topics[w.ti].Partitions[w.pi]
			sp.BaseOffset, sp.LogAppendTime = -1, -1
			p.fail(sp, w.name, err)
		}
	}
	p.finish()
	return p.ProduceResponse, nil
}

// finish counts the answered request and, from v10, names the leaders its
// NOT_LEADER_OR_FOLLOWER answers point to.
func (p *pendingProduce) finish() {
	countProduce(p.h.d.Replicas.TopicMetrics(), p.ProduceResponse, p.names)
	if p.Version >= 10 {
		p.hints.each(func(id int32, ep metadata.Endpoint, rack *string) {
			b := kmsg.NewProduceResponseBroker()
			b.NodeID, b.Host, b.Port, b.Rack = id, ep.Host, ep.Port, rack
			p.Brokers = append(p.Brokers, b)
		})
	}
}

// countProduce counts every partition of the request in BrokerTopicMetrics;
// names[i] is the name of resp.Topics[i].
func countProduce(tm *replica.TopicMetrics, resp *kmsg.ProduceResponse, names []string) {
	for ti := range resp.Topics {
		s := tm.Topic(names[ti])
		for _, p := range resp.Topics[ti].Partitions {
			s.Produce(p.ErrorCode != 0)
		}
	}
}

// produceOne appends one partition's batch and fills in where it went.
func (h *Handler) produceOne(req *kmsg.ProduceRequest, topic string, partition int32,
	batch *record.Produced, sp *kmsg.ProduceResponseTopicPartition, guards map[topicpart.TopicPartition]verified) (*replica.Pending, error) {
	p, err := h.partition(topic, partition)
	if err != nil {
		return nil, err
	}
	tp := topicpart.TopicPartition{Topic: topic, Partition: partition}
	var pend replica.Pending
	if v, ok := guards[tp]; ok {
		if v.err != nil {
			sp.LogStartOffset = p.Log.LogStartOffset()
			return nil, v.err
		}
		pend, err = h.d.Replicas.AppendProducedVerified(tp, batch, req.Acks, v.guard)
	} else {
		pend, err = h.d.Replicas.AppendProduced(tp, batch, req.Acks)
	}
	if err != nil {
		sp.LogStartOffset = p.Log.LogStartOffset()
		return nil, err
	}
	sp.BaseOffset = pend.Result.BaseOffset
	sp.LogAppendTime = pend.Result.LogAppendTime
	sp.LogStartOffset = pend.Result.LogStartOffset
	return &pend, nil
}

// parseProduce decodes every partition's batch header, in request order.
func parseProduce(req *kmsg.ProduceRequest) []record.Produced {
	n := 0
	for _, t := range req.Topics {
		n += len(t.Partitions)
	}
	out := make([]record.Produced, 0, n)
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			out = append(out, record.ParseProduce(p.Records))
		}
	}
	return out
}

// hasTransactionalRecords is Kafka's RequestUtils.hasTransactionalRecords:
// whether any partition's records start with a transactional batch.
func hasTransactionalRecords(parsed []record.Produced) bool {
	for i := range parsed {
		if parsed[i].Transactional() {
			return true
		}
	}
	return false
}
