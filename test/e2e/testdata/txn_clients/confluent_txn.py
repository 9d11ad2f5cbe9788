"""Transactions through confluent-kafka-python (librdkafka), run by
TestPythonTransactions: argv is BOOTSTRAP IN_TOPIC OUT_TOPIC GROUP.

1. A transactional producer commits c1 c2 c3, aborts a1 a2, commits c4
   (all to IN_TOPIC, one partition).
2. A read_committed consumer of GROUP (subscribed) reads IN_TOPIC to its
   end; the transform (upper case) goes to OUT_TOPIC in a transaction with
   send_offsets_to_transaction and the consumer's group metadata. That
   transaction is aborted once (its records marked "-aborted"; the group's
   offsets must stay uncommitted), then redone and committed.
3. Fencing: producer A of one transactional id has f1 in an open
   transaction when producer B of the same id initialises (the coordinator
   aborts A's transaction); A's commit fails fenced; B commits f2.
4. Prints one JSON object: what was read, the group's committed offsets after
   the abort and after the commit, and OUT_TOPIC read_committed and
   read_uncommitted, and the error A's commit got.
Any client error raises (non-zero exit; the Go test prints stderr).
"""
import json
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

BOOT, IN, OUT, GROUP = sys.argv[1:5]
DEADLINE = time.monotonic() + 18


def check_delivery(err, msg):
    if err is not None:
        raise KafkaException(err)


def producer(txid):
    p = Producer({"bootstrap.servers": BOOT, "transactional.id": txid,
                  "transaction.timeout.ms": 10000, "enable.idempotence": True})
    p.init_transactions(10)
    return p


def txn(p, values, commit):
    p.begin_transaction()
    for v in values:
        p.produce(IN, v.encode(), on_delivery=check_delivery)
    if commit:
        p.commit_transaction(10)
    else:
        p.flush(10)  # the aborted records reach the log before the abort
        p.abort_transaction(10)


def read_all(topic, isolation, group=None, subscribe=False, want=None):
    """Reads topic from the start until every partition reported its end
    (and, when want is set, at least want records were read)."""
    conf = {"bootstrap.servers": BOOT, "group.id": group or ("reader-" + isolation + "-" + topic),
            "isolation.level": isolation, "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "enable.partition.eof": True}
    c = Consumer(conf)
    if subscribe:
        c.subscribe([topic])
    else:
        c.assign([TopicPartition(topic, 0, 0)])
    vals = []
    eof = False
    while time.monotonic() < DEADLINE:
        m = c.poll(0.2)
        if m is None:
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                eof = True
                if want is None or len(vals) >= want:
                    break
                continue
            raise KafkaException(m.error())
        vals.append(m.value().decode())
    if not eof:
        raise RuntimeError("%s (%s): no end of partition before the deadline; read %s" % (topic, isolation, vals))
    return c, vals


def committed(c):
    return [tp.offset for tp in c.committed([TopicPartition(IN, 0)], 10)]


def fence():
    a = producer("py-fence")
    a.begin_transaction()
    a.produce(IN, b"f1")
    a.flush(10)
    b = producer("py-fence")
    try:
        a.commit_transaction(10)
        err = "commit succeeded"
    except KafkaException as e:
        err = e.args[0].name()
    txn(b, ["f2"], True)
    return err


def main():
    p = producer("py-txn")
    txn(p, ["c1", "c2", "c3"], True)
    txn(p, ["a1", "a2"], False)
    txn(p, ["c4"], True)
    p.flush(5)

    c, read = read_all(IN, "read_committed", group=GROUP, subscribe=True)
    positions = c.position(c.assignment())
    etl = producer("py-etl")
    out = [v.upper() for v in read]

    etl.begin_transaction()
    for v in out:
        etl.produce(OUT, (v + "-aborted").encode(), on_delivery=check_delivery)
    etl.send_offsets_to_transaction(positions, c.consumer_group_metadata(), 10)
    etl.flush(10)
    etl.abort_transaction(10)
    after_abort = committed(c)

    etl.begin_transaction()
    for v in out:
        etl.produce(OUT, v.encode(), on_delivery=check_delivery)
    etl.send_offsets_to_transaction(positions, c.consumer_group_metadata(), 10)
    etl.commit_transaction(10)
    after_commit = committed(c)
    c.close()

    fenced = fence()
    _, out_committed = read_all(OUT, "read_committed")
    _, out_uncommitted = read_all(OUT, "read_uncommitted", want=2 * len(out))
    json.dump({
        "read_committed": read,
        "positions": [tp.offset for tp in positions],
        "offsets_after_abort": after_abort,
        "offsets_after_commit": after_commit,
        "out_committed": out_committed,
        "out_uncommitted": out_uncommitted,
        "fenced_error": fenced,
    }, sys.stdout)


main()
