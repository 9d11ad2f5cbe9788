package api_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// eligible.leader.replicas.version as kafka-features.sh sees and changes
// it: ApiVersions (Admin.describeFeatures) shows it finalized at 1 in a new
// cluster; UpdateFeatures disables it (safe downgrade; v0's
// AllowDowngrade), refuses a downgrade typed as an upgrade, an unknown
// feature or level (INVALID_UPDATE_VERSION, per feature before v2, at the
// top level in v2, none applied), and enables it again.
func TestUpdateFeaturesELR(t *testing.T) {
	a := newAdminAPI(t, nil)
	finalized := func() int16 {
		t.Helper()
		resp := a.send(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
		supported := false
		for _, sf := range resp.SupportedFeatures {
			supported = supported || sf.Name == "eligible.leader.replicas.version" && sf.MinVersion == 0 && sf.MaxVersion == 1
		}
		if !supported {
			t.Fatalf("ApiVersions does not support eligible.leader.replicas.version 0-1: %+v", resp.SupportedFeatures)
		}
		for _, ff := range resp.FinalizedFeatures {
			if ff.Name == "eligible.leader.replicas.version" {
				return ff.MaxVersionLevel
			}
		}
		return 0
	}
	update := func(version int16, level int16, typ int8, allowDowngrade bool, feature string) *kmsg.UpdateFeaturesResponse {
		t.Helper()
		req := kmsg.NewPtrUpdateFeaturesRequest()
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature, u.MaxVersionLevel, u.UpgradeType, u.AllowDowngrade = feature, level, typ, allowDowngrade
		req.FeatureUpdates = append(req.FeatureUpdates, u)
		return a.send(req, a.pinned(kmsg.UpdateFeatures, version)).(*kmsg.UpdateFeaturesResponse)
	}
	const elr = "eligible.leader.replicas.version"
	if got := finalized(); got != 1 {
		t.Fatalf("a new cluster finalizes %s at %d, want 1", elr, got)
	}
	if r := update(1, 0, 1, false, elr); len(r.Results) != 1 || r.Results[0].ErrorCode != kerr.InvalidUpdateVersion.Code {
		t.Fatalf("a downgrade typed as an upgrade: %+v", r)
	}
	if r := update(2, 1, 1, false, "metadata.version"); r.ErrorCode != kerr.InvalidUpdateVersion.Code || r.ErrorMessage == nil {
		t.Fatalf("v2, an unknown feature: %+v", r)
	}
	if r := update(1, 0, 2, false, elr); len(r.Results) != 1 || r.Results[0].ErrorCode != 0 || finalized() != 0 {
		t.Fatalf("a safe downgrade to 0: %+v, finalized %d", r, finalized())
	}
	if r := update(2, 1, 1, false, elr); r.ErrorCode != 0 || finalized() != 1 {
		t.Fatalf("v2 upgrade to 1: %+v, finalized %d", r, finalized())
	}
	if r := update(0, 0, 0, true, elr); len(r.Results) != 1 || r.Results[0].ErrorCode != 0 || finalized() != 0 {
		t.Fatalf("v0 AllowDowngrade to 0: %+v, finalized %d", r, finalized())
	}
}
