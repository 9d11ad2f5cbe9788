package api

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/server"
)

// IncrementalAlterConfigs, versions 0-1 (Kafka 4.2).
//
// Applies SET, DELETE, APPEND and SUBTRACT to the dynamic configs of each
// resource (a topic, the cluster-wide broker defaults "" or one broker's
// id), atomically per resource: if one operation fails nothing of that
// resource changes. The broker that takes the request checks its BROKER
// resources itself (another broker's id, operations on its configuration:
// APPEND and SUBTRACT on LIST configs only, INVALID_CONFIG otherwise; the
// result must apply to this broker's configuration, INVALID_REQUEST
// otherwise, as Kafka's broker answers them), forwards the rest to the
// active controller and answers once it has published the change. As in
// Kafka: a resource named twice fails both entries, a config named twice or
// a null value for anything but DELETE fails the resource, all with
// INVALID_REQUEST. On a list that is not set, APPEND and SUBTRACT start
// from the config's default. Topic results are validated like CreateTopics
// configs (INVALID_CONFIG) before the topic's existence is checked
// (UNKNOWN_TOPIC_OR_PARTITION). ValidateOnly checks and changes nothing.
//
// Deviations: BROKER_LOGGER (log4j levels), CLIENT_METRICS and GROUP
// resources are refused with INVALID_REQUEST; Gregor has none of them. An
// unknown operation on a topic config is INVALID_REQUEST (Kafka's controller
// fails it with UNKNOWN_SERVER_ERROR).
func init() {
	register(kmsg.IncrementalAlterConfigs.Int16(), 0, 1, handleIncrementalAlterConfigs)
	registerController(kmsg.IncrementalAlterConfigs.Int16(), 0, 1, controllerIncrementalAlterConfigs)
}

func handleIncrementalAlterConfigs(ctx context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.IncrementalAlterConfigsRequest)
	seen := map[configResourceName]int{}
	for _, rr := range req.Resources {
		seen[configResourceName{rr.ResourceType, rr.ResourceName}]++
	}
	z := h.authz(r)
	errs := make([]error, len(req.Resources))
	fwd := *req
	fwd.Resources = nil
	var at []int
	for i, rr := range req.Resources {
		if seen[configResourceName{rr.ResourceType, rr.ResourceName}] > 1 {
			errs[i] = errDuplicateResource
		} else {
			errs[i] = configAuthorization(z, auth.OpAlterConfigs, rr.ResourceType, rr.ResourceName)
		}
		if errs[i] == nil && rr.ResourceType == kmsg.ConfigResourceTypeBroker {
			errs[i] = h.checkBrokerIncremental(rr)
		}
		if errs[i] == nil {
			fwd.Resources = append(fwd.Resources, rr)
			at = append(at, i)
		}
	}
	var fwdResp *kmsg.IncrementalAlterConfigsResponse
	var fwdErr error
	if len(fwd.Resources) > 0 {
		var resp kmsg.Response
		resp, fwdErr = h.forward(ctx, &fwd)
		if fwdErr == nil {
			fwdResp = resp.(*kmsg.IncrementalAlterConfigsResponse)
		}
	}
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	resp.Resources = make([]kmsg.IncrementalAlterConfigsResponseResource, len(req.Resources))
	for i, rr := range req.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		sr.ErrorCode, sr.ErrorMessage = h.code(errs[i]), kafkaMessage(errs[i])
		resp.Resources[i] = sr
	}
	for j, i := range at {
		switch {
		case fwdErr != nil:
			resp.Resources[i].ErrorCode, resp.Resources[i].ErrorMessage = h.code(fwdErr), kafkaMessage(fwdErr)
		case j < len(fwdResp.Resources):
			resp.Resources[i].ErrorCode, resp.Resources[i].ErrorMessage = fwdResp.Resources[j].ErrorCode, fwdResp.Resources[j].ErrorMessage
		}
	}
	for i, rr := range resp.Resources {
		if rr.ErrorCode != 0 {
			h.d.Logger.Debug("incremental alter configs refused", "type", rr.ResourceType, "name", rr.ResourceName,
				"code", rr.ErrorCode, "err", errs[i])
		}
	}
	return resp, nil
}

