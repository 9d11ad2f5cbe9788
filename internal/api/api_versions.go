package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/server"
)

// ApiVersions, versions 0-4 (Kafka 4.2). Answers with every key registered
// in this package and its exact range. An ApiVersions request newer than 4
// is answered by the server with v0 and UNSUPPORTED_VERSION before it gets here.
//
// Features (v3+): Gregor supports transaction.version 0-2 and finalizes the
// level of gregor.transaction.version (default 2, KIP-890 part 2), which is
// what transactional clients choose their protocol by; level 0 is left out
// of the finalized list, as Kafka leaves out features at level 0.
// eligible.leader.replicas.version (KIP-966) is supported at 0-1 and
// finalized at the level the cluster metadata holds (1 from a new
// cluster's bootstrap, as on Kafka 4.1+), so Admin.describeFeatures
// (kafka-features.sh describe) shows it. Other Kafka features
// (metadata.version, group.version, …) are not advertised.
func init() { register(kmsg.ApiVersions.Int16(), 0, 4, handleApiVersions) }

// featureELR is KIP-966's feature (controller.FeatureELR).
const featureELR = "eligible.leader.replicas.version"

func handleApiVersions(_ context.Context, h *Handler, req *server.Request) (kmsg.Response, error) {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.ApiKeys = SupportedKeys()
	resp.FinalizedFeaturesEpoch = -1
	if h.d.Metadata != nil {
		if im := h.d.Metadata.Image(); im != nil {
			sf := kmsg.NewApiVersionsResponseSupportedFeature()
			sf.Name, sf.MinVersion, sf.MaxVersion = featureELR, 0, 1
			resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
			resp.FinalizedFeaturesEpoch = 0
			if lvl := im.Features[featureELR]; lvl > 0 {
				ff := kmsg.NewApiVersionsResponseFinalizedFeature()
				ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = featureELR, lvl, lvl
				resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
			}
		}
	}
	if h.d.Txn == nil {
		return resp, nil
	}
	sf := kmsg.NewApiVersionsResponseSupportedFeature()
	sf.Name, sf.MinVersion, sf.MaxVersion = "transaction.version", 0, 2
	resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
	resp.FinalizedFeaturesEpoch = 0
	if tv := h.finalizedTV(); tv > 0 {
		ff := kmsg.NewApiVersionsResponseFinalizedFeature()
		ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = "transaction.version", tv, tv
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
	}
	return resp, nil
}
