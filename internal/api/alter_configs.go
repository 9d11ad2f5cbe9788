package api

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/server"
)

// AlterConfigs, versions 0-2 (Kafka 4.2).
//
// Replaces the whole set of dynamic configs of each resource: a topic's
// overrides, the cluster-wide broker defaults (BROKER "") or one broker's
// own dynamic broker configs (BROKER with its id). The broker that takes the
// request checks its BROKER resources itself, as Kafka's ConfigAdminManager
// does: another broker's id is INVALID_REQUEST, and configs that cannot be
// applied to this broker's configuration (read-only ones, per-broker ones at
// the cluster level, bad values) are INVALID_REQUEST, as Kafka's broker
// answers them (KAFKA-13609). It forwards the rest to the active controller
// and answers once it has published the change. As in Kafka: a resource
// named twice fails both entries, a config named twice or given a null value
// fails the resource, all with INVALID_REQUEST. Topic configs are validated
// like CreateTopics configs (INVALID_CONFIG) before the topic's existence is
// checked (UNKNOWN_TOPIC_OR_PARTITION). ValidateOnly checks and changes
// nothing.
//
// Deviations: CLIENT_METRICS and GROUP resources are refused with
// INVALID_REQUEST; Gregor has neither (BROKER_LOGGER is refused by Kafka too).
func init() {
	register(kmsg.AlterConfigs.Int16(), 0, 2, handleAlterConfigs)
	registerController(kmsg.AlterConfigs.Int16(), 0, 2, controllerAlterConfigs)
}

func handleAlterConfigs(ctx context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterConfigsRequest)
	seen := map[configResourceName]int{}
	for _, rr := range req.Resources {
		seen[configResourceName{rr.ResourceType, rr.ResourceName}]++
	}
	// Checked here: duplicates, authorization and this broker's own
	// resources; the others go to the controller, in a request of the same
	// version.
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
			errs[i] = h.checkBrokerAlter(rr)
		}
		if errs[i] == nil {
			fwd.Resources = append(fwd.Resources, rr)
			at = append(at, i)
		}
	}
	var fwdResp *kmsg.AlterConfigsResponse
	var fwdErr error
	if len(fwd.Resources) > 0 {
		var resp kmsg.Response
		resp, fwdErr = h.forward(ctx, &fwd)
		if fwdErr == nil {
			fwdResp = resp.(*kmsg.AlterConfigsResponse)
		}
	}
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	resp.Resources = make([]kmsg.AlterConfigsResponseResource, len(req.Resources))
	for i, rr := range req.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
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
			h.d.Logger.Debug("alter configs refused", "type", rr.ResourceType, "name", rr.ResourceName, "code", rr.ErrorCode,
				"err", errs[i])
		}
	}
	return resp, nil
}

var errDuplicateResource = fmt.Errorf("%w: Each resource must appear at most once.", kerr.InvalidRequest)

// checkBrokerAlter makes the broker's own checks of a BROKER resource.
func (h *Handler) checkBrokerAlter(rr kmsg.AlterConfigsRequestResource) error {
	configs, err := alterConfigsValues(rr)
	if err != nil {
		return err
	}
	perNode, err := h.brokerResource(rr.ResourceName)
	if err != nil {
		return err
	}
	return h.brokerLayerCheck(perNode, configs)
}

// alterConfigsValues are a resource's configs, refusing duplicate names and
// null values.
func alterConfigsValues(rr kmsg.AlterConfigsRequestResource) (map[string]string, error) {
	names := make([]string, len(rr.Configs))
	var nulls []string
	configs := make(map[string]string, len(rr.Configs))
	for i, c := range rr.Configs {
		names[i] = c.Name
		if c.Value == nil {
			nulls = append(nulls, c.Name)
			continue
		}
		configs[c.Name] = *c.Value
	}
	if duplicateConfigNames(names) {
		return nil, fmt.Errorf("%w: Error due to duplicate config keys", kerr.InvalidRequest)
	}
	if len(nulls) > 0 {
		return nil, fmt.Errorf("%w: Null value not supported for : %s", kerr.InvalidRequest, strings.Join(nulls, ", "))
	}
	return configs, nil
}

func controllerAlterConfigs(ctx context.Context, h *ControllerHandler, kr kmsg.Request) (kmsg.Response, uint64, error) {
	req := kr.(*kmsg.AlterConfigsRequest)
	seen := map[configResourceName]int{}
	for _, rr := range req.Resources {
		seen[configResourceName{rr.ResourceType, rr.ResourceName}]++
	}
	errs := make([]error, len(req.Resources))
	cr := &controller.AlterConfigsRequest{ValidateOnly: req.ValidateOnly}
	var at []int
	for i, rr := range req.Resources {
		if seen[configResourceName{rr.ResourceType, rr.ResourceName}] > 1 {
			errs[i] = errDuplicateResource
			continue
		}
		configs, err := alterConfigsValues(rr)
		if err == nil {
			err = checkConfigResource(rr.ResourceType, rr.ResourceName, false)
		}
		if err != nil {
			errs[i] = err
			continue
		}
		res := controller.AlterConfigsResource{Type: int8(rr.ResourceType), Name: rr.ResourceName}
		for _, c := range rr.Configs {
			res.Configs = append(res.Configs, controller.ConfigValue{Name: c.Name, Value: strp(configs[c.Name])})
		}
		cr.Resources = append(cr.Resources, res)
		at = append(at, i)
	}
	var index uint64
	if len(cr.Resources) > 0 {
		out, idx, err := h.d.Controller.AlterConfigs(ctx, cr)
		index = idx
		spreadErrs(errs, at, err, func(j int) error { return out.Resources[j].Err })
	}
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	for i, rr := range req.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		sr.ErrorCode, sr.ErrorMessage = h.code(errs[i]), kafkaMessage(errs[i])
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, index, nil
}

// spreadErrs puts a controller call's answer into errs, where at[j] is the
// place in the request of the j-th resource sent: err for every one of them
// when the call failed, else each resource's own error.
func spreadErrs(errs []error, at []int, err error, resourceErr func(j int) error) {
	for j, i := range at {
		errs[i] = err
		if err == nil {
			errs[i] = resourceErr(j)
		}
	}
}

// failAlterConfigs answers every resource with code.
func failAlterConfigs(req *kmsg.AlterConfigsRequest, code int16, msg *string) *kmsg.AlterConfigsResponse {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName, sr.ErrorCode, sr.ErrorMessage = rr.ResourceType, rr.ResourceName, code, msg
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}
