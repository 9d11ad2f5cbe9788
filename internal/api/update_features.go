package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/controller"
)

// UpdateFeatures, versions 0-2 (Kafka 4.2; kafka-features.sh upgrade,
// downgrade and disable). A broker forwards it to the active controller,
// which finalizes eligible.leader.replicas.version (0-1) atomically as
// Kafka's FeatureControlManager does: any refused update (INVALID_UPDATE_VERSION
// for an unknown feature, a level out of range or an upgrade type that does
// not match) refuses them all. v0's AllowDowngrade is SAFE_DOWNGRADE; v2
// answers the first error at the top level instead of per feature. Needs
// ALTER on the cluster.
func init() {
	register(kmsg.UpdateFeatures.Int16(), 0, 2, handleForwarded)
	registerController(kmsg.UpdateFeatures.Int16(), 0, 2, controllerUpdateFeatures)
}

func controllerUpdateFeatures(ctx context.Context, h *ControllerHandler, kr kmsg.Request) (kmsg.Response, uint64, error) {
	req := kr.(*kmsg.UpdateFeaturesRequest)
	r := &controller.UpdateFeaturesRequest{ValidateOnly: req.ValidateOnly}
	for _, u := range req.FeatureUpdates {
		typ := u.UpgradeType
		if req.Version == 0 {
			typ = controller.UpgradeTypeUpgrade
			if u.AllowDowngrade {
				typ = controller.UpgradeTypeSafeDowngrade
			}
		}
		r.Updates = append(r.Updates, controller.FeatureUpdate{Feature: u.Feature, Level: max(u.MaxVersionLevel, 0), Type: typ})
	}
	ctx, cancel := withTimeoutMillis(ctx, req.TimeoutMillis)
	defer cancel()
	out, index, err := h.d.Controller.UpdateFeatures(ctx, r)
	if err != nil {
		return failUpdateFeatures(req, h.code(err), errMessage(err)), 0, nil
	}
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	for _, res := range out.Results {
		code := h.code(res.Err)
		if req.Version >= 2 {
			if code != 0 && resp.ErrorCode == 0 {
				resp.ErrorCode, resp.ErrorMessage = code, kafkaMessage(res.Err)
			}
			continue
		}
		rr := kmsg.NewUpdateFeaturesResponseResult()
		rr.Feature, rr.ErrorCode, rr.ErrorMessage = res.Feature, code, kafkaMessage(res.Err)
		resp.Results = append(resp.Results, rr)
	}
	return resp, index, nil
}

// failUpdateFeatures answers the request, and before v2 every feature, with code.
func failUpdateFeatures(req *kmsg.UpdateFeaturesRequest, code int16, msg *string) *kmsg.UpdateFeaturesResponse {
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	resp.ErrorCode, resp.ErrorMessage = code, msg
	if req.Version < 2 {
		for _, u := range req.FeatureUpdates {
			rr := kmsg.NewUpdateFeaturesResponseResult()
			rr.Feature, rr.ErrorCode, rr.ErrorMessage = u.Feature, code, msg
			resp.Results = append(resp.Results, rr)
		}
	}
	return resp
}
