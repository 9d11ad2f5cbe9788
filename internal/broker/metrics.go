package broker

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gregor-broker/gregor/internal/group"
)

// PartitionSeriesConfig turns on the per-partition series of /metrics.
const PartitionSeriesConfig = "gregor.metrics.partition.series.enable"

// Scrape-time gauges over the broker's state, named as the Prometheus JMX
// exporter names Kafka's MBeans (kafka.server:type=ReplicaManager,
// name=PartitionCount → kafka_server_replicamanager_partitioncount). The
// full list with the MBean of each is docs/metrics.md.
var (
	descPartitionCount = prometheus.NewDesc("kafka_server_replicamanager_partitioncount",
		"Partitions hosted by this broker.", nil, nil)
	descLeaderCount = prometheus.NewDesc("kafka_server_replicamanager_leadercount",
		"Partitions this broker leads.", nil, nil)
	descUnderReplicated = prometheus.NewDesc("kafka_server_replicamanager_underreplicatedpartitions",
		"Led partitions whose ISR is smaller than their replica set.", nil, nil)
	descUnderMinISR = prometheus.NewDesc("kafka_server_replicamanager_underminisrpartitioncount",
		"Led partitions whose ISR is smaller than min.insync.replicas (acks=all produce is refused).", nil, nil)
	descAtMinISR = prometheus.NewDesc("kafka_server_replicamanager_atminisrpartitioncount",
		"Led partitions whose ISR is exactly min.insync.replicas.", nil, nil)
	descOfflineReplicas = prometheus.NewDesc("kafka_server_replicamanager_offlinereplicacount",
		"Replicas assigned to this broker that it does not host.", nil, nil)

	descOfflinePartitions = prometheus.NewDesc("kafka_controller_kafkacontroller_offlinepartitionscount",
		"Partitions without a leader.", nil, nil)
	descUncleanElections = prometheus.NewDesc("kafka_controller_controllerstats_uncleanleaderelectionspersec",
		"Unclean and last-known-leader elections this node's controller made while active (acknowledged records may be lost), by kind.",
		[]string{"kind"}, nil)
	descUnackedUnclean = prometheus.NewDesc("gregor_unclean_elections_unacknowledged",
		"Partitions whose last unclean or last-known-leader election no operator has acknowledged yet (gregor partition ack-unclean): possible loss of acknowledged records. The same on every node (cluster metadata).",
		nil, nil)
	descActiveController = prometheus.NewDesc("kafka_controller_kafkacontroller_activecontrollercount",
		"1 if this node is the active controller, else 0.", nil, nil)
	descGlobalTopics = prometheus.NewDesc("kafka_controller_kafkacontroller_globaltopiccount",
		"Topics in the cluster metadata, internal topics included.", nil, nil)
	descGlobalPartitions = prometheus.NewDesc("kafka_controller_kafkacontroller_globalpartitioncount",
		"Partitions in the cluster metadata, internal topics included.", nil, nil)

	descOfflineLogDirs = prometheus.NewDesc("kafka_log_logmanager_offlinelogdirectorycount",
		"Log dirs taken offline by a failed write or fsync.", nil, nil)
	descLogDirOffline = prometheus.NewDesc("kafka_log_logmanager_logdirectoryoffline",
		"1 if the log dir is offline (a write or fsync in it failed), else 0.", []string{"logDirectory"}, nil)
	descLogDirFull = prometheus.NewDesc("gregor_log_dir_full",
		"1 while produce to the log dir is refused, and its followers do not append, for want of space (below gregor.log.dir.min.free.bytes), else 0.",
		[]string{"logDirectory"}, nil)
	descLogDirUsable = prometheus.NewDesc("gregor_log_dir_usable_bytes",
		"Bytes usable on the log dir's volume at the last check.", []string{"logDirectory"}, nil)
	descLogDirMinFree = prometheus.NewDesc("gregor_log_dir_min_free_bytes",
		"Free space the log dir keeps: gregor.log.dir.min.free.bytes resolved against its volume.", []string{"logDirectory"}, nil)

	descLogDirSize = prometheus.NewDesc("gregor_log_size_bytes",
		"Bytes in the partition logs of each log dir.", []string{"logDirectory"}, nil)
	descLogDirSegments = prometheus.NewDesc("gregor_log_segments",
		"Segments of the partition logs of each log dir.", []string{"logDirectory"}, nil)
	descLogDirStrays = prometheus.NewDesc("gregor_log_stray_logs",
		"Stray logs (partition logs the metadata does not know, set aside, not deleted) in each log dir.", []string{"logDirectory"}, nil)

	partitionLabels    = []string{"topic", "partition"}
	descLogSize        = prometheus.NewDesc("kafka_log_log_size", "Bytes in the partition's log.", partitionLabels, nil)
	descLogSegments    = prometheus.NewDesc("kafka_log_log_numlogsegments", "Segments of the partition's log.", partitionLabels, nil)
	descLogStartOffset = prometheus.NewDesc("kafka_log_log_logstartoffset", "The partition's log start offset.", partitionLabels, nil)
	descLogEndOffset   = prometheus.NewDesc("kafka_log_log_logendoffset", "The partition's log end offset.", partitionLabels, nil)

	groupPrefix = "kafka_coordinator_group_groupmetadatamanager_"
	descGroups  = prometheus.NewDesc(groupPrefix+"numgroups",
		"Consumer groups coordinated by this broker.", nil, nil)
	descACLs = prometheus.NewDesc("kafka_server_authorizer_metrics_acls_total_count",
		"ACLs in the metadata (0 without an authorizer).", nil, nil)
	// descGroupsIn counts groups by state, keyed by the state's name.
	descGroupsIn = map[string]*prometheus.Desc{}
)

