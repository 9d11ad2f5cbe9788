// Transactions through kafkajs, run by TestKafkajsTransactions with
// NODE_PATH pointing at the kafkajs install: argv is BOOTSTRAP IN_TOPIC
// OUT_TOPIC GROUP.
//
// 1. producer.transaction(): commits c1 c2 c3, aborts a1 a2, commits c4
//    (IN_TOPIC, one partition).
// 2. A consumer of GROUP with readUncommitted=false reads IN_TOPIC to its end
//    (autoCommit off). The transform (upper case) goes to OUT_TOPIC in a
//    transaction with sendOffsets for GROUP: aborted once (its records
//    marked "-aborted"; the group's offsets must stay uncommitted), then
//    redone and committed.
// 3. Fencing: producer A of one transactional id has f1 in an open
//    transaction when producer B of the same id begins one (InitProducerId:
//    the coordinator aborts A's transaction); A's commit fails; B commits f2.
// 4. Prints one JSON object: what was read, the group's offsets after the
//    abort and after the commit, OUT_TOPIC read committed and uncommitted,
//    and the error A's commit got.
// Any client error exits non-zero (the Go test prints stderr).
const { Kafka, logLevel } = require('kafkajs')

const [boot, inTopic, outTopic, group] = process.argv.slice(2)
const kafka = new Kafka({ clientId: 'gregor-kafkajs', brokers: boot.split(','), logLevel: logLevel.WARN, retry: { retries: 3 } })
const deadline = Date.now() + 18000

function transactional (id) {
  return kafka.producer({ transactionalId: id, idempotent: true, maxInFlightRequests: 1, transactionTimeout: 10000 })
}

async function txn (producer, topic, values, commit, offsets) {
  const t = await producer.transaction()
  await t.send({ topic, messages: values.map(v => ({ value: v })) })
  if (offsets) await t.sendOffsets({ consumerGroupId: group, topics: offsets })
  if (commit) await t.commit()
  else await t.abort()
}

// readAll consumes topic from the start with groupId until it has want
// records (and the rest of the batch that brought the last of them) and
// returns the records' values and the offset after the last one. Aborted
// records precede the committed ones in each topic (one partition), so a
// consumer that let them through would return them among the first want.
async function readAll (topic, groupId, readUncommitted, want) {
  const consumer = kafka.consumer({ groupId, readUncommitted, maxWaitTimeInMs: 200, sessionTimeout: 10000, rebalanceTimeout: 10000 })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const values = []
  let next = '0'
  let enough = null
  const done = new Promise(resolve => { enough = resolve })
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ message }) => {
      values.push(message.value.toString())
      next = (BigInt(message.offset) + 1n).toString()
      if (values.length >= want) enough()
    }
  })
  const timer = new Promise((resolve, reject) => setTimeout(() => reject(new Error(`${topic}: read ${JSON.stringify(values)}, want ${want} records before the deadline`)), deadline - Date.now()))
  await Promise.race([done, timer])
  await consumer.disconnect()
  return { values, next }
}

async function groupOffsets (admin) {
  const got = await admin.fetchOffsets({ groupId: group, topics: [inTopic] })
  return got[0].partitions.map(p => Number(p.offset))
}

async function fence () {
  const a = transactional('kafkajs-fence')
  await a.connect()
  const t = await a.transaction()
  await t.send({ topic: inTopic, messages: [{ value: 'f1' }] })
  const b = transactional('kafkajs-fence')
  await b.connect()
  // kafkajs initialises the transactional id at its first transaction().
  const tb = await b.transaction()
  let err = 'commit succeeded'
  try {
    await t.commit()
  } catch (e) {
    err = e.type || e.name
  }
  await tb.send({ topic: inTopic, messages: [{ value: 'f2' }] })
  await tb.commit()
  await a.disconnect().catch(() => {})
  await b.disconnect()
  return err
}

async function main () {
  const p = transactional('kafkajs-txn')
  await p.connect()
  await txn(p, inTopic, ['c1', 'c2', 'c3'], true)
  await txn(p, inTopic, ['a1', 'a2'], false)
  await txn(p, inTopic, ['c4'], true)
  await p.disconnect()

  const read = await readAll(inTopic, group, false, 4)
  const admin = kafka.admin()
  await admin.connect()
  const out = read.values.map(v => v.toUpperCase())
  const offsets = [{ topic: inTopic, partitions: [{ partition: 0, offset: read.next }] }]
  const etl = transactional('kafkajs-etl')
  await etl.connect()
  await txn(etl, outTopic, out.map(v => v + '-aborted'), false, offsets)
  const afterAbort = await groupOffsets(admin)
  await txn(etl, outTopic, out, true, offsets)
  const afterCommit = await groupOffsets(admin)
  await etl.disconnect()
  await admin.disconnect()

  const fenced = await fence()
  const outCommitted = await readAll(outTopic, group + '-out-committed', false, out.length)
  const outUncommitted = await readAll(outTopic, group + '-out-uncommitted', true, 2 * out.length)
  process.stdout.write(JSON.stringify({
    read_committed: read.values,
    next_offset: Number(read.next),
    offsets_after_abort: afterAbort,
    offsets_after_commit: afterCommit,
    out_committed: outCommitted.values,
    out_uncommitted: outUncommitted.values,
    fenced_error: fenced
  }))
}

main().then(() => process.exit(0), err => {
  console.error(err && err.stack ? err.stack : err)
  process.exit(1)
})
