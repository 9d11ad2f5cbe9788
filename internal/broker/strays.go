package broker

import (
	"github.com/gregor-broker/gregor/internal/admin"
	"github.com/gregor-broker/gregor/internal/logmgr"
)

// strayViews are the stray logs of dir, for the admin API's log dir view.
func strayViews(strays []logmgr.StrayLog, dir string) []admin.StrayLogView {
	out := []admin.StrayLogView{}
	for _, s := range strays {
		if s.Dir == dir {
			out = append(out, admin.StrayLogView{Name: s.Name, Topic: s.TP.Topic, Partition: s.TP.Partition, SizeBytes: s.Bytes})
		}
	}
	return out
}
