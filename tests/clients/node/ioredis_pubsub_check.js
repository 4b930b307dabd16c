// ioredis pub/sub, used unchanged, against the server at KEEL_ADDR (host:port):
// `subscribe` and `psubscribe` resolve with the subscription count, `message`
// and `pmessage` events carry the channel (and pattern), `messageBuffer`
// carries binary payloads intact, and after `unsubscribe` the connection is a
// normal one again; in RESP3 (ioredis 6's default) a subscribed connection
// still runs other commands, in RESP2 it does not. Both protocols are
// checked. Any mismatch exits non-zero.
import Redis from 'ioredis';
import assert from 'node:assert/strict';

const addr = process.env.KEEL_ADDR;
if (!addr) {
  console.error('KEEL_ADDR (host:port of the server under test) is not set');
  process.exit(2);
}
const [host, portText] = addr.split(':');
const opts = { host, port: Number(portText), lazyConnect: true, maxRetriesPerRequest: 1 };

// Resolves with the next `count` events of `name`, or rejects after 5 s.
function next(emitter, name, count = 1) {
  return new Promise((resolve, reject) => {
    const got = [];
    const timer = setTimeout(() => {
      emitter.off(name, on);
      reject(new Error(`only ${got.length} of ${count} '${name}' events`));
    }, 5000);
    function on(...args) {
      got.push(args);
      if (got.length === count) {
        clearTimeout(timer);
        emitter.off(name, on);
        resolve(count === 1 ? got[0] : got);
      }
    }
    emitter.on(name, on);
  });
}

async function check(protocol) {
  const pub = new Redis({ ...opts, protocol });
  const sub = new Redis({ ...opts, protocol });
  await pub.connect();
  await sub.connect();
  const tag = `iops${process.pid}.${protocol}`;

  assert.equal(await sub.subscribe(`${tag}.a`, `${tag}.b`), 2);
  assert.equal(await sub.psubscribe(`${tag}.*`), 3);
  if (protocol === 3) {
    // Pushes arrive between replies, so other commands still run.
    assert.equal(await sub.get(`${tag}:missing`), null);
  } else {
    await assert.rejects(sub.get('x'), /Connection in subscriber mode|only \(P\|S\)SUBSCRIBE/);
  }

  const message = next(sub, 'message');
  const pmessage = next(sub, 'pmessage');
  assert.equal(await pub.publish(`${tag}.a`, 'hello'), 2);
  assert.deepEqual(await message, [`${tag}.a`, 'hello']);
  assert.deepEqual(await pmessage, [`${tag}.*`, `${tag}.a`, 'hello']);

  // Binary payloads arrive byte for byte.
  const payload = Buffer.from([0, 255, 13, 10, 36, 42, 128]);
  const buffered = next(sub, 'messageBuffer');
  assert.equal(await pub.publish(`${tag}.b`, payload), 2);
  const [bch, bmsg] = await buffered;
  assert.equal(bch.toString(), `${tag}.b`);
  assert.ok(Buffer.isBuffer(bmsg) && bmsg.equals(payload));

  // Only the pattern matches here.
  const ponly = next(sub, 'pmessage');
  assert.equal(await pub.publish(`${tag}.zz`, 'p'), 1);
  assert.deepEqual(await ponly, [`${tag}.*`, `${tag}.zz`, 'p']);

  // Many messages from one publisher arrive in order.
  const many = next(sub, 'message', 500);
  const sent = [];
  const pipe = pub.pipeline();
  for (let i = 0; i < 500; i++) {
    sent.push(String(i));
    pipe.publish(`${tag}.a`, String(i));
  }
  await pipe.exec();
  assert.deepEqual((await many).map(([, m]) => m), sent);

  assert.deepEqual(await pub.pubsub('NUMSUB', `${tag}.a`, `${tag}.none`), [`${tag}.a`, 1, `${tag}.none`, 0]);
  assert.equal(await pub.pubsub('NUMPAT'), 1);

  // Named: ioredis 6 in RESP3 waits forever on an UNSUBSCRIBE without names.
  assert.equal(await sub.unsubscribe(`${tag}.a`, `${tag}.b`), 1);
  assert.equal(await sub.punsubscribe(`${tag}.*`), 0);
  assert.equal(await pub.publish(`${tag}.a`, 'nobody'), 0);
  // Back to a normal connection.
  assert.equal(await sub.set(`${tag}:k`, 'v'), 'OK');
  assert.equal(await sub.get(`${tag}:k`), 'v');
  await sub.del(`${tag}:k`);
  await Promise.all([pub.quit(), sub.quit()]);
}

async function main() {
  await check(3);
  await check(2);
  console.log('ioredis pubsub: ok');
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error('ioredis pubsub: mismatch:', err);
    process.exit(1);
  },
);
