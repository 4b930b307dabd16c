// BullMQ, used unchanged, against the server at KEEL_ADDR (host:port): 10,000 jobs,
// some delayed, some failing their first attempts and retried with backoff, run by
// one Worker with several jobs in flight; then a handful that fail every attempt.
// Every job must complete exactly once with the expected result, retried jobs
// must show their attempts, delayed jobs must not start early. Any mismatch
// exits non-zero. BullMQ's queue operations are Lua scripts, so this exercises
// EVALSHA, the script cache and cmsgpack as a real user's queue does.
import { Queue, Worker, Job } from 'bullmq';

const JOBS = 10_000;
const ALWAYS_FAILING = 5;
const CONCURRENCY = 32;
const DEADLINE_MS = 110_000;

const addr = process.env.KEEL_ADDR;
if (!addr) {
  console.error('KEEL_ADDR (host:port of the server under test) is not set');
  process.exit(2);
}
const [host, portText] = addr.split(':');
const connection = { host, port: Number(portText), maxRetriesPerRequest: null };
const prefix = `keelcheck${process.pid}`;
const queueName = 'jobs';

const problems = [];
function problem(text) {
  if (problems.length < 20) console.error(`mismatch: ${text}`);
  problems.push(text);
}

// The plan for job i, decided by i alone so the check can recompute it.
function plan(i) {
  return {
    delayMs: i % 20 === 7 ? 50 + (i % 5) * 60 : 0,
    failTimes: i % 33 === 0 ? 1 + (i % 2) : 0, // fails its first one or two attempts
    exponential: i % 66 === 0,
  };
}

const queue = new Queue(queueName, { connection, prefix });
const calls = new Map(); // job id -> processor calls
const completed = new Map(); // job id -> number of 'completed' events
const results = new Map();
const failedEvents = new Map();
const startedAt = new Map();

function processor(job) {
  calls.set(job.id, (calls.get(job.id) ?? 0) + 1);
  if (!startedAt.has(job.id)) startedAt.set(job.id, Date.now());
  if (job.data.alwaysFail) throw new Error(`job ${job.data.i} always fails`);
  const p = plan(job.data.i);
  if (job.attemptsMade < p.failTimes) {
    throw new Error(`job ${job.data.i} fails attempt ${job.attemptsMade + 1}`);
  }
  return { i: job.data.i, doubled: job.data.i * 2, attempt: job.attemptsMade + 1 };
}

