package controller

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/metadata"
)

// UpdateFeaturesRequest is UpdateFeatures (key 57, v0-v2): kafka-features.sh
// upgrade / downgrade / disable.
type UpdateFeaturesRequest struct {
	Updates      []FeatureUpdate
	ValidateOnly bool
}

// FeatureUpdate is one feature's new finalized level (0 disables it).
type FeatureUpdate struct {
	Feature string
	Level   int16
	Type    int8 // UpgradeType*
}

// Kafka's FeatureUpdate.UpgradeType codes.
const (
	UpgradeTypeUpgrade         int8 = 1
	UpgradeTypeSafeDowngrade   int8 = 2
	UpgradeTypeUnsafeDowngrade int8 = 3
)

// UpdateFeaturesResponse answers each update, in request order.
type UpdateFeaturesResponse struct {
	Results []FeatureResult
}

// FeatureResult is one update's answer.
type FeatureResult struct {
	Feature string
	Err     error
}

func (*UpdateFeaturesRequest) request() {}

// UpdateFeatures serves UpdateFeatures.
func (s *Shell) UpdateFeatures(ctx context.Context, r *UpdateFeaturesRequest) (*UpdateFeaturesResponse, uint64, error) {
	return call[*UpdateFeaturesResponse](ctx, s, r)
}

// supportedFeatures are the features the controller finalizes, with the
// levels every Gregor node supports. transaction.version is not here: each
// broker takes it from gregor.transaction.version.
var supportedFeatures = map[string][2]int16{FeatureELR: {0, 1}}

// updateFeatures is FeatureControlManager.updateFeatures, atomic as
// Kafka's: if any update is refused, none is written. Disabling
// eligible.leader.replicas.version clears every partition's ELR and last
// known ELR (nothing may be elected from them any more).
func (c *Core) updateFeatures(w *write, r *UpdateFeaturesRequest) built {
	resp := &UpdateFeaturesResponse{}
	ok := true
	for i, u := range r.Updates {
		err := checkFeatureUpdate(w.im, u)
		for _, before := range r.Updates[:i] {
			if before.Feature == u.Feature {
				err = fmt.Errorf("%w: the feature %s is updated twice", kerr.InvalidRequest, u.Feature)
			}
		}
		ok = ok && err == nil
		resp.Results = append(resp.Results, FeatureResult{Feature: u.Feature, Err: err})
	}
	if !ok || r.ValidateOnly {
		return answer(resp, nil)
	}
	for _, u := range r.Updates {
		if w.im.Features[u.Feature] == u.Level {
			continue
		}
		w.emit(metadata.FeatureLevel{Name: u.Feature, Level: u.Level})
		if u.Feature == FeatureELR && u.Level == 0 {
			w.emit(clearELRs(w.im)...)
		}
	}
	return answer(resp, nil)
}

// checkFeatureUpdate is updateFeature's validation, with Kafka's messages.
func checkFeatureUpdate(im *metadata.Image, u FeatureUpdate) error {
	invalid := func(why string) error {
		return fmt.Errorf("%w: Invalid update version %d for feature %s. %s", kerr.InvalidUpdateVersion, u.Level, u.Feature, why)
	}
	levels, known := supportedFeatures[u.Feature]
	cur := im.Features[u.Feature]
	switch {
	case u.Type < UpgradeTypeUpgrade || u.Type > UpgradeTypeUnsafeDowngrade:
		return invalid("The controller does not support the given upgrade type.")
	case u.Level < 0:
		return invalid("A feature version cannot be less than 0.")
	case !known:
		return invalid("The controller does not support the given feature.")
	case u.Level > cur && u.Type != UpgradeTypeUpgrade:
		return invalid("Can't downgrade to a newer version.")
	case u.Level < cur && u.Type == UpgradeTypeUpgrade:
		return invalid("Can't downgrade without setting the upgrade type to safe or unsafe downgrade.")
	case u.Level < levels[0] || u.Level > levels[1]:
		return invalid(fmt.Sprintf("Gregor supports versions %d-%d of it.", levels[0], levels[1]))
	}
	return nil
}

// clearELRs empties every partition's ELR and last known ELR.
func clearELRs(im *metadata.Image) []metadata.Record {
	var recs []metadata.Record
	for _, t := range im.SortedTopics() {
		for p, part := range t.Partitions {
			if len(part.ELR) == 0 && len(part.LastKnownELR) == 0 {
				continue
			}
			recs = append(recs, metadata.PartitionChange{Topic: t.ID, Partition: int32(p), ExpectedPartitionEpoch: part.PartitionEpoch,
				Leader: metadata.NoLeaderChange, ELR: []int32{}, LastKnownELR: []int32{}, LeaderRecoveryState: metadata.NoRecoveryChange})
		}
	}
	return recs
}