// incrementalOps are a resource's operations, refusing duplicate names and
// null values for anything but DELETE.
func incrementalOps(rr kmsg.IncrementalAlterConfigsRequestResource) ([]config.AlterEntry, error) {
	names := make([]string, len(rr.Configs))
	ops := make([]config.AlterEntry, len(rr.Configs))
	var nulls []string
	for i, c := range rr.Configs {
		names[i] = c.Name
		ops[i] = config.AlterEntry{Name: c.Name, Op: config.AlterOp(c.Op), Value: c.Value}
		if c.Op != kmsg.IncrementalAlterConfigOpDelete && c.Value == nil {
			nulls = append(nulls, c.Name)
		}
	}
	if duplicateConfigNames(names) {
		return nil, fmt.Errorf("%w: Error due to duplicate config keys", kerr.InvalidRequest)
	}
	if len(nulls) > 0 {
		return nil, fmt.Errorf("%w: Null value not supported for : %s", kerr.InvalidRequest, strings.Join(nulls, ", "))
	}
	return ops, nil
}

// checkBrokerIncremental makes the broker's own checks of a BROKER
// resource: the operations, then their result on the layer as this broker
// has it.
func (h *Handler) checkBrokerIncremental(rr kmsg.IncrementalAlterConfigsRequestResource) error {
	ops, err := incrementalOps(rr)
	if err != nil {
		return err
	}
	perNode, err := h.brokerResource(rr.ResourceName)
	if err != nil {
		return err
	}
	if err := checkBrokerOps(ops); err != nil {
		return err
	}
	im := h.d.Metadata.Image()
	current := im.ClusterBrokerConfigs()
	if perNode {
		current = im.NodeBrokerConfigs(h.d.NodeID)
	}
	next, err := config.ApplyIncremental(current, ops, false)
	if err != nil {
		return withCode(kerr.InvalidRequest, err)
	}
	return h.brokerLayerCheck(perNode, next)
}

func controllerIncrementalAlterConfigs(ctx context.Context, h *ControllerHandler, kr kmsg.Request) (kmsg.Response, uint64, error) {
	req := kr.(*kmsg.IncrementalAlterConfigsRequest)
	seen := map[configResourceName]int{}
	for _, rr := range req.Resources {
		seen[configResourceName{rr.ResourceType, rr.ResourceName}]++
	}
	errs := make([]error, len(req.Resources))
	cr := &controller.IncrementalAlterConfigsRequest{ValidateOnly: req.ValidateOnly}
	var at []int
	for i, rr := range req.Resources {
		if seen[configResourceName{rr.ResourceType, rr.ResourceName}] > 1 {
			errs[i] = errDuplicateResource
			continue
		}
		ops, err := incrementalOps(rr)
		if err == nil {
			err = checkConfigResource(rr.ResourceType, rr.ResourceName, true)
		}
		if err == nil && rr.ResourceType == kmsg.ConfigResourceTypeBroker {
			err = checkBrokerOps(ops)
		}
		if err != nil {
			errs[i] = err
			continue
		}
		cr.Resources = append(cr.Resources, controller.IncrementalAlterConfigsResource{Type: int8(rr.ResourceType),
			Name: rr.ResourceName, Ops: ops})
		at = append(at, i)
	}
	var index uint64
	if len(cr.Resources) > 0 {
		out, idx, err := h.d.Controller.IncrementalAlterConfigs(ctx, cr)
		index = idx
		spreadErrs(errs, at, err, func(j int) error { return out.Resources[j].Err })
	}
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for i, rr := range req.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		sr.ErrorCode, sr.ErrorMessage = h.code(errs[i]), kafkaMessage(errs[i])
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, index, nil
}

// failIncrementalAlterConfigs answers every resource with code.
func failIncrementalAlterConfigs(req *kmsg.IncrementalAlterConfigsRequest, code int16, msg *string) *kmsg.IncrementalAlterConfigsResponse {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName, sr.ErrorCode, sr.ErrorMessage = rr.ResourceType, rr.ResourceName, code, msg
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}

// checkBrokerOps makes the checks Kafka's broker makes on operations on its
// own configs before validating the result (ConfigAdminManager).
func checkBrokerOps(ops []config.AlterEntry) error {
	for _, op := range ops {
		switch op.Op {
		case config.AlterSet, config.AlterDelete:
		case config.AlterAppend, config.AlterSubtract:
			d, ok := config.BrokerDef(op.Name)
			if !ok {
				return fmt.Errorf("%w: Unknown config name: %s", kerr.InvalidConfig, op.Name)
			}
			if d.Type != config.List {
				verb := "append"
				if op.Op == config.AlterSubtract {
					verb = "subtract"
				}
				return fmt.Errorf("%w: Config value %s is not allowed for config key: %s", kerr.InvalidConfig, verb, op.Name)
			}
		default:
			return fmt.Errorf("%w: Unknown operations type %d", kerr.InvalidRequest, int8(op.Op))
		}
	}
	return nil
}