async function main() {
  const t0 = Date.now();
  await queue.waitUntilReady();
  const enqueuedAt = new Map();

  const batch = [];
  for (let i = 0; i < JOBS; i++) {
    const p = plan(i);
    const opts = { jobId: `job-${i}` };
    if (p.delayMs) opts.delay = p.delayMs;
    if (p.failTimes) {
      opts.attempts = 3;
      opts.backoff = p.exponential ? { type: 'exponential', delay: 20 } : { type: 'fixed', delay: 30 };
    }
    batch.push({ name: 'double', data: { i }, opts });
  }
  for (let start = 0; start < batch.length; start += 500) {
    const chunk = batch.slice(start, start + 500);
    const now = Date.now();
    const jobs = await queue.addBulk(chunk);
    for (const j of jobs) enqueuedAt.set(j.id, now);
  }
  // Adding the same job id again is a no-op in BullMQ: the job is not duplicated.
  await queue.add('double', { i: 0 }, { jobId: 'job-0' });
  for (let k = 0; k < ALWAYS_FAILING; k++) {
    await queue.add('double', { i: -1, alwaysFail: true }, {
      jobId: `doomed-${k}`, attempts: 2, backoff: { type: 'fixed', delay: 10 },
    });
  }
  const tAdded = Date.now();

  const worker = new Worker(queueName, processor, { connection, prefix, concurrency: CONCURRENCY });
  worker.on('error', (err) => problem(`worker error: ${err.message}`));
  worker.on('completed', (job, result) => {
    completed.set(job.id, (completed.get(job.id) ?? 0) + 1);
    results.set(job.id, result);
  });
  worker.on('failed', (job, err) => {
    if (job) failedEvents.set(job.id, (failedEvents.get(job.id) ?? 0) + 1);
  });

  const finished = await new Promise((resolve) => {
    const started = Date.now();
    const timer = setInterval(async () => {
      const doomedDone = [...failedEvents.keys()].filter((id) => id.startsWith('doomed-')).length;
      const doomedAttempts = [...failedEvents.entries()]
        .filter(([id]) => id.startsWith('doomed-'))
        .reduce((n, [, c]) => n + c, 0);
      if ((completed.size >= JOBS && doomedDone >= ALWAYS_FAILING && doomedAttempts >= 2 * ALWAYS_FAILING)
          || Date.now() - started > DEADLINE_MS) {
        clearInterval(timer);
        resolve(completed.size >= JOBS);
      }
    }, 50);
  });
  const tDone = Date.now();
  if (!finished) problem(`only ${completed.size} of ${JOBS} jobs completed in time`);
  // Let any duplicate completion surface before checking.
  await new Promise((r) => setTimeout(r, 200));
  await worker.close();

  for (let i = 0; i < JOBS; i++) {
    const id = `job-${i}`;
    const p = plan(i);
    const n = completed.get(id) ?? 0;
    if (n !== 1) { problem(`${id} completed ${n} times`); continue; }
    const r = results.get(id);
    if (!r || r.i !== i || r.doubled !== i * 2 || r.attempt !== p.failTimes + 1) {
      problem(`${id} result ${JSON.stringify(r)}`);
    }
    if (calls.get(id) !== p.failTimes + 1) problem(`${id} processed ${calls.get(id)} times`);
    if ((failedEvents.get(id) ?? 0) !== p.failTimes) {
      problem(`${id} failed ${failedEvents.get(id) ?? 0} times, planned ${p.failTimes}`);
    }
    if (p.delayMs && startedAt.get(id) - enqueuedAt.get(id) < p.delayMs - 5) {
      problem(`${id} started ${startedAt.get(id) - enqueuedAt.get(id)} ms after it was added, delay ${p.delayMs}`);
    }
  }

  // What the server stored about the jobs, read back through BullMQ.
  const counts = await queue.getJobCounts('completed', 'failed', 'waiting', 'active', 'delayed', 'prioritized');
  const wantCounts = { completed: JOBS, failed: ALWAYS_FAILING, waiting: 0, active: 0, delayed: 0, prioritized: 0 };
  for (const [k, v] of Object.entries(wantCounts)) {
    if (counts[k] !== v) problem(`getJobCounts ${k}=${counts[k]}, want ${v}`);
  }
  let retriedChecked = 0;
  for (let i = 0; i < JOBS; i += 33) {
    const job = await Job.fromId(queue, `job-${i}`);
    const p = plan(i);
    if (!job) { problem(`job-${i} is gone from the server`); continue; }
    if (job.attemptsMade !== p.failTimes + 1) {
      problem(`job-${i} attemptsMade=${job.attemptsMade}, want ${p.failTimes + 1}`);
    }
    if (!job.finishedOn || job.returnvalue?.doubled !== i * 2) {
      problem(`job-${i} stored finishedOn=${job.finishedOn} returnvalue=${JSON.stringify(job.returnvalue)}`);
    }
    if (p.failTimes) retriedChecked++;
  }
  for (let k = 0; k < ALWAYS_FAILING; k++) {
    const job = await Job.fromId(queue, `doomed-${k}`);
    if (!job || job.attemptsMade !== 2 || job.failedReason !== 'job -1 always fails') {
      problem(`doomed-${k}: attemptsMade=${job?.attemptsMade} failedReason=${job?.failedReason}`);
    }
    if (calls.get(`doomed-${k}`) !== 2) problem(`doomed-${k} processed ${calls.get(`doomed-${k}`)} times`);
  }

  await queue.obliterate({ force: true });
  await queue.close();

  const retried = [...Array(JOBS).keys()].filter((i) => plan(i).failTimes).length;
  const delayed = [...Array(JOBS).keys()].filter((i) => plan(i).delayMs).length;
  console.log(`bullmq: ${completed.size} jobs completed (${retried} retried, ${retriedChecked} checked on the server, `
    + `${delayed} delayed), ${ALWAYS_FAILING} failed every attempt; added in ${tAdded - t0} ms, `
    + `processed in ${tDone - tAdded} ms`);
  if (problems.length) {
    console.error(`bullmq: ${problems.length} mismatches`);
    process.exit(1);
  }
  console.log('bullmq: ok');
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error('bullmq: error:', err);
    process.exit(1);
  },
);
