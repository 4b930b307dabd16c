// Jedis pub/sub, used unchanged, against the server at KEEL_ADDR (host:port):
// subscribe and psubscribe with a JedisPubSub block a thread and call its
// callbacks for confirmations and messages; unsubscribe from a callback or
// from another thread ends the loop.
package keel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisPubSub;

class PubSubTest {
    private String host;
    private int port;

    @BeforeEach
    void address() {
        String addr = System.getenv("KEEL_ADDR");
        Assumptions.assumeTrue(addr != null && !addr.isEmpty(),
                "KEEL_ADDR (host:port of the server under test) is not set");
        int colon = addr.lastIndexOf(':');
        host = addr.substring(0, colon);
        port = Integer.parseInt(addr.substring(colon + 1));
    }

    /** Records every callback as one line, and counts messages down. */
    static class Recorder extends JedisPubSub {
        final List<String> events = Collections.synchronizedList(new ArrayList<>());
        final CountDownLatch subscribed;
        final CountDownLatch messages;
        final boolean patterns;

        /** Unsubscribes itself after `stopAfter` messages. */
        Recorder(boolean patterns, int confirmations, int stopAfter) {
            this.patterns = patterns;
            this.subscribed = new CountDownLatch(confirmations);
            this.messages = new CountDownLatch(stopAfter);
        }

        @Override
        public void onSubscribe(String channel, int count) {
            events.add("subscribe " + channel + " " + count);
            subscribed.countDown();
        }

        @Override
        public void onPSubscribe(String pattern, int count) {
            events.add("psubscribe " + pattern + " " + count);
            subscribed.countDown();
        }

        @Override
        public void onMessage(String channel, String message) {
            events.add("message " + channel + " " + message);
            done();
        }

        @Override
        public void onPMessage(String pattern, String channel, String message) {
            events.add("pmessage " + pattern + " " + channel + " " + message);
            done();
        }

        @Override
        public void onUnsubscribe(String channel, int count) {
            events.add("unsubscribe " + channel + " " + count);
        }

        @Override
        public void onPUnsubscribe(String pattern, int count) {
            events.add("punsubscribe " + pattern + " " + count);
        }

        private void done() {
            messages.countDown();
            if (messages.getCount() == 0) {
                if (patterns) {
                    punsubscribe();
                } else {
                    unsubscribe();
                }
            }
        }
    }

    private Thread listen(Recorder rec, String... names) {
        Thread t = new Thread(() -> {
            try (Jedis j = new Jedis(host, port)) {
                if (rec.patterns) {
                    j.psubscribe(rec, names);
                } else {
                    j.subscribe(rec, names);
                }
            }
        });
        t.setDaemon(true);
        t.start();
        return t;
    }

    @Test
    void subscribeAndPsubscribeDeliverAndEnd() throws Exception {
        Recorder chans = new Recorder(false, 2, 3);
        Recorder pats = new Recorder(true, 1, 2);
        Thread a = listen(chans, "jnews", "jsport");
        Thread b = listen(pats, "jn*");
        assertTrue(chans.subscribed.await(5, TimeUnit.SECONDS), "channel confirmations");
        assertTrue(pats.subscribed.await(5, TimeUnit.SECONDS), "pattern confirmation");

        try (Jedis pub = new Jedis(host, port)) {
            assertEquals(2L, pub.publish("jnews", "one"));
            assertEquals(1L, pub.publish("jsport", "two"));
            assertEquals(1L, pub.publish("jnothing", "three"));
            assertEquals(0L, pub.publish("elsewhere", "x"));
            // The pattern listener unsubscribes after its second message.
            assertTrue(pats.messages.await(5, TimeUnit.SECONDS), pats.events.toString());
            b.join(5000);
            assertEquals(1L, pub.publish("jnews", "four"));
            assertTrue(chans.messages.await(5, TimeUnit.SECONDS), chans.events.toString());
            a.join(5000);
            assertTrue(!a.isAlive() && !b.isAlive(), "subscribe loops ended after unsubscribing");
            assertEquals(0L, pub.publish("jnews", "after"));
        }
        assertEquals(List.of(
                "subscribe jnews 1", "subscribe jsport 2",
                "message jnews one", "message jsport two", "message jnews four"),
                chans.events.subList(0, 5));
        // UNSUBSCRIBE without names confirms each channel, in an order Redis
        // leaves to its hash table; the counts still go down by one.
        List<String> ends = chans.events.subList(5, chans.events.size());
        assertEquals(2, ends.size(), chans.events.toString());
        assertTrue(ends.get(0).endsWith(" 1") && ends.get(1).endsWith(" 0"), ends.toString());
        List<String> names = new ArrayList<>();
        for (String e : ends) {
            names.add(e.split(" ")[0] + " " + e.split(" ")[1]);
        }
        Collections.sort(names);
        assertEquals(List.of("unsubscribe jnews", "unsubscribe jsport"), names);
        assertEquals(List.of(
                "psubscribe jn* 1",
                "pmessage jn* jnews one", "pmessage jn* jnothing three",
                "punsubscribe jn* 0"),
                pats.events);
    }

    @Test
    void unsubscribeFromAnotherThreadAndOrderPerPublisher() throws Exception {
        final int publishers = 4;
        final int per = 250;
        Recorder rec = new Recorder(false, 1, publishers * per + 1);
        Thread t = listen(rec, "jorder");
        assertTrue(rec.subscribed.await(5, TimeUnit.SECONDS));
        List<Thread> pubs = new ArrayList<>();
        for (int p = 0; p < publishers; p++) {
            final int id = p;
            Thread pt = new Thread(() -> {
                try (Jedis pub = new Jedis(host, port)) {
                    for (int i = 0; i < per; i++) {
                        pub.publish("jorder", id + ":" + i);
                    }
                }
            });
            pt.start();
            pubs.add(pt);
        }
        for (Thread pt : pubs) {
            pt.join();
        }
        // Everything sent has arrived once the count stops one short of the stop.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (rec.messages.getCount() > 1 && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertEquals(1, rec.messages.getCount(), "messages received: " + rec.events.size());
        rec.unsubscribe();
        t.join(5000);
        assertTrue(!t.isAlive(), "subscribe loop ended after unsubscribe from another thread");

        int[] last = new int[publishers];
        java.util.Arrays.fill(last, -1);
        int seen = 0;
        for (String e : rec.events) {
            if (!e.startsWith("message ")) {
                continue;
            }
            String[] parts = e.substring("message jorder ".length()).split(":");
            int p = Integer.parseInt(parts[0]);
            int i = Integer.parseInt(parts[1]);
            assertEquals(last[p] + 1, i, "publisher " + p + " out of order");
            last[p] = i;
            seen++;
        }
        assertEquals(publishers * per, seen);
    }
}