func init() {
	for _, s := range []string{"PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty"} {
		descGroupsIn[s] = prometheus.NewDesc(groupPrefix+"numgroups"+strings.ToLower(s),
			"Consumer groups coordinated by this broker in state "+s+".", nil, nil)
	}
}

// groupListTimeout bounds how long a scrape waits for the group
// coordinator; the group gauges are left out of a scrape that times out.
const groupListTimeout = 2 * time.Second

// registerMetrics registers the scrape-time collector and the replica
// manager's counters.
func (b *Broker) registerMetrics() {
	for _, c := range []prometheus.Collector{(*brokerCollector)(b), b.replicas.Collector(), b.sessions.Collector(),
		b.requestMemory.Collector()} {
		if err := b.o.Registry.Register(c); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
			b.logger.Warn("cannot register metrics", "err", err)
		}
	}
}

type brokerCollector Broker

func (c *brokerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPartitionCount, descLeaderCount, descUnderReplicated, descUnderMinISR,
		descAtMinISR, descOfflineReplicas, descOfflinePartitions, descActiveController, descUncleanElections, descUnackedUnclean, descGlobalTopics,
		descGlobalPartitions, descLogDirSize, descLogDirSegments, descLogDirStrays, descLogSize, descLogSegments,
		descOfflineLogDirs, descLogDirOffline, descLogDirFull, descLogDirUsable, descLogDirMinFree,
		descLogStartOffset, descLogEndOffset, descGroups, descACLs} {
		ch <- d
	}
	for _, d := range descGroupsIn {
		ch <- d
	}
}

