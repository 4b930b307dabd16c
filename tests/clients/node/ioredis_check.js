// ioredis `defineCommand`, used unchanged, against the server at KEEL_ADDR
// (host:port): a custom command runs through EVALSHA, falls back to EVAL after
// SCRIPT FLUSH, works in pipelines and MULTI, takes a key count per call when
// none is declared, and passes a script's error reply through. Any mismatch
// exits non-zero.
import Redis from 'ioredis';
import { createHash } from 'node:crypto';
import assert from 'node:assert/strict';

const addr = process.env.KEEL_ADDR;
if (!addr) {
  console.error('KEEL_ADDR (host:port of the server under test) is not set');
  process.exit(2);
}
const [host, portText] = addr.split(':');
const redis = new Redis({ host, port: Number(portText), lazyConnect: true });

const INCR_TWICE = `
local once = redis.call('INCRBY', KEYS[1], ARGV[1])
return {once, redis.call('INCRBY', KEYS[1], ARGV[1])}`;

async function main() {
  await redis.connect();
  const prefix = `ioredischeck${process.pid}:`;
  const key = (k) => prefix + k;
  await redis.script('FLUSH');

  redis.defineCommand('incrTwice', { numberOfKeys: 1, lua: INCR_TWICE });
  redis.defineCommand('keysAndArgs', { lua: 'return {#KEYS, #ARGV, KEYS[1], ARGV[1]}' });
  redis.defineCommand('failing', { numberOfKeys: 0, lua: "return redis.error_reply('MYERR went wrong')" });

  const sha = createHash('sha1').update(INCR_TWICE).digest('hex');
  assert.deepEqual(await redis.script('EXISTS', sha), [0]);
  // First call: EVALSHA answers NOSCRIPT and ioredis retries with EVAL.
  assert.deepEqual(await redis.incrTwice(key('n'), 5), [5, 10]);
  assert.deepEqual(await redis.script('EXISTS', sha), [1]);
  assert.deepEqual(await redis.incrTwice(key('n'), 1), [11, 12]);
  await redis.script('FLUSH');
  assert.deepEqual(await redis.incrTwice(key('n'), 1), [13, 14]);
  assert.deepEqual(await redis.incrTwiceBuffer(key('n'), 1), [15, 16]);

  // Without numberOfKeys the key count is the first argument of each call.
  const [nkeys, nargs, k1, a1] = await redis.keysAndArgs(2, key('a'), key('b'), 'x', 'y', 'z');
  assert.deepEqual([nkeys, nargs, k1, a1], [2, 3, key('a'), 'x']);

  await assert.rejects(redis.failing(), (err) => err.message === 'MYERR went wrong');

  // In a pipeline after the cache was flushed: ioredis sends EVALSHA and re-sends
  // the calls that got NOSCRIPT as EVAL, so only the scripts' own results are
  // in order; with the script cached, a GET between two calls sees the first.
  await redis.script('FLUSH');
  const piped = await redis.pipeline().incrTwice(key('p'), 2).incrTwice(key('q'), 3).exec();
  assert.deepEqual(piped, [[null, [2, 4]], [null, [3, 6]]]);
  const cached = await redis.pipeline().incrTwice(key('p'), 1).get(key('p')).incrTwice(key('p'), 3).exec();
  assert.deepEqual(cached, [[null, [5, 6]], [null, '6'], [null, [9, 12]]]);
  // In MULTI ioredis does not fall back: an EVALSHA of a flushed script is queued,
  // and EXEC's reply carries its NOSCRIPT error in that command's place.
  await redis.script('FLUSH');
  const refused = await redis.multi().incrTwice(key('m'), 1).get(key('m')).exec();
  assert.equal(refused.length, 2);
  assert.match(refused[0][0]?.message ?? '', /^NOSCRIPT No matching script/);
  assert.deepEqual(refused[1], [null, null]);
  assert.deepEqual(await redis.incrTwice(key('m'), 1), [1, 2]);
  const multi = await redis.multi().incrTwice(key('m'), 1).get(key('m')).exec();
  assert.deepEqual(multi, [[null, [3, 4]], [null, '4']]);

  const keys = await redis.keys(`${prefix}*`);
  if (keys.length) await redis.del(...keys);
  console.log('ioredis defineCommand: ok');
}

main().then(
  async () => {
    await redis.quit();
    process.exit(0);
  },
  (err) => {
    console.error('ioredis defineCommand: mismatch:', err);
    process.exit(1);
  },
);