func (c *brokerCollector) Collect(ch chan<- prometheus.Metric) {
	b := (*Broker)(c)
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	cfg := b.Config()
	acls := 0
	if a := b.Authorizer(); a != nil {
		acls = a.Count()
	}
	gauge(descACLs, float64(acls))
	perPartition := cfg.Bool(PartitionSeriesConfig)
	parts := b.replicas.Partitions()
	var leaders, under, underMin, atMin, offline int
	size := map[string]float64{}
	segments := map[string]float64{}
	strays := map[string]float64{}
	for _, d := range b.logs.Dirs() {
		size[d], segments[d], strays[d] = 0, 0, 0
	}
	for _, s := range b.logs.Strays() {
		strays[s.Dir]++
	}
	for _, p := range parts {
		st := p.ReplicaState()
		if p.Offline() != nil {
			offline++
		}
		if st.Leader {
			leaders++
		}
		if st.UnderReplicated() {
			under++
		}
		if st.UnderMinISR() {
			underMin++
		}
		if st.AtMinISR() {
			atMin++
		}
		dir := b.logs.DirOf(p.TP)
		bytes, segs := p.Log.Size(), p.Log.NumSegments()
		size[dir] += float64(bytes)
		segments[dir] += float64(segs)
		if perPartition {
			labels := []string{p.TP.Topic, strconv.Itoa(int(p.TP.Partition))}
			gauge(descLogSize, float64(bytes), labels...)
			gauge(descLogSegments, float64(segs), labels...)
			gauge(descLogStartOffset, float64(p.Log.LogStartOffset()), labels...)
			gauge(descLogEndOffset, float64(p.Log.LogEndOffset()), labels...)
		}
	}
	gauge(descPartitionCount, float64(len(parts)))
	gauge(descLeaderCount, float64(leaders))
	gauge(descUnderReplicated, float64(under))
	gauge(descUnderMinISR, float64(underMin))
	gauge(descAtMinISR, float64(atMin))
	for d, v := range size {
		gauge(descLogDirSize, v, d)
		gauge(descLogDirSegments, segments[d], d)
		gauge(descLogDirStrays, strays[d], d)
	}
	c.collectCluster(gauge, len(parts), offline)
	c.collectLogDirs(gauge)
	c.collectGroups(gauge)
}

// collectLogDirs reports each log dir's health.
func (c *brokerCollector) collectLogDirs(gauge func(*prometheus.Desc, float64, ...string)) {
	offline := 0
	bit := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	for _, d := range (*Broker)(c).logs.DirStates() {
		if d.Offline != nil {
			offline++
		}
		gauge(descLogDirOffline, bit(d.Offline != nil), d.Path)
		gauge(descLogDirFull, bit(d.Full), d.Path)
		gauge(descLogDirUsable, float64(d.Usage.Usable), d.Path)
		gauge(descLogDirMinFree, float64(d.MinFree), d.Path)
	}
	gauge(descOfflineLogDirs, float64(offline))
}

// collectCluster reports the cluster as the published metadata image has
// it: partitions without a leader are offline, and so are replicas whose
// broker is fenced or gone; partitions this broker leads in an offline log
// dir (offlineHosted) count as offline too (the image does not know the
// dir failed). ActiveControllerCount is 1 on the active controller only.
func (c *brokerCollector) collectCluster(gauge func(*prometheus.Desc, float64, ...string), _, offlineHosted int) {
	b := (*Broker)(c)
	im := published{b}.Image()
	var total, offline, offlineReplicas, unacked int
	for _, t := range im.SortedTopics() {
		for _, p := range t.Partitions {
			total++
			if p.Leader < 0 {
				offline++
			}
			if p.Unclean != nil {
				unacked++
			}
			for _, r := range p.Replicas {
				if br := im.Brokers[r]; br == nil || br.Fenced {
					offlineReplicas++
				}
			}
		}
	}
	active := 0.0
	if ok, _ := b.node.Shell().Active(); ok {
		active = 1
	}
	gauge(descOfflineReplicas, float64(offlineReplicas+offlineHosted))
	gauge(descOfflinePartitions, float64(offline+offlineHosted))
	gauge(descActiveController, active)
	gauge(descUncleanElections, float64(b.uncleanElections.Load()), "unclean") // a count since start, as the meter's Count
	gauge(descUncleanElections, float64(b.lastKnownElections.Load()), "last_known_leader")
	gauge(descUnackedUnclean, float64(unacked))
	gauge(descGlobalTopics, float64(im.NumTopics()))
	gauge(descGlobalPartitions, float64(total))
}

func (c *brokerCollector) collectGroups(gauge func(*prometheus.Desc, float64, ...string)) {
	b := (*Broker)(c)
	if b.groups == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), groupListTimeout)
	defer cancel()
	groups, err := b.groups.List(ctx, group.ListFilter{})
	if err != nil {
		b.logger.Debug("group gauges left out of this scrape", "err", err)
		return
	}
	byState := map[string]int{}
	for _, g := range groups {
		byState[g.State]++
	}
	gauge(descGroups, float64(len(groups)))
	for s, d := range descGroupsIn {
		gauge(d, float64(byState[s]))
	}
}
